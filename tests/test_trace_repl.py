"""`prover data trace PROJECT --backend repl`: LeanDojo records from the Lean REPL's FileCommand answers.

The answers are the real REPL's, recorded in its own test suite (`lean-repl/<version>/test/*.expected.out`),
fed through `run_file` fakes for project files whose text is the transcript's `.lean` file (or, where a
transcript ran a command, the command's text). Where a shape no transcript has is needed (nested blocks,
`<;>`), the answer is built here from positions found in the file's text, and says so.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

from prover.cli import main
from prover.tracing import repl as trace_repl
from prover.data.corpus import Corpus
from prover.data.lean_decls import Declaration, LeanFile
from prover.data.theorem import load_theorems
from prover.tracing.repl import (
    NO_GOALS, PremiseIndex, annotate, file_records, fix_indentation, parse_steps, premise_index,
    proof_steps, trace_project_repl,
)
from tests.conftest import DATA_ROOT, REPO, require, write_jsonl
from tests.fake_repl.replay_repl import read_objects

REPL = DATA_ROOT / "lean-repl"


def answers(name: str, version: str = "v4.24.0") -> list[dict]:
    """The real REPL's answers of one transcript, in order (JSON objects separated by blank
    lines; some hold raw control characters, which the REPL's reader accepts)."""
    return read_objects(require(REPL / version / "test" / f"{name}.expected.out").read_text(encoding="utf-8"))


def requests(name: str, version: str = "v4.24.0") -> list[dict]:
    text = require(REPL / version / "test" / f"{name}.in").read_text(encoding="utf-8")
    return [json.loads(chunk) for chunk in re.split(r"\n\s*\n", text) if chunk.strip()]


def lean(name: str, version: str = "v4.24.0") -> str:
    return require(REPL / version / "test" / f"{name}.lean").read_text(encoding="utf-8")


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


class FakeRepl:
    """`run_file`: the recorded answer for each file (by path relative to the project); an
    exception instance is raised instead, as a REPL that died."""

    def __init__(self, root: Path, by_file: dict[str, dict | Exception]) -> None:
        self.root, self.by_file, self.calls = root, by_file, []

    def __call__(self, path: Path) -> dict:
        rel = path.relative_to(self.root).as_posix()
        self.calls.append(rel)
        answer = self.by_file[rel]
        if isinstance(answer, Exception):
            raise answer
        return answer


def split_records(out: Path) -> dict[str, dict]:
    return {f"{r['file_path']}:{r['full_name']}": r for part in ("train", "val", "test")
            for r in json.loads((out / "random" / f"{part}.json").read_text(encoding="utf-8"))}


# ---------------------------------------------------------------------------------------
# Whole files, real answers.

