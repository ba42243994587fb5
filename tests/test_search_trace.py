"""`prover data trace`: argument handling, and the export to LeanDojo layout from objects shaped
like lean-dojo's (TracedRepo, TracedFile, TracedTheorem, TracedTactic). Tracing itself needs Lean
and cannot run here; lean_dojo.trace and LeanGitRepo are replaced by stand-ins of the same
signatures."""
from __future__ import annotations

import json
import types

import networkx as nx
import pytest
from lean_dojo import Pos

from prover.cli import main
from prover.tracing import leandojo as trace
from prover.data.dataset import Dataset
from prover.env import leandojo_env


# -- stand-ins shaped like lean_dojo.data_extraction.traced_data ------------------------------

class Repo:
    def __init__(self, url, commit):
        self.url, self.commit = url, commit
        self.is_lean4 = url == "https://github.com/leanprover/lean4"  # lean_dojo's LEAN4_URL


class Tac:
    def __init__(self, tactic, before, after="no goals", premises=()):
        self.tactic, self.state_before, self.state_after = tactic, before, after
        self.premises = list(premises)

    def get_annotated_tactic(self):
        text = self.tactic
        for p in self.premises:
            text = text.replace(p["full_name"], f"<a>{p['full_name']}</a>")
        return text, self.premises


class Thm:
    def __init__(self, repo, path, name, start, end, tactics):
        self.repo = repo
        self.theorem = types.SimpleNamespace(file_path=path, full_name=name)
        self.start, self.end = Pos(*start), Pos(*end)
        self.tactics = tactics

    def get_traced_tactics(self, atomic_only=False):
        return self.tactics


class File:
    def __init__(self, path, premises, imports=()):
        self.path, self.premises, self.imports = path, premises, list(imports)

    def get_direct_dependencies(self, repo):  # (module, path) per import, Init included
        return [("Init", ".lake/packages/lean4/src/lean/Init.lean")] + [
            (p.removesuffix(".lean").replace("/", "."), p) for p in self.imports]

    def get_premise_definitions(self):
        return self.premises


def premise(name, line, code=None):
    return {"full_name": name, "code": code or f"theorem {name} (n : ℕ) : n = n", "start": [line, 1],
            "end": [line, 40], "kind": "commanddeclaration"}


def fake_traced_repo():
    main_repo = Repo("https://github.com/o/proj", "a" * 40)
    dep = Repo("https://github.com/leanprover-community/batteries", "b" * 40)
    files = {
        ".lake/packages/batteries/Batteries/Nat.lean": File(".lake/packages/batteries/Batteries/Nat.lean",
                                                           [premise("Nat.foo", 3)]),
        "Proj/A.lean": File("Proj/A.lean", [premise("Proj.a", 5), premise("Proj.b", 9)]),
        "Proj/B.lean": File("Proj/B.lean", [premise("Proj.c", 4)]),
    }
    g = nx.DiGraph()
    for path, f in files.items():
        g.add_node(path, traced_file=f)
    g.add_edge("Proj/B.lean", "Proj/A.lean")  # B imports A
    g.add_edge("Proj/A.lean", ".lake/packages/batteries/Batteries/Nat.lean")
    uses_a = {"full_name": "Proj.a", "def_path": "Proj/A.lean", "def_pos": [5, 1], "def_end_pos": [5, 40]}
    theorems = [
        Thm(main_repo, "Proj/B.lean", "Proj.c", (4, 1), (6, 10), [
            Tac("intro n", "⊢ ∀ n, n = n", "n : ℕ\n⊢ n = n"),
            Tac("·", "n : ℕ\n⊢ n = n", "n : ℕ\n⊢ n = n"),  # a bare focus dot: dropped
            Tac("exact Proj.a n", "n : ℕ\n⊢ n = n", premises=[uses_a]),
            Tac("rfl", "no goals"),  # on a closed goal: dropped
        ]),
        Thm(dep, "Batteries/Nat.lean", "Nat.foo", (3, 1), (3, 50), [Tac("rfl", "n : ℕ\n⊢ n = n")]),
    ] + [Thm(main_repo, "Proj/A.lean", f"Proj.t{i}", (20 + i, 1), (20 + i, 30),
             [Tac("simp", f"⊢ {i} = {i}")]) for i in range(8)]
    repo = types.SimpleNamespace(repo=main_repo, dependencies={"batteries": dep}, traced_files_graph=g,
                                 get_traced_theorems=lambda: theorems)
    return repo


