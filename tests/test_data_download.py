"""`prover data download`: against an HTTP server this test starts on 127.0.0.1, serving a small
archive in LeanDojo Benchmark 4's layout; any connection elsewhere fails the test."""
from __future__ import annotations

import hashlib
import io
import json
import socket
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from prover.cli import main
from prover.data.download import PUBLISHED
from tests.conftest import TINY_CORPUS, tactic, theorem_record


def archive_bytes(with_splits: bool = True) -> bytes:
    """leandojo_benchmark_4/{corpus.jsonl, random/*.json, metadata.json}, gzipped."""
    files = {"corpus.jsonl": "".join(json.dumps(r) + "\n" for r in TINY_CORPUS),
             "metadata.json": json.dumps({"from_repo": {"url": "https://example.org/repo", "commit": "abc"}})}
    if with_splits:
        for part, name in (("train", "t1"), ("val", "t2"), ("test", "t3")):
            record = theorem_record(name, "C.lean", [tactic("exact a1", [("a1", "A.lean")])], start=(30, 1))
            files[f"random/{part}.json"] = json.dumps([record])
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"leandojo_benchmark_4/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Handler(BaseHTTPRequestHandler):
    """GET with `Range: bytes=N-` answered 206; `server.truncate` cuts the next answer in half."""

    def do_GET(self):  # noqa: N802 - http.server's name
        data, rng = self.server.payload, self.headers.get("Range")
        self.server.asked.append(rng)
        start = int(rng.split("=")[1].split("-")[0]) if rng else 0
        if start >= len(data):
            self.send_response(416)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = data[start:]
        self.send_response(206 if rng else 200)
        self.send_header("Content-Length", str(len(body)))
        if rng:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        if self.server.truncate:
            self.server.truncate = False
            self.wfile.write(body[:len(body) // 2])
            self.close_connection = True
            return
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def loopback_only(monkeypatch):
    """Any connection to an address other than 127.0.0.1 fails the test."""
    real = socket.socket.connect

    def connect(sock, address):
        assert address[0] == "127.0.0.1", f"a test reached {address}"
        return real(sock, address)
    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture
def server(loopback_only):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.payload, srv.asked, srv.truncate = archive_bytes(), [], False
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/leandojo_benchmark_4.tar.gz"
    yield srv
    srv.shutdown()
    srv.server_close()


def run(name, out, url, md5):
    return main(["data", "download", name, "--out", str(out), "--url", url, "--md5", md5, "--no-progress"])


def test_a_broken_transfer_resumes_and_a_second_run_finds_it_done(server, tmp_path, capsys):
    md5 = hashlib.md5(server.payload).hexdigest()
    out = tmp_path / "data" / "leandojo-benchmark-4"
    server.truncate = True
    assert run("leandojo-benchmark-4", out, server.url, md5) == 2
    err = capsys.readouterr().err.strip().splitlines()
    half = (len(server.payload)) // 2
    assert len(err) == 1 and f"the transfer broke after {half:,} of {len(server.payload):,} bytes" in err[0]
    assert "run the same command again to resume" in err[0] and not out.exists()
    assert run("leandojo-benchmark-4", out, server.url, md5) == 0
    assert server.asked == [None, f"bytes={half}-"]  # the second run asked for the rest only
    said = capsys.readouterr().out
    assert "4 files, 9 premises, 3 theorems (train/val/test: random 1/1/1)" in said
    assert sorted(p.name for p in out.iterdir()) == ["corpus.jsonl", "download.json", "metadata.json", "random"]
    assert json.loads((out / "download.json").read_text())["md5"] == md5
    assert not (tmp_path / "data" / "leandojo-benchmark-4.partial").exists()
    assert main(["data", "stats", "--data", str(out)]) == 0  # the layout the other commands read
    capsys.readouterr()
    assert run("leandojo-benchmark-4", out, server.url, md5) == 0
    assert "already in" in capsys.readouterr().out and len(server.asked) == 2  # nothing fetched


def test_a_wrong_checksum_is_refused_and_nothing_is_kept(server, tmp_path, capsys):
    out = tmp_path / "lb4"
    assert run("leandojo-benchmark-4", out, server.url, "0" * 32) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "checksum mismatch" in err[0] and hashlib.md5(server.payload).hexdigest() in err[0]
    assert not out.exists() and list((tmp_path / "lb4.partial").iterdir()) == []


def test_an_archive_without_splits_is_not_unpacked_as_a_dataset(server, tmp_path, capsys):
    server.payload = archive_bytes(with_splits=False)
    out = tmp_path / "lb4"
    assert run("leandojo-benchmark-4", out, server.url, hashlib.md5(server.payload).hexdigest()) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no split folder" in err[0] and not out.exists()


def test_the_published_archive_is_zenodos_record_of_the_real_records_version():
    """Record 12740403: Mathlib 29dcec07, the commit of leandojo-real; the MD5 ReProver's
    scripts/download_data.py checks it by (lean-dojo/ReProver e2ec3fd)."""
    pub = PUBLISHED["leandojo-benchmark-4"]
    assert pub.url.startswith("https://zenodo.org/records/12740403/files/leandojo_benchmark_4.tar.gz")
    assert pub.md5 == "25e1ee60cd8925b9d2e8673ddcc34b4c" and pub.folder == "leandojo_benchmark_4"


def test_unknown_dataset_and_foreign_folder_are_one_line(tmp_path, capsys, loopback_only):
    with pytest.raises(SystemExit):
        main(["data", "download", "mathlib-src", "--out", str(tmp_path / "x")])
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    assert run("leandojo-benchmark-4", tmp_path / "mine", "http://127.0.0.1:9/x.tar.gz", "0" * 32) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "exists and is not this download" in err[-1] and (tmp_path / "mine" / "notes.txt").exists()