def test_file_answers_become_leandojo_records(tmp_path):
    """file.lean and file2.lean (v4.24.0, allTactics): names, positions, states, premises."""
    assert requests("file2")[0] == {"path": "test/file2.lean", "allTactics": True}
    root = project(tmp_path, {"Test/File.lean": lean("file"), "Test/File2.lean": lean("file2"),
                              "lakefile.lean": "import Lake\n"})
    repl = FakeRepl(root, {"Test/File.lean": answers("file")[0], "Test/File2.lean": answers("file2")[0]})
    out = tmp_path / "ds"
    meta = trace_project_repl(root, out, repl, url="https://github.com/o/p", commit="c" * 40,
                              n_val=1, n_test=1, progress=False)
    assert sorted(repl.calls) == ["Test/File.lean", "Test/File2.lean"]  # not lakefile.lean
    recs = split_records(out)
    assert sorted(recs) == ["Test/File.lean:h", "Test/File2.lean:h", "Test/File2.lean:h1"]
    h = recs["Test/File2.lean:h"]
    assert (h["url"], h["commit"], h["start"], h["end"]) == ("https://github.com/o/p", "c" * 40, [6, 1], [7, 41])
    [tac] = h["traced_tactics"]
    assert tac["tactic"] == "rw [Nat.add_assoc, Nat.add_comm y, h1]"
    assert tac["state_before"] == "x y z : Nat\n⊢ x + y + (z + a) = x + (z + b + y)"
    assert tac["state_after"] == NO_GOALS  # the last tactic of the proof
    # usedConstants a, b, h1 are the project's; only h1 is named in the text. Nat.* are not in
    # any corpus here: not annotated.
    assert tac["annotated_tactic"] == ["rw [Nat.add_assoc, Nat.add_comm y, <a>h1</a>]", [
        {"full_name": "h1", "def_path": "Test/File2.lean", "def_pos": [4, 9], "def_end_pos": [4, 11]}]]
    assert recs["Test/File2.lean:h1"]["traced_tactics"] == []  # a term proof: a record, no tactics
    assert recs["Test/File2.lean:h1"]["start"] == [4, 1] and recs["Test/File2.lean:h1"]["end"] == [4, 26]
    [exact] = recs["Test/File.lean:h"]["traced_tactics"]
    assert (exact["tactic"], exact["state_before"], exact["annotated_tactic"]) == ("exact rfl", "⊢ f + g = 39",
                                                                                 ["exact rfl", []])
    assert (meta["backend"], meta["theorems"], meta["tactics"], meta["files"], meta["premises"]) == ("repl", 3, 2, 2, 7)
    assert meta["files_failed"] == [] and meta["files_without_tactics"] == [] and meta["skipped"] == {}
    # File.lean used f, g; File2.lean a, b, h1: 5 in the corpus, 1 named in the text.
    assert meta["premise_links"] == {"used_constants": 21, "used_in_corpus": 5, "annotated": 1,
                                     "used_in_corpus_not_named": 4}
    assert meta["splits"] == {"random": {"train": 1, "val": 1, "test": 1}}
    assert set(meta["approximations"]) >= {"theorems", "nesting", "state_after", "premises"}
    on_disk = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert on_disk["approximations"] == trace_repl.APPROXIMATIONS and on_disk["theorems"] == 3
    # What we wrote is what the pipeline reads.
    corpus = Corpus.load(out / "corpus.jsonl")
    assert corpus.files == ["Test/File.lean", "Test/File2.lean"]
    assert [p.full_name for p in corpus.premises_of("Test/File2.lean")] == ["a", "b", "h1", "h"]
    h1 = corpus.premises[corpus.locate("h1", "Test/File2.lean")]
    assert (h1.code, h1.start, h1.end, h1.kind) == ("theorem h1 : a = b", (4, 1), (4, 26), "theorem")
    loaded = [t for part in ("train", "val", "test") for t in load_theorems(out / "random" / f"{part}.json")]
    thm = next(t for t in loaded if t.file_path == "Test/File2.lean" and t.full_name == "h")
    assert thm.traced_tactics[0].premise_names() == ["h1"]
    assert corpus.accessible_mask(thm.file_path, thm.start)[corpus.locate("h1", "Test/File2.lean")]