def test_export_writes_a_dataset_our_reader_loads(tmp_path):
    out = tmp_path / "ds"
    meta = trace.export_dataset(fake_traced_repo(), out, n_val=2, n_test=2, seed=1)
    assert (meta["files"], meta["premises"], meta["theorems"], meta["tactics"]) == (3, 4, 10, 11)
    assert meta["splits"] == {"random": {"train": 6, "val": 2, "test": 2}}
    rows = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    # Imported files come first, as LeanDojo writes the corpus.
    assert [r["path"] for r in rows] == [".lake/packages/batteries/Batteries/Nat.lean", "Proj/A.lean",
                                         "Proj/B.lean"]
    assert rows[2]["imports"] == ["Proj/A.lean"]
    ds = Dataset(out)
    corpus = ds.corpus()
    assert len(corpus) == 4 and corpus.locate("Proj.a") is not None
    theorems = {t.full_name: t for part in ("train", "val", "test") for t in ds.theorems(f"random/{part}")}
    assert len(theorems) == 10
    c = theorems["Proj.c"]
    assert [t.tactic for t in c.traced_tactics] == ["intro n", "exact Proj.a n"]
    assert c.traced_tactics[1].premise_names() == ["Proj.a"]
    assert c.traced_tactics[1].annotated_text == "exact <a>Proj.a</a> n"
    assert (c.url, c.commit, c.start, c.end) == ("https://github.com/o/proj", "a" * 40, (4, 1), (6, 10))
    dep = theorems["Nat.foo"]
    assert dep.file_path == ".lake/packages/batteries/Batteries/Nat.lean"  # under the packages dir
    assert dep.url == "https://github.com/leanprover-community/batteries"


def test_a_theorem_of_an_unknown_repo_is_refused(tmp_path):
    repo = fake_traced_repo()
    stray = Thm(Repo("https://github.com/x/y", "c" * 40), "Y.lean", "Y.y", (1, 1), (1, 2), [])
    repo.get_traced_theorems = lambda: [stray]
    with pytest.raises(ValueError, match="neither the traced repository nor one of its dependencies"):
        trace.export_dataset(repo, tmp_path / "ds")


def test_argument_checks(tmp_path, monkeypatch):
    assert trace.check_repo("https://github.com/yangky11/miniF2F-lean4.git") == \
        "https://github.com/yangky11/miniF2F-lean4"
    assert trace.check_repo("leanprover-community/mathlib4") == "https://github.com/leanprover-community/mathlib4"
    (tmp_path / "plain").mkdir()
    with pytest.raises(trace.TraceArgumentError, match="not a git repository"):
        trace.check_repo(str(tmp_path / "plain"))
    (tmp_path / "gitrepo" / ".git").mkdir(parents=True)
    assert trace.check_repo(str(tmp_path / "gitrepo")) == str((tmp_path / "gitrepo").resolve())
    with pytest.raises(trace.TraceArgumentError, match="REPO"):
        trace.check_repo("ftp://example.org/repo")
    assert trace.check_commit("29dcec074de168ac2bf835a77ef68bbe069194c5").startswith("29dcec07")
    assert trace.check_commit("v4.9.0") == "v4.9.0"  # a tag: accepted, with a warning
    for bad in ("", "two words", "a..b"):
        with pytest.raises(trace.TraceArgumentError, match="COMMIT"):
            trace.check_commit(bad)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(trace.TraceArgumentError, match="not empty"):
        trace.check_out(tmp_path / "full")
    assert trace.check_out(tmp_path / "new") == tmp_path / "new"
    monkeypatch.setitem(__import__("sys").modules, "ray", types.SimpleNamespace(is_initialized=lambda: True))
    with pytest.raises(trace.TraceUnavailableError, match="separate command"):
        trace.check_no_ray()


