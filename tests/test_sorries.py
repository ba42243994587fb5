"""Finding `sorry`s in a Lean project's source and patching proofs in, byte for byte.

The project is tests/fixtures/lean_sorry_project (hand-written; see its README). Patching
tests work on a copy in tmp_path.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from prover.data.errors import DataError, SkipLog
from prover.data.theorem import parse_theorem
from prover.env.base import ProofFinished, State
from prover.env.replay import ReplayEnv
from prover.sorries.find import (TACTIC_BLOCK, TACTIC_INLINE, TERM, TERM_NESTED, find_in_text,
                                 find_sorries, lean_files)
from prover.sorries.patch import (StaleSorryError, apply_patches, diff_patches, make_patch,
                                  render_replacement, unified_diff, write_patched)
from conftest import tactic, theorem_record

PROJECT = Path(__file__).resolve().parent / "fixtures" / "lean_sorry_project"
ALG, BASIC = "SorryProject/Algebra.lean", "SorryProject/Basic.lean"

# (file, kind, name, line, column, context, whole proof)
EXPECTED = [
    (ALG, "theorem", "SorryProject.Algebra.mul_comm'", 13, 12, TACTIC_BLOCK, False),
    (ALG, "theorem", "SorryProject.Algebra.mul_comm'", 16, 4, TACTIC_BLOCK, False),
    (ALG, "theorem", "SorryProject.Algebra.append_nil'", 18, 89, TACTIC_INLINE, False),
    (ALG, "theorem", "SorryProject.Algebra.refl_fun", 20, 57, TERM_NESTED, False),
    (ALG, "theorem", "SorryProject.Algebra.by_cases'", 25, 21, TACTIC_BLOCK, False),
    (ALG, "theorem", "SorryProject.Algebra.pattern", 31, 13, TERM_NESTED, False),
    (BASIC, "theorem", "SorryProject.add_zero'", 10, 46, TACTIC_BLOCK, True),
    (BASIC, "theorem", "SorryProject.zero_add'", 12, 43, TERM, True),
    (BASIC, "theorem", "SorryProject.two_goals", 16, 4, TACTIC_BLOCK, False),
    (BASIC, "lemma", "SorryProject.by_newline", 20, 2, TACTIC_BLOCK, True),
    (BASIC, "theorem", "SorryProject.longer_block", 26, 2, TACTIC_BLOCK, False),
    (BASIC, "example", None, 36, 34, TACTIC_BLOCK, True),
    (BASIC, "theorem", "SorryProject.Inner.nested_ns", 41, 2, TERM, True),
    (BASIC, "theorem", "SorryProject.after_inner", 46, 9, TERM_NESTED, False),
    (BASIC, "theorem", "top_level", 48, 39, TACTIC_BLOCK, True),
]


@pytest.fixture(scope="module")
def found():
    return find_sorries(PROJECT)


@pytest.fixture
def project(tmp_path) -> Path:
    return Path(shutil.copytree(PROJECT, tmp_path / "proj"))


def _key(f):
    return (f.file, f.kind, f.name, f.line, f.column, f.context, f.whole_proof)


def test_finds_exactly_the_proof_sorries(found):
    assert [_key(f) for f in found] == EXPECTED


def test_spans_are_the_sorry_tokens_bytes(found):
    for f in found:
        raw = (PROJECT / f.file).read_bytes()
        assert raw[f.start:f.end] == b"sorry"
        line = raw.split(b"\n")[f.line - 1].decode("utf-8")
        assert line[f.column:f.column + 5] == "sorry"
        line_start = sum(len(ln) + 1 for ln in raw.split(b"\n")[:f.line - 1])
        assert f.start == line_start + len(line[:f.column].encode("utf-8"))


def test_columns_count_characters_and_spans_count_bytes(found):
    refl = next(f for f in found if f.name == "SorryProject.Algebra.refl_fun")
    prefix = "theorem refl_fun (α : Type) : ∀ x : α, x = x := fun x => "
    assert refl.column == len(prefix) == 57
    raw = (PROJECT / ALG).read_bytes()
    line_start = raw.index(b"theorem refl_fun")
    assert refl.start - line_start == len(prefix.encode("utf-8")) == 57 + 4  # α is 2 bytes, ∀ is 3


def test_statements_and_labels(found):
    by_name = {f.name: f for f in found}
    assert by_name["SorryProject.add_zero'"].statement == "theorem add_zero' (n : Nat) : n + 0 = n"
    assert by_name["SorryProject.Algebra.pattern"].statement == (
        "theorem pattern : ∀ n : Nat, n + 0 = n")
    assert by_name["top_level"].statement == "theorem _root_.top_level : 1 = 1"
    example = by_name[None]
    assert example.statement == "example : (2 : Nat) + 2 = 4"
    assert example.label == "example at SorryProject/Basic.lean:36"


def test_lean_files_skip_build_output_and_dependencies(project):
    for d in (".lake/packages/dep", "lake-packages/dep", "build/ir", ".git"):
        (project / d).mkdir(parents=True)
        (project / d / "Dep.lean").write_text("theorem dep : True := sorry\n")
    rels = [p.relative_to(project).as_posix() for p in lean_files(project)]
    assert rels == [ALG, BASIC, "SorryProject.lean", "lakefile.lean"]
    assert [_key(f) for f in find_sorries(project)] == EXPECTED


def test_single_file_path(project):
    found = find_sorries(project / "SorryProject" / "Basic.lean")
    assert [(f.file, f.line) for f in found] == [("Basic.lean", k[3]) for k in EXPECTED if k[0] == BASIC]


def test_not_utf8_is_a_located_error_or_skipped(project):
    (project / "Bad.lean").write_bytes(b"theorem t : True := sorry -- caf\xe9\n")
    with pytest.raises(DataError, match=r"Bad.lean: not valid UTF-8 at byte 32"):
        find_sorries(project)
    skips = SkipLog()
    assert len(find_sorries(project, skips)) == len(EXPECTED)
    assert skips.counts["file not UTF-8"] == 1


@pytest.mark.parametrize("source", [
    'theorem t : "sorry".length = 5 := by rfl',
    "theorem t : True := trivial -- sorry",
    "theorem t : True := /- sorry /- sorry -/ sorry -/ trivial",
    "theorem t : True := by exact sorry_lemma",
    "theorem t : True := Foo.sorry",
    "theorem t : True := sorry'",
    "theorem t : True := «sorry»",
    "def d : Nat := sorry",
    "instance : Inhabited Nat := sorry",
    "theorem t (n : Nat := sorry) : True := trivial",
])
def test_sorry_that_is_not_a_proof_sorry(source):
    assert find_in_text(source + "\n", "T.lean") == []


def test_literals_do_not_hide_code():
    # A quote char literal, a raw string with a quote, an escaped quote: none opens a string.
    text = ("def q : Char := '\"'\ndef r : String := r#\"say \"sorry\"\"#\n"
            "def s : String := \"\\\"\"\ntheorem t : True := sorry\n")
    (f,) = find_in_text(text, "T.lean")
    assert (f.name, f.line, f.context) == ("t", 4, TERM)


def test_scopes_sections_and_mutual():
    text = ("namespace A\nsection S\nnamespace B.C\ntheorem x : True := sorry\nend B.C\n"
            "end S\ntheorem y : True := by\n  sorry\nend A\ntheorem z : True := sorry\n")
    assert [(f.name, f.line) for f in find_in_text(text, "T.lean")] == [
        ("A.B.C.x", 4), ("A.y", 8), ("z", 10)]


@pytest.mark.parametrize("proof, context", [
    ("by\n  have h : 1 = 1 := by\n    rfl\n  sorry", TACTIC_BLOCK),
    ("by\n  have h : 1 = 1 := sorry\n  trivial", TERM),
    ("by\n  exact fun h => sorry", TERM_NESTED),
    ("by\n  all_goals sorry", TACTIC_BLOCK),
    ("by\n  constructor <;> sorry", TACTIC_INLINE),
    ("by\n  first | rfl | sorry", TACTIC_INLINE),
    ("by\n  cases h with\n  | inl h => sorry\n  | inr h => rfl", TACTIC_BLOCK),
    ("by\n  refine ⟨?_, sorry⟩", TERM_NESTED),
    ("foo\n    sorry", TERM_NESTED),
    ("show True from sorry", TERM_NESTED),
])
def test_context_of_a_sorry(proof, context):
    (f,) = find_in_text(f"theorem t (a : Nat)\n    (h : a = 1) : True := {proof}\n", "T.lean")
    assert f.context == context
    assert f.whole_proof is False


def test_column0_command_ends_the_declaration():
    text = "theorem t : True := by\n  trivial\n#check (sorry : Nat)\n"
    assert find_in_text(text, "T.lean") == []


def test_crlf_file(tmp_path):
    raw = b"theorem t (p : Prop) (h : p) : p := by\r\n  sorry\r\n"
    (f,) = find_in_text(raw.decode(), "T.lean")
    assert (f.newline, f.line, f.column, f.context) == ("\r\n", 2, 2, TACTIC_BLOCK)
    out = apply_patches(raw, [make_patch(f, ["skip", "exact h"])])
    assert out == b"theorem t (p : Prop) (h : p) : p := by\r\n  skip\r\n  exact h\r\n"


# -- replacement text ---------------------------------------------------------------------

def _by(found, name, line=None):
    return next(f for f in found if f.name == name and (line is None or f.line == line))


def test_replacement_per_context(found):
    tacs = ["intro x", "simp [foo,\n  bar]"]
    two_goals = _by(found, "SorryProject.two_goals")  # `  · sorry`, column 4
    assert render_replacement(two_goals, tacs) == "intro x\n    simp [foo,\n      bar]"
    assert render_replacement(two_goals, ["exact hp"]) == "exact hp"
    zero_add = _by(found, "SorryProject.zero_add'")  # `:= sorry`, column 43
    assert render_replacement(zero_add, ["simp"]) == "by simp"
    assert render_replacement(zero_add, ["intro x", "simp"]) == "by intro x\n" + " " * 46 + "simp"
    after_inner = _by(found, "SorryProject.after_inner")  # `⟨sorry, h⟩`, column 9
    assert render_replacement(after_inner, ["trivial"]) == "(by trivial)"
    assert render_replacement(after_inner, ["skip", "trivial"]) == "(by skip\n" + " " * 13 + "trivial)"
    inline = _by(found, "SorryProject.Algebra.append_nil'")  # `simp only []; sorry`, column 89
    assert render_replacement(inline, ["rfl"]) == "rfl"
    assert render_replacement(inline, ["skip", "rfl"]) == "(skip\n" + " " * 90 + "rfl)"
    # Stray spacing around a tactic is not carried into the file.
    assert render_replacement(two_goals, ["  exact hp  \n", "rfl"]) == "exact hp\n    rfl"
    with pytest.raises(ValueError):
        render_replacement(two_goals, [])
    with pytest.raises(ValueError):
        render_replacement(two_goals, ["simp", "  "])


# -- patching -----------------------------------------------------------------------------

def test_each_patch_changes_only_the_sorry_bytes(found):
    for f in found:
        raw = (PROJECT / f.file).read_bytes()
        patch = make_patch(f, ["skip", "exact foo"])
        new = apply_patches(raw, [patch])
        rep = patch.replacement.encode("utf-8")
        assert new[:f.start] == raw[:f.start]
        assert new[f.start:f.start + len(rep)] == rep
        assert new[f.start + len(rep):] == raw[f.end:]
        assert len(new) == len(raw) - 5 + len(rep)


def test_all_sorries_of_a_file_at_once(found):
    for file in (ALG, BASIC):
        raw = (PROJECT / file).read_bytes()
        mine = [f for f in found if f.file == file]
        patches = [make_patch(f, [f"exact proof_{i}"]) for i, f in enumerate(mine)]
        # Built front to back here; apply_patches works back to front.
        expected, pos = b"", 0
        for f, p in sorted(zip(mine, patches), key=lambda fp: fp[0].start):
            expected += raw[pos:f.start] + p.replacement.encode()
            pos = f.end
        expected += raw[pos:]
        assert apply_patches(raw, list(reversed(patches))) == expected
        assert find_in_text(expected.decode(), file) == []


def test_diff_applies_with_patch_and_equals_the_written_files(found, project, tmp_path):
    patches = [make_patch(f, ["skip", "exact foo"]) for f in found]
    diff = diff_patches(project, patches)
    # Only sorry lines change: one '-' line per sorry.
    removed = [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert len(removed) == len(found)  # no two sorries share a line
    assert all("sorry" in ln for ln in removed)
    by_patch = Path(shutil.copytree(project, tmp_path / "by_patch"))
    # `patch` where it is installed, else git's own applier (git is there: the suite runs in a clone).
    apply = ["patch", "-p1", "--quiet"] if shutil.which("patch") else ["git", "apply", "-p1", "--unsafe-paths", "-"]
    subprocess.run(apply, input=diff.encode(), cwd=by_patch, check=True)
    written = write_patched(project, patches, out_root=tmp_path / "written")
    assert [p.relative_to(tmp_path / "written").as_posix() for p in written] == [ALG, BASIC]
    for file in (ALG, BASIC):
        assert (by_patch / file).read_bytes() == (tmp_path / "written" / file).read_bytes()
        assert (project / file).read_bytes() == (PROJECT / file).read_bytes()  # untouched


def test_diff_of_file_without_final_newline():
    raw = b"theorem t : True := sorry"
    (f,) = find_in_text(raw.decode(), "T.lean")
    new = apply_patches(raw, [make_patch(f, ["trivial"])])
    assert new == b"theorem t : True := by trivial"
    assert unified_diff(raw, new, "T.lean") == (
        "--- a/T.lean\n+++ b/T.lean\n@@ -1 +1 @@\n-theorem t : True := sorry\n"
        "\\ No newline at end of file\n+theorem t : True := by trivial\n"
        "\\ No newline at end of file\n")


def test_write_in_place(project, found):
    f = _by(found, "SorryProject.by_newline")
    (path,) = write_patched(project, [make_patch(f, ["omega"])])
    assert path == project / BASIC
    assert "lemma by_newline (a b : Nat) : a + b = b + a := by\n  omega\n" in path.read_text()
    assert not list(project.rglob("*.tmp"))


def test_stale_or_duplicate_patches_are_refused(project, found):
    f = _by(found, "SorryProject.add_zero'")
    raw = (project / BASIC).read_bytes()
    with pytest.raises(StaleSorryError, match="Basic.lean:10:46"):
        apply_patches(b"--" + raw, [make_patch(f, ["simp"])])
    with pytest.raises(ValueError, match="two patches for the same sorry"):
        apply_patches(raw, [make_patch(f, ["simp"]), make_patch(f, ["omega"])])


def test_a_replay_proof_becomes_a_minimal_patch(project, found):
    """The flow prove-sorries will run: a proof found in an env, patched into the source."""
    f = _by(found, "SorryProject.two_goals")
    goal = "p q : Prop\nhp : p\nhq : q\n⊢ p"
    thm = parse_theorem(theorem_record(f.name, f.file, [
        tactic("clear hq", before=goal, after="p q : Prop\nhp : p\n⊢ p"),
        tactic("exact hp", before="p q : Prop\nhp : p\n⊢ p"),
    ]), "mem", 0, None)
    with ReplayEnv(thm) as env:
        s = env.run_tactic(env.initial_state, "clear  hq")
        assert isinstance(s, State)
        assert isinstance(env.run_tactic(s, "exact hp"), ProofFinished)
    write_patched(project, [make_patch(f, ["clear hq", "exact hp"])])
    before = (PROJECT / BASIC).read_text().splitlines()
    after = (project / BASIC).read_text().splitlines()
    assert after[:15] == before[:15] and after[17:] == before[16:]
    assert after[15:17] == ["  · clear hq", "    exact hp"]


@pytest.mark.parametrize("header, name", [
    ("theorem foo.{u}", "A.foo"),
    ("theorem foo.{u, v}", "A.foo"),
    ("theorem Nat.foo.{u}", "A.Nat.foo"),
    ("theorem «my thm».{u}", "A.«my thm»"),
])
def test_universe_parameters_are_not_part_of_the_name(header, name):
    """`theorem foo.{u}` declares `foo`: LeanDojo looks theorems up by their name alone."""
    text = f"namespace A\n{header} (α : Sort u) (a : α) : a = a := by sorry\nend A\n"
    (f,) = find_in_text(text, "T.lean")
    assert (f.name, f.whole_proof) == (name, True)