def test_corpus_resolves_library_names_and_brings_the_imported_files(tmp_path):
    """--corpus: Nat.add_assoc and Nat.add_comm resolve to a library corpus; the library files
    the project imports (transitively) come first in corpus.jsonl, the others do not."""
    lib = write_jsonl(tmp_path / "lib" / "corpus.jsonl", [
        {"path": "Lib/Base.lean", "imports": [], "premises": [
            {"full_name": "Nat.add_assoc", "code": "theorem Nat.add_assoc (n m k : Nat) : n + m + k = n + (m + k)",
             "start": [10, 1], "end": [11, 20], "kind": "theorem"}]},
        {"path": "Lib/Nat.lean", "imports": ["Lib/Base.lean"], "premises": [
            {"full_name": "Nat.add_comm", "code": "theorem Nat.add_comm (n m : Nat) : n + m = m + n",
             "start": [3, 1], "end": [4, 9], "kind": "theorem"}]},
        {"path": "Lib/Other.lean", "imports": [], "premises": [
            {"full_name": "Other.x", "code": "def Other.x : Nat := 1", "start": [1, 1], "end": [1, 22], "kind": "def"}]},
    ])
    root = project(tmp_path, {"File2.lean": lean("file2"), "Uses.lean": "import Lib.Nat\nimport File2\n\ndef c : Nat := 1\n"})
    out = tmp_path / "ds"
    meta = trace_project_repl(root, out, FakeRepl(root, {"File2.lean": answers("file2")[0]}),
                              corpus=trace_repl.load_corpus(tmp_path / "lib"), progress=False)
    [h] = [r for r in split_records(out).values() if r["full_name"] == "h"]
    assert h["traced_tactics"][0]["annotated_tactic"] == [
        "rw [<a>Nat.add_assoc</a>, <a>Nat.add_comm</a> y, <a>h1</a>]",
        [{"full_name": "Nat.add_assoc", "def_path": "Lib/Base.lean", "def_pos": [10, 1], "def_end_pos": [11, 20]},
         {"full_name": "Nat.add_comm", "def_path": "Lib/Nat.lean", "def_pos": [3, 1], "def_end_pos": [4, 9]},
         {"full_name": "h1", "def_path": "File2.lean", "def_pos": [4, 9], "def_end_pos": [4, 11]}]]
    rows = [json.loads(line) for line in (out / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["path"], r["imports"]) for r in rows] == [
        ("Lib/Base.lean", []), ("Lib/Nat.lean", ["Lib/Base.lean"]), ("File2.lean", []),
        ("Uses.lean", ["Lib/Nat.lean", "File2.lean"])]
    assert (meta["premises_from_corpus"], meta["premises_project"], meta["corpus"]) == (2, 5, str(tmp_path / "lib"))
    assert meta["files_run"] == 1  # Uses.lean has no theorem: not sent to the REPL
    corpus = Corpus.load(out / "corpus.jsonl")
    assert corpus.unknown_imports == 0 and len(corpus) == 7


def test_old_repl_without_used_constants_resolves_names_in_the_text(tmp_path):
    """The v4.10.0-rc1 REPL (LeanDojo Benchmark 4's toolchain) sends no usedConstants: names
    in the text are looked up as written (here `rfl`, in a library corpus)."""
    [answer] = answers("file", "v4.10.0-rc1")
    assert "usedConstants" not in answer["tactics"][0]
    write_jsonl(tmp_path / "lib" / "corpus.jsonl", [{"path": "Init/Prelude.lean", "imports": [], "premises": [
        {"full_name": "rfl", "code": "theorem rfl {a : α} : a = a", "start": [294, 1], "end": [294, 40],
         "kind": "theorem"}]}])
    root = project(tmp_path, {"File.lean": lean("file", "v4.10.0-rc1")})
    out = tmp_path / "ds"
    trace_project_repl(root, out, FakeRepl(root, {"File.lean": answer}), n_val=0, n_test=0,
                       corpus=trace_repl.load_corpus(tmp_path / "lib" / "corpus.jsonl"), progress=False)
    [tac] = split_records(out)["File.lean:h"]["traced_tactics"]
    assert tac["annotated_tactic"] == ["exact <a>rfl</a>", [
        {"full_name": "rfl", "def_path": "Init/Prelude.lean", "def_pos": [294, 1], "def_end_pos": [294, 40]}]]
    assert tac["state_before"] == "⊢ f + g = 39"