def test_cli_traces_through_lean_dojo(tmp_path, monkeypatch, capsys):
    import lean_dojo
    calls = []

    class FakeLeanGitRepo:
        def __init__(self, url, commit):
            calls.append(("LeanGitRepo", url, commit))
            self.url, self.commit = url, commit

    def fake_trace(repo, dst_dir=None, build_deps=True):  # lean_dojo.trace's signature
        calls.append(("trace", type(repo).__name__, dst_dir, build_deps))
        return fake_traced_repo()

    monkeypatch.setattr(lean_dojo, "LeanGitRepo", FakeLeanGitRepo)
    monkeypatch.setattr(lean_dojo, "trace", fake_trace)
    out = tmp_path / "ds"
    monkeypatch.setattr(leandojo_env, "lean_toolchain_available", lambda: False)
    assert main(["data", "trace", "o/proj", "a" * 40, "--out", str(out)]) == 2
    assert "no Lean toolchain" in capsys.readouterr().err and calls == []
    monkeypatch.setattr(leandojo_env, "lean_toolchain_available", lambda: True)
    assert main(["data", "trace", "o/proj", "a" * 40, "--out", str(out), "--no-build-deps",
                 "--n-val", "1", "--n-test", "1"]) == 0
    assert calls == [("LeanGitRepo", "https://github.com/o/proj", "a" * 40),
                     ("trace", "FakeLeanGitRepo", None, False)]
    assert "3 files, 4 premises, 10 theorems" in capsys.readouterr().out
    assert json.loads((out / "random" / "split.json").read_text())["sizes"] == {"train": 8, "val": 1, "test": 1}
    assert main(["data", "trace", "o/proj", "a" * 40, "--out", str(out)]) == 2  # out is not empty
    assert "not empty" in capsys.readouterr().err


def test_trace_records_what_the_user_gave_and_skip_what_cannot_be_used(tmp_path, monkeypatch, capsys):
    """As lean-dojo 4.20.0 hands it back: the traced repo reloaded from its cache folder
    (`LeanGitRepo.from_path`, traced_data.py:1186), Lean-core theorems included, no file graph
    without dependencies (`traced_files_graph` is None), and a state over 50,000 characters."""
    import lean_dojo
    user_url, full = "https://github.com/o/proj", "a" * 40
    cached = Repo("/root/.cache/lean_dojo/o-proj-" + full + "/proj", full)  # not what the user gave
    lean4 = Repo("https://github.com/leanprover/lean4", "c" * 40)
    files = [File("Proj/B.lean", [premise("Proj.c", 4)], imports=["Proj/A.lean"]),
             File("Proj/A.lean", [premise("Proj.a", 5)])]
    theorems = [
        Thm(cached, "Proj/B.lean", "Proj.c", (4, 1), (6, 10), [Tac("rfl", "⊢ 1 = 1")]),
        Thm(cached, "Proj/A.lean", "Proj.long", (8, 1), (9, 10),
            [Tac("simp", "⊢ " + "x" * 60_000), Tac("rfl", "⊢ 2 = 2")]),
        Thm(lean4, "src/lean/Init/Core.lean", "Nat.core", (1, 1), (1, 9), [Tac("rfl", "⊢ 0 = 0")]),
    ] + [Thm(cached, "Proj/A.lean", f"Proj.t{i}", (20 + i, 1), (20 + i, 30), [Tac("simp", f"⊢ {i} = {i}")])
         for i in range(3)]
    traced = types.SimpleNamespace(repo=cached, dependencies={"lean4": lean4}, traced_files=files,
                                   traced_files_graph=None, get_traced_theorems=lambda: theorems)

    class FakeLeanGitRepo:  # expands a short hash, as LeanGitRepo does for a commit it can resolve
        def __init__(self, url, commit):
            assert full.startswith(commit)
            self.url, self.commit = url, full

    monkeypatch.setattr(lean_dojo, "LeanGitRepo", FakeLeanGitRepo)
    monkeypatch.setattr(lean_dojo, "trace", lambda repo, dst_dir=None, build_deps=True: traced)
    monkeypatch.setattr(leandojo_env, "lean_toolchain_available", lambda: True)
    out = tmp_path / "ds"
    assert main(["data", "trace", "o/proj", "aaaaaaa", "--out", str(out), "--no-build-deps",
                 "--n-val", "1", "--n-test", "1"]) == 0
    records = [r for part in ("train", "val", "test")
               for r in json.loads((out / "random" / f"{part}.json").read_text())]
    assert {(r["url"], r["commit"]) for r in records} == {(user_url, full)}
    assert sorted(r["full_name"] for r in records) == ["Proj.c", "Proj.long", "Proj.t0", "Proj.t1", "Proj.t2"]
    long = next(r for r in records if r["full_name"] == "Proj.long")
    assert [t["tactic"] for t in long["traced_tactics"]] == ["rfl"]  # the over-long state's tactic left out
    meta = json.loads((out / "metadata.json").read_text())
    assert (meta["url"], meta["commit"], meta["theorems"]) == (user_url, full, 5)
    assert meta["skipped"] == {"Lean-core theorems": 1, "tactics with a state over 50,000 characters": 1}
    rows = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    assert [(r["path"], r["imports"]) for r in rows] == [("Proj/A.lean", []), ("Proj/B.lean", ["Proj/A.lean"])]


