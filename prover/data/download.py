"""`prover data download NAME --out DIR`: a published dataset, fetched, checked and unpacked.

LeanDojo Benchmark 4 is published by its authors on Zenodo; the version our real records come
from (Mathlib 29dcec07, traced with Lean v4.10.0-rc1) is record 12740403, whose archive
ReProver's own `scripts/download_data.py` (lean-dojo/ReProver at e2ec3fd) fetches and checks
by its MD5. What a run does:

- the archive goes to `DIR.partial/` first; a transfer that breaks keeps what came, and the
  next run asks for the rest (an HTTP `Range` request; a server that answers with the whole
  file instead is read from the start again);
- the whole archive is checked against the MD5; a mismatch removes it (a next run starts over);
- the archive is unpacked there (members outside the folder refused), and its dataset folder
  moved to `DIR` in one rename, with `download.json` saying where it came from: a folder at
  `DIR` is always a whole dataset, and a run that finds one with the same checksum is done.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prover.data.errors import UserInputError

log = logging.getLogger(__name__)

CHUNK = 1 << 20
RECORD_FILE = "download.json"


@dataclass(frozen=True)
class Published:
    """A dataset archive where its authors publish it."""

    url: str
    md5: str
    folder: str  # the dataset folder inside the archive
    page: str  # where a person reads about it


PUBLISHED = {
    "leandojo-benchmark-4": Published(
        url="https://zenodo.org/records/12740403/files/leandojo_benchmark_4.tar.gz?download=1",
        md5="25e1ee60cd8925b9d2e8673ddcc34b4c",
        folder="leandojo_benchmark_4",
        page="https://zenodo.org/records/12740403"),
}


class DownloadError(UserInputError):
    """A transfer that broke or an archive that does not check out, said in one line."""


def md5_of(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def fetch(url: str, part: Path, timeout: float = 60.0, progress: Callable[[int, int | None], None] | None = None) -> None:
    """Bring `url` into `part`, after the bytes `part` already holds (HTTP Range). Raises
    DownloadError when the transfer stops early; what came is kept for the next run."""
    import urllib.error
    import urllib.request
    from http.client import HTTPException  # imported here: the CLI's start does not pay for them
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        resp = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing after what we have: the file is whole
            return
        raise DownloadError(f"{url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        raise DownloadError(f"{url}: cannot connect ({getattr(e, 'reason', e)}); run the same command "
                            f"again to resume") from None
    with resp:
        resumed = resp.status == 206
        if have and not resumed:
            log.info("the server sent the whole file, not the rest: reading it from the start")
            have = 0
        length = resp.headers.get("Content-Length")
        total = have + int(length) if length is not None else None
        got = have
        try:
            with open(part, "ab" if resumed else "wb") as f:
                while block := resp.read(CHUNK):
                    f.write(block)
                    got += len(block)
                    if progress:
                        progress(got, total)
        except (HTTPException, OSError) as e:
            raise DownloadError(f"{url}: the transfer broke after {got:,} of {total or '?'} bytes "
                                f"({type(e).__name__}); run the same command again to resume") from None
    if total is not None and got < total:
        raise DownloadError(f"{url}: the transfer broke after {got:,} of {total:,} bytes; run the same "
                            f"command again to resume")


def _unpack(archive: Path, into: Path) -> None:
    """Unpack a tar archive, refusing members that would land outside `into` or are links."""
    import tarfile
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
            return
        root = into.resolve()
        for m in tar.getmembers():
            target = (into / m.name).resolve()
            if not (target == root or root in target.parents) or m.issym() or m.islnk():
                raise DownloadError(f"{archive}: member {m.name!r} would land outside the folder; not unpacked")
        tar.extractall(into)


def done(out: Path, md5: str) -> bool:
    """`out` holds the dataset of the archive with this checksum (a run before finished)."""
    record = out / RECORD_FILE
    if not record.is_file():
        return False
    try:
        return json.loads(record.read_text()).get("md5") == md5
    except (OSError, json.JSONDecodeError):
        return False


def download(name: str, out: str | Path, url: str | None = None, md5: str | None = None,
             progress: Callable[[int, int | None], None] | None = None,
             check: Callable[[Path], None] | None = None) -> tuple[Path, bool]:
    """The dataset `name` unpacked into `out`; (out, True) when a run before had done it.
    `url` and `md5` replace the published ones (a mirror); `check` is called on the unpacked
    folder before it becomes `out` (raising keeps it out)."""
    if name not in PUBLISHED:
        raise DownloadError(f"unknown dataset {name!r}: expected one of {', '.join(PUBLISHED)}")
    pub = PUBLISHED[name]
    url, md5 = url or pub.url, (md5 or pub.md5).lower()
    out = Path(out).expanduser()
    if done(out, md5):
        return out, True
    if out.exists() and any(out.iterdir()):
        raise DownloadError(f"{out} exists and is not this download (no {RECORD_FILE} with its checksum): "
                            f"give another --out, or remove it")
    staging = out.with_name(out.name + ".partial")
    staging.mkdir(parents=True, exist_ok=True)
    part = staging / (pub.folder + ".tar.gz")
    fetch(url, part, progress=progress)
    got = md5_of(part)
    if got != md5:
        part.unlink()
        raise DownloadError(f"{url}: checksum mismatch (MD5 {got}, expected {md5}); the file was removed, "
                            f"run the same command again to fetch it anew")
    unpacked = staging / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    import tarfile
    try:
        _unpack(part, unpacked)
    except (tarfile.TarError, OSError) as e:
        raise DownloadError(f"{part}: cannot unpack ({e})") from None
    folder = unpacked / pub.folder
    if not folder.is_dir():
        found = sorted(p.name for p in unpacked.iterdir())
        raise DownloadError(f"{url}: the archive has no {pub.folder}/ folder (it holds {', '.join(found) or 'nothing'})")
    if check is not None:
        check(folder)
    (folder / RECORD_FILE).write_text(json.dumps({"name": name, "url": url, "md5": md5, "page": pub.page}, indent=2))
    if out.exists():
        out.rmdir()  # empty (checked above)
    out.parent.mkdir(parents=True, exist_ok=True)
    os.replace(folder, out)
    shutil.rmtree(staging, ignore_errors=True)
    return out, False


__all__ = ["PUBLISHED", "Published", "DownloadError", "download", "fetch", "md5_of", "done"]