def test_failures_are_recorded_and_the_run_goes_on(tmp_path):
    """A REPL error answer, a REPL that died, a file with an error, a file with a sorry and an
    answer without tactics: each recorded in metadata, none fatal."""
    with_error = requests("self_proof_check")[0]["cmd"]  # `theorem ex : False := by exact?`
    with_sorry = requests("self_proof_check")[5]  # the same with `sorry`, allTactics
    assert with_sorry["allTactics"] is True
    root = project(tmp_path, {
        "A/File.lean": lean("file"), "A/Unknown.lean": lean("file2"), "A/Died.lean": "theorem d : True := trivial\n",
        "A/Error.lean": with_error, "A/Sorry.lean": with_sorry["cmd"],
        "A/FileEnv.lean": lean("Mathlib/test/file_env"),
    })
    repl = FakeRepl(root, {
        "A/File.lean": answers("file")[0],
        "A/Unknown.lean": answers("unknown_environment")[0],  # {"message": "Unknown environment."}
        "A/Died.lean": ConnectionAbortedError("the REPL closed its output"),
        "A/Error.lean": answers("self_proof_check")[0],
        "A/Sorry.lean": answers("self_proof_check")[5],
        "A/FileEnv.lean": answers("Mathlib/test/file_env")[1],  # run without allTactics: no tactics
    })
    out = tmp_path / "ds"
    meta = trace_project_repl(root, out, repl, n_val=0, n_test=0, progress=False)
    assert len(repl.calls) == 6
    assert meta["files_failed"] == [
        {"path": "A/Died.lean", "message": "ConnectionAbortedError: the REPL closed its output"},
        {"path": "A/Unknown.lean", "message": "Unknown environment."}]
    assert meta["files_with_errors"] == [{"path": "A/Error.lean", "errors": 1, "first":
                                          "`exact?` could not close the goal. Try `apply?` to see partial suggestions."}]
    assert meta["files_without_tactics"] == ["A/Error.lean", "A/FileEnv.lean"]
    assert meta["skipped"] == {trace_repl.SKIP_FAILED_FILE: 3, trace_repl.SKIP_ERROR: 1, trace_repl.SKIP_SORRY: 2}
    assert list(split_records(out)) == ["A/File.lean:h"] and meta["theorems"] == 1
    # The project's premises are all in the corpus, failed files' included: they are source facts.
    assert meta["files"] == 6 and "A/Unknown.lean" in Corpus.load(out / "corpus.jsonl").files


def test_a_repl_that_answers_nothing_stops_the_run(tmp_path):
    """The first files all raise (the REPL does not start, the project is not built): the run
    stops there with one error instead of failing every file for hours."""
    from prover.tracing.leandojo import TraceUnavailableError
    root = project(tmp_path, {f"F{i}.lean": f"theorem t{i} : True := trivial\n" for i in range(5)})
    repl = FakeRepl(root, {f"F{i}.lean": ChildProcessError("lake: unknown executable repl") for i in range(5)})
    with pytest.raises(TraceUnavailableError, match="answered none of the first 3 files .*F2.lean: "
                       "ChildProcessError: lake: unknown executable repl"):
        trace_project_repl(root, tmp_path / "ds", repl, progress=False)
    assert repl.calls == ["F0.lean", "F1.lean", "F2.lean"] and not (tmp_path / "ds").exists()


def test_split_counts_larger_than_the_theorems_are_cut_down(tmp_path):
    root = project(tmp_path, {"File2.lean": lean("file2")})
    meta = trace_project_repl(root, tmp_path / "ds", FakeRepl(root, {"File2.lean": answers("file2")[0]}),
                              n_val=2, n_test=2, progress=False)
    assert meta["splits"] == {"random": {"train": 0, "val": 2, "test": 0}}


def test_a_by_proof_without_tactics_in_the_answer_is_left_out(tmp_path):
    """file_env.lean's answer (a command without allTactics) has no tactics: a `by` proof
    without tactics would be a wrong record, so it is left out; a term proof stays."""
    text = lean("file") + "\ntheorem k : True := trivial\n"
    f = LeanFile.scan(text, "F.lean")
    skipped, stats = Counter(), Counter()
    result = file_records(f, answers("file_env")[2], premise_index([f], None), ("u", "c"), skipped, stats)
    assert [r["full_name"] for r in result.records] == ["k"] and not result.has_tactics
    assert skipped == {trace_repl.SKIP_NO_TACTICS: 1}