def _git(cwd, *args):
    import subprocess
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_trace_preflight_says_in_one_line_what_lean_dojo_would_fail_on(tmp_path, monkeypatch, capsys):
    """Before hours of tracing: the commit is HEAD, the tree committed, the lakefile at the git
    root (issue 16, defect 5); and the network settings lean-dojo acts on are said."""
    import lean_dojo
    traced = []
    monkeypatch.setattr(lean_dojo, "LeanGitRepo", lambda url, commit: types.SimpleNamespace(url=url, commit=commit))
    monkeypatch.setattr(lean_dojo, "trace", lambda repo, dst_dir=None, build_deps=True:
                        traced.append(repo.commit) or fake_traced_repo())
    monkeypatch.setattr(leandojo_env, "lean_toolchain_available", lambda: True)
    monkeypatch.delenv("GITHUB_ACCESS_TOKEN", raising=False)
    monkeypatch.delenv("DISABLE_REMOTE_CACHE", raising=False)
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "lakefile.lean").write_text("import Lake\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "A.lean").write_text("theorem a : True := trivial\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "two")
    head = _git(repo, "rev-parse", "HEAD")

    def run(commit, out):
        code = main(["data", "trace", str(repo), commit, "--out", str(tmp_path / out), "--n-val", "1",
                     "--n-test", "1"])
        return code, capsys.readouterr()

    code, cap = run(first[:9], "a")
    assert code == 2 and f"commit {first[:9]} is not HEAD ({head[:12]}) of {repo.resolve()}" in cap.err
    (repo / "B.lean").write_text("-- new\n")
    code, cap = run(head, "b")
    assert code == 2 and "uncommitted changes in B.lean: lean-dojo traces the commit" in cap.err
    (repo / "B.lean").unlink()
    code, cap = run(head[:7], "c")
    assert code == 0 and traced == [head[:7]]
    assert "GITHUB_ACCESS_TOKEN is not set" in cap.out and "DISABLE_REMOTE_CACHE is not set" in cap.out
    assert f"{repo.resolve()} at {head[:12]}: HEAD, committed, lakefile at the root" in cap.out


def test_git_older_than_lean_dojo_needs_is_refused():
    from prover.env.preflight import PreflightError, check_git_version
    assert check_git_version("git version 2.39.2\n") == "2.39.2"
    with pytest.raises(PreflightError, match=r"^git 2\.20\.1 is too old: lean-dojo needs git 2\.25\.0"):
        check_git_version("git version 2.20.1")