# ---------------------------------------------------------------------------------------
# Tactics of one proof: nesting and state_after.

def test_calc_nested_tactics_and_no_goals_nodes():
    """calc.expected.out: the calc, a node of its steps run on no goals (dropped, as LeanDojo),
    and the two nested `sorry`s, each the last of its own `by` block."""
    text = requests("calc")[0]["cmd"]
    f = LeanFile.scan(text, "Calc.lean")
    skipped = Counter()
    steps = proof_steps(parse_steps(f, answers("calc")[0], skipped), f.code, skipped)
    assert [(f.text[s.start:s.end], s.goals, s.state_after) for s in steps] == [
        ("calc\n  3 = 4 := by sorry\n  4 = 5 := by sorry", "⊢ 3 = 5", NO_GOALS),
        ("sorry", "⊢ 3 = 4", NO_GOALS), ("sorry", "⊢ 4 = 5", NO_GOALS)]
    assert skipped == {trace_repl.SKIP_NO_GOALS: 1}


def test_a_semicolon_continues_the_block():
    """all_tactics.expected.out: `have t := 37; exact t`, the state after `have` is the one before `exact`."""
    text = requests("all_tactics")[0]["cmd"]
    f = LeanFile.scan(text, "All.lean")
    skipped = Counter()
    steps = proof_steps(parse_steps(f, answers("all_tactics")[0], skipped), f.code, skipped)
    assert [(s.goals, s.state_after) for s in steps] == [("⊢ Nat", "t : Nat\n⊢ Nat"), ("t : Nat\n⊢ Nat", NO_GOALS)]
    assert [s.used for s in steps] == [{"instOfNatNat", "Nat", "OfNat.ofNat"}, set()]


NESTED = """namespace Demo

theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q ∧ p := by
  constructor
  · exact hp
  · constructor
    · exact hq
    · have h : p := by
        exact hp
      exact h

theorem u (p : Prop) (hp : p) : p ∧ p := by
  constructor <;> exact hp

end Demo
"""


def _tactic(f: LeanFile, snippet: str, goals: str, nth: int = 0, used: tuple = ()) -> dict:
    """A REPL tactic entry for the nth occurrence of `snippet` (its positions as the REPL's)."""
    i = -1
    for _ in range(nth + 1):
        i = f.text.index(snippet, i + 1)
    (line, col), (eline, ecol) = f.position(i), f.position(i + len(snippet))
    return {"usedConstants": list(used), "tactic": snippet, "proofState": 0, "goals": goals,
            "pos": {"line": line, "column": col}, "endPos": {"line": eline, "column": ecol}}


def test_nested_blocks_bullets_and_then_follow_leandojo():
    """A shape no transcript has (built here in the REPL's format, in its info-tree order: the
    `have`'s nested block comes last): every level kept; `·` blocks' goals after the tactic
    before them; `t <;> s` one tactic with s's runs dropped."""
    f = LeanFile.scan(NESTED, "Demo.lean")
    have = "have h : p := by\n        exact hp"
    answer = {"tactics": [
        _tactic(f, "constructor", "G0"), _tactic(f, "exact hp", "G1", used=("hp",)),
        _tactic(f, "constructor", "G2", 1), _tactic(f, "exact hq", "G3"), _tactic(f, have, "G4"),
        _tactic(f, "exact h\n", "G5"), _tactic(f, "exact hp", "G6", 1),
        _tactic(f, "constructor", "U0", 2, used=("And.intro",)), _tactic(f, "exact hp", "U1", 2),
        _tactic(f, "exact hp", "U2", 2)], "env": 0}
    skipped = Counter()
    result = file_records(f, answer, premise_index([f], None), ("u", "c"), skipped, Counter())
    t, u = result.records
    assert (t["full_name"], u["full_name"], t["start"], u["end"]) == ("Demo.t", "Demo.u", [3, 1], [13, 27])
    assert [(x["tactic"], x["state_before"], x["state_after"]) for x in t["traced_tactics"]] == [
        ("constructor", "G0", "G1\n\nG2"),  # the goals the two `·` blocks focus
        ("exact hp", "G1", NO_GOALS),
        ("constructor", "G2", "G3\n\nG4"),
        ("exact hq", "G3", NO_GOALS),
        ("have h : p := by\n  exact hp", "G4", "G5"),  # later lines lose the first's indentation
        ("exact h", "G5", NO_GOALS),
        ("exact hp", "G6", NO_GOALS)]
    assert [(x["tactic"], x["state_before"], x["state_after"]) for x in u["traced_tactics"]] == [
        ("constructor <;> exact hp", "U0", NO_GOALS)]
    assert skipped == {trace_repl.SKIP_THEN: 2}


def test_fix_indentation_is_leandojos():
    """LeanDojo's tactic vs its annotated (raw) text, leandojo-sample: the indentation of the
    tactic's first line comes off the later ones."""
    sample = json.loads(require(DATA_ROOT / "leandojo-sample" / "test.json").read_text(encoding="utf-8"))
    multi = [t for r in sample for t in r["traced_tactics"] if "\n" in t["tactic"]]
    assert len(multi) == 2
    for t in multi:
        raw = re.sub(r"</?a>", "", t["annotated_tactic"][0])
        assert fix_indentation(raw, 2) == t["tactic"]


def test_annotations_match_leandojos_on_real_records():
    """Given the constants a tactic used, the annotation rule reproduces LeanDojo's own on its
    real records (leandojo-sample + mathlib-src/leandojo-real): namespaces opened, `_root_.`,
    `@`, `foo.2`, `(..).le`, `.2.trans`, repeated names. One known miss: LeanDojo leaves some
    `induction ... with | succ` case tags unannotated, others not."""
    records = json.loads(require(DATA_ROOT / "leandojo-sample" / "test.json").read_text(encoding="utf-8"))
    records += json.loads(require(DATA_ROOT / "mathlib-src" / "leandojo-real" / "val.json").read_text(encoding="utf-8"))
    same = total = 0
    for r in records:
        parts = r["full_name"].split(".")[:-1]
        decl = Declaration("theorem", r["full_name"], 0, 0, 0, 0, 0,
                           tuple(".".join(parts[:k]) for k in range(1, len(parts) + 1)))
        for t in r["traced_tactics"]:
            text, prems = t["annotated_tactic"]
            index = PremiseIndex({p["full_name"]: [(p["def_path"], p["def_pos"], p["def_end_pos"])] for p in prems})
            mine = annotate(re.sub(r"</?a>", "", text), {p["full_name"] for p in prems}, decl, index, Counter())
            total += 1
            same += mine == (text, prems)
    assert total == 770 and same == 769


def test_declaration_scan_names_and_spans():
    text = ("import Mathlib.Data.Nat.Basic\n\nnamespace A.B\nopen Nat\n\n/-- doc -/\n@[simp] theorem foo (x : Nat) : "
            "x = x := by\n  rfl\n\nstructure S where\n  mk' ::\n  x y : Nat\n\ninductive T where\n  | a\n  | b (n : Nat)\n"
            "deriving instance Repr for T\ninstance : Inhabited T := ⟨.a⟩\nend A.B\n\nlemma _root_.bar.{u} : True := trivial\n"
            "example : True := trivial\n")
    f = LeanFile.scan(text, "X.lean")
    assert f.imports == ["Mathlib.Data.Nat.Basic"]
    assert [(d.kind, d.name) for d in f.declarations] == [
        ("theorem", "A.B.foo"), ("structure", "A.B.S"), ("ctor", "A.B.S.mk'"), ("field", "A.B.S.x"),
        ("field", "A.B.S.y"), ("inductive", "A.B.T"), ("ctor", "A.B.T.a"), ("ctor", "A.B.T.b"),
        ("instance", None), ("lemma", "bar"), ("example", None)]
    foo = f.declarations[0]
    assert f.leandojo_pos(foo.start) == [7, 9] and f.leandojo_pos(foo.end) == [8, 6]  # the keyword .. `rfl`
    assert text[foo.name_start:foo.name_end] == "foo" and foo.opens == ("Nat",) and foo.namespaces == ("A", "A.B")
    assert [d.name for d in f.theorems()] == ["A.B.foo", "bar"]


# ---------------------------------------------------------------------------------------
# The command.

def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_cli_repl_backend(tmp_path, monkeypatch, capsys):
    """`prover data trace PROJECT --backend repl --out DIR`: the commit is the folder's HEAD and
    the URL its GitHub remote; the REPL is the one `open_runner` opens (a fake here)."""
    root = project(tmp_path, {"P/File.lean": lean("file"), "P/File2.lean": lean("file2")})
    _git(root, "init", "-q")
    _git(root, "remote", "add", "origin", "git@github.com:o/p.git")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "x")
    head = _git(root, "rev-parse", "HEAD")
    opened = []

    @contextmanager
    def fake_runner(project_dir, settings=None):
        opened.append(project_dir)
        yield FakeRepl(project_dir, {"P/File.lean": answers("file")[0], "P/File2.lean": answers("file2")[0]})

    monkeypatch.setattr(trace_repl, "open_runner", fake_runner)
    out = tmp_path / "ds"
    assert main(["data", "trace", str(root), "--backend", "repl", "--out", str(out), "--n-val", "1",
                 "--n-test", "1"]) == 0
    assert opened == [root.resolve()]
    assert f"https://github.com/o/p@{head}: 2 files, 7 premises, 3 theorems" in capsys.readouterr().out
    meta = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert (meta["backend"], meta["url"], meta["commit"]) == ("repl", "https://github.com/o/p", head)
    assert {r["commit"] for r in split_records(out).values()} == {head}
    # A commit given is the one recorded; --out must be new.
    assert main(["data", "trace", str(root), "v1", "--backend", "repl", "--out", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["data", "trace", str(root), "v1", "--backend", "repl", "--out", str(tmp_path / "ds2")]) == 0
    assert json.loads((tmp_path / "ds2" / "metadata.json").read_text())["commit"] == "v1"


def test_cli_repl_backend_errors(tmp_path, monkeypatch, capsys):
    from prover.env import leandojo_env
    assert main(["data", "trace", "o/proj", "--out", str(tmp_path / "a")]) == 2  # leandojo needs COMMIT
    assert "COMMIT is required with --backend leandojo" in capsys.readouterr().err
    assert main(["data", "trace", str(tmp_path / "missing"), "--backend", "repl", "--out", str(tmp_path / "b")]) == 2
    assert "not a folder" in capsys.readouterr().err
    root = project(tmp_path, {"File.lean": lean("file")})
    monkeypatch.setattr(leandojo_env, "lean_toolchain_available", lambda *a, **k: False)
    assert main(["data", "trace", str(root), "--backend", "repl", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("error: --backend repl ") and ("no Lean toolchain" in err or "open_file_runner" in err)
    assert not (tmp_path / "c").exists()


def test_trace_through_the_real_session_on_the_fake_repl(data_root, tmp_path, monkeypatch):
    """End to end through `open_runner` -> `prover.env.repl_session.open_file_runner` ->
    lean-interact -> the fake `lake` (tests/fake_repl) answering file.in and file2.in as Lean did."""
    from prover.env.repl_session import ReplConfig
    base = data_root / "lean-repl" / "v4.24.0"
    monkeypatch.setenv("PATH", f"{REPO / 'tests' / 'fake_repl'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_REPL_TRANSCRIPTS", os.pathsep.join(str(base / "test" / f"{n}.in") for n in ("file", "file2")))
    root = project(tmp_path, {"P/File.lean": lean("file"), "P/File2.lean": lean("file2"),
                              "lean-toolchain": (base / "lean-toolchain").read_text()})
    (tmp_path / "repl").mkdir()
    (tmp_path / "repl" / "lean-toolchain").write_text((base / "lean-toolchain").read_text())
    out = tmp_path / "ds"
    meta = trace_repl.trace_project(root, out, commit="c1", n_val=0, n_test=0, say=lambda _: None,
                                    settings=ReplConfig(repl_path=str(tmp_path / "repl"), memory_gb=0.5))
    assert (meta["files_failed"], meta["theorems"], meta["tactics"]) == ([], 3, 2)
    assert meta["lean_toolchain"] == "leanprover/lean4:v4.24.0"
    [h] = [r for r in split_records(out).values() if r["file_path"] == "P/File2.lean" and r["full_name"] == "h"]
    assert h["traced_tactics"][0]["annotated_tactic"][0] == "rw [Nat.add_assoc, Nat.add_comm y, <a>h1</a>]"



@pytest.mark.parametrize("folder, name", [
    ("v4.24.0", "all_tactics"), ("v4.24.0", "all_tactics-20250622"),
    ("fork-v1.3.18/v4.24.0", "all_tactics"), ("fork-v1.3.18/v4.24.0", "all_tactics-20250622"),
    ("fork-v1.3.18/v4.10.0-rc1", "all_tactics"), ("v4.10.0-rc1", "all_tactics"),
])
def test_premises_from_the_constants_real_repl_answers_used(folder, name):
    """The used constants here are the REPL's own (`usedConstants` of the all_tactics
    transcripts), not LeanDojo's premises: `have t := 37` used Nat, OfNat.ofNat and
    instOfNatNat (and letFun at v4.10), which its text does not name, so nothing is annotated and the three are
    counted as used but not named; `exact t` / `exact hp` used no constant. The fork sends
    usedConstants at LeanDojo's toolchain (v4.10.0-rc1) too; the upstream REPL there does not,
    and the tracer falls back to names in the text."""
    cmd = requests(name, folder)[0]["cmd"]
    answer = answers(name, folder)[0]
    f = LeanFile.scan(cmd, "Test/All.lean")
    skipped: Counter = Counter()
    steps = parse_steps(f, answer, skipped)
    assert skipped == Counter() and [cmd[s.start:s.end] for s in steps] == [t["tactic"] for t in answer["tactics"]]
    index = PremiseIndex({n: [("Init/Prelude.lean", [1, 1], [1, 2])] for n in ("Nat", "OfNat.ofNat", "instOfNatNat")})
    stats: Counter = Counter()
    decl = f.declarations[0]
    out = [annotate(cmd[s.start:s.end], s.used, decl, index, stats, f.path) for s in steps]
    assert out == [(cmd[s.start:s.end], []) for s in steps]  # nothing named in the text
    if folder == "v4.10.0-rc1":
        assert [s.used for s in steps] == [None, None] and stats["used_constants"] == 0
    elif name == "all_tactics":  # at v4.10 `have` elaborated to `letFun`, in no corpus here
        extra = {"letFun"} if "v4.10" in folder else set()
        assert [s.used for s in steps] == [{"instOfNatNat", "Nat", "OfNat.ofNat"} | extra, set()]
        assert (stats["used_constants"], stats["used_in_corpus"], stats["used_in_corpus_not_named"]) == (3 + len(extra), 3, 3)
    else:
        assert [s.used for s in steps] == [set()] and stats["used_constants"] == 0
