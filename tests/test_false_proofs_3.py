"""No false proof, part three (issue 60): each attack against the project's real code.

Lean's side is a stand-in that answers as Lean's source prints: `#print axioms` writes a name
with `Name.toString`, whose `escapePart` gives up on a part holding `»` (and prints inaccessible
names `a✝` and macro scopes raw), so an axiom named `]»` prints as `[]»]`; the verifier's query
(`prover.env.lean_query`) answers JSON of name components. Each answer is the test's choice of
what Lean would say to the attack (tests/lean_standin.py), never Lean's own output.
"""
from __future__ import annotations

import json
import os
import random
import re
import stat
import subprocess
from pathlib import Path

import pytest

from prover.data.lean_text import code_tokens, mask_non_code
from prover.env.lean_query import is_query, name_components, query, read_answer
from prover.env.repl_revision import DATA as REVISIONS
from prover.env.repl_revision import ReplRevision, kernel_problem, read_revision, table
from prover.env.text_check import _tokens, tactic_text_problem
from prover.env.verdict import GUARANTEE_KERNEL, GUARANTEE_NO_KERNEL, Status
from prover.env.verify import check_file, check_proof, fresh_name
from tests.lean_standin import query_answer

STATEMENT = "theorem t : False"
NAME = fresh_name(STATEMENT)
PRINTED_NONE = f"'{NAME}' does not depend on any axioms"


def info(data: str, env: int = 6) -> dict:
    return {"messages": [{"severity": "info", "pos": {"line": 1, "column": 0}, "data": data}], "env": env}


def printed(axioms: list[str]) -> str:
    """`#print axioms` as Lean prints it (src/Lean/Elab/Print.lean): names as they print, raw."""
    return f"'{NAME}' depends on axioms: [{', '.join(axioms)}]" if axioms else PRINTED_NONE


class Lean:
    """A stand-in REPL. Envs: 0 the header's, 5 the re-check's, 7 the kernel's replay of 5.
    `axioms`: the fresh name's axioms as components (Lean's answer); `shown`: the same as
    `#print axioms` prints them; `added`: constants the re-check added ([components, flags]);
    `header`: the header's own constants; `kernel`: the replay's answer ("" accepted)."""

    def __init__(self, axioms, shown, added=(), header=(), kernel="", query_reply=None):
        self.axioms, self.shown, self.added, self.header = axioms, shown, list(added), list(header)
        self.kernel, self.query_reply, self.sent = kernel, query_reply, []

    def command(self, cmd, env=None, timeout=None):
        self.sent.append(("query" if is_query(cmd) else cmd, env))
        if is_query(cmd):
            if self.query_reply is not None:
                return self.query_reply
            if env == 0:
                return query_answer(cmd, self.header, None)
            return query_answer(cmd, self.header + [[[NAME], []]] + self.added, self.axioms)
        if cmd.startswith("#print axioms"):
            return info(self.shown)
        return {"env": 5}

    def replay(self, env):
        self.sent.append(("replay", env))
        return (self.kernel, None) if self.kernel else ("", 7)


def check(lean: Lean, tactics=("exact cheat",), **kw):
    return check_proof(lean.command, 0, STATEMENT, list(tactics), replay=lean.replay, **kw)


# 1. An axiom whose name Lean prints raw. Before: the printed list `[]»]` read as no axioms.

@pytest.mark.parametrize("components, shown", [
    (["]»"], "]»"),  # Name.mkSimple "]»": escapePart gives up on a part holding »
    (["a✝"], "a✝"),  # an inaccessible name, printed raw
    (["cheat", "_@", "Evil", "_hyg", 12], "cheat._@.Evil._hyg.12"),  # a macro-scoped name
])
def test_an_axiom_lean_prints_raw_is_refused(components, shown):
    verdict = check(Lean([components], printed([shown])))
    assert verdict.status is Status.AXIOMS and not verdict.ok
    assert verdict.reason.startswith("the proof depends on axioms beyond Lean's standard ones: ")


def test_the_raw_bracket_empties_the_printed_list():
    """What the old reader saw: `#print axioms` alone says no axioms at all."""
    from prover.env.verify import axioms_answer
    assert axioms_answer(info(printed(["]»"])), NAME) == ()


def test_the_printed_list_is_a_second_opinion_whose_disagreement_refuses():
    # Lean's components say standard axioms only; the printed list names one more: unverified
    lean = Lean([["propext"]], printed(["propext", "cheat"]))
    verdict = check(lean)
    assert verdict.status is Status.UNVERIFIED and "disagrees" in verdict.reason
    # agreeing answers: proved, with the kernel behind it
    ok = check(Lean([["propext"], ["Classical", "choice"]], printed(["propext", "Classical.choice"])))
    assert ok.ok and ok.axioms == ("propext", "Classical.choice") and ok.guarantee == GUARANTEE_KERNEL
    assert ok.checks == ("text", "lean", "kernel", "added", "axioms")


@pytest.mark.parametrize("flags", [["axiom"], ["opaque"], ["partial"], ["unsafe"], ["implemented_by"], ["extern"]])
def test_a_constant_the_proof_added_that_no_kernel_check_makes_safe_is_refused(flags):
    """SafeVerify's rule (an added axiom, even one the theorem does not cite) and its unsafe and
    partial refusals, and compiled code standing in for a term (implemented_by, extern)."""
    lean = Lean([["propext"]], printed(["propext"]), added=[[["evil"], flags]])
    verdict = check(lean)
    assert verdict.status is Status.ADDED and verdict.reason.endswith(f"evil ({flags[0]})")


def test_the_headers_own_constants_are_not_the_proofs():
    lean = Lean([["propext"]], printed(["propext"]), header=[[["my_axiom"], ["axiom"]], [["loop"], ["partial"]]])
    assert check(lean).ok


@pytest.mark.parametrize("reply, why", [
    ({"messages": [{"severity": "error", "data": "unknown identifier 'collectAxioms'"}]}, "unknown identifier"),
    (info("prover-lean-query:{not json"), "not the expected JSON"),
    ({"messages": [], "env": 3}, "no line starting prover-lean-query:"),
])
def test_no_readable_answer_from_lean_is_no_proof(reply, why):
    verdict = check(Lean([["propext"]], printed(["propext"]), query_reply=reply))
    assert verdict.status is Status.UNVERIFIED and why in verdict.reason


def test_two_answers_to_the_query_are_no_answer():
    one = query_answer(query([NAME]), [], [])["messages"][0]
    assert read_answer({"messages": [one, one]}, 1) == "2 answers to the query, not one"


def test_the_query_builds_names_from_components_and_asks_lean():
    cmd = query(["Nat.«a.b».prover_check_1"])
    assert '(Name.mkStr (Name.mkStr (Name.mkStr Name.anonymous "Nat") "a.b") "prover_check_1")' in cmd
    assert "collectAxioms" in cmd and "implementedByAttr" in cmd and "isExtern" in cmd
    assert name_components("Foo.«]»».x") == ("Foo", "]»", "x")
    data = query_answer(cmd, [[["x", 3], ["opaque"]]], [["]»"], ["a", 1]])
    assert read_answer(data, 1) == ({("x", 3): ("opaque",)}, [(("]»",), ("a", 1))])


def test_the_axioms_are_asked_in_the_kernels_replay_and_the_header_apart():
    lean = Lean([["propext"]], printed(["propext"]))
    assert check(lean).ok
    assert lean.sent == [(f"theorem {NAME} : False := by exact cheat", 0), ("replay", 5), ("query", 5),
                         ("query", 7), ("query", 0), (f"#print axioms {NAME}", 7)]


# 2. With the replay off, errors or not run, no proof counts (unless the user says so).

def test_no_kernel_replay_no_proof():
    lean = Lean([["propext"]], printed(["propext"]))
    off = check(lean, kernel_replay=False)
    assert off.status is Status.UNVERIFIED and "env.repl.kernel_replay=false" in off.reason
    assert check_proof(lean.command, 0, STATEMENT, ["simp"]).status is Status.UNVERIFIED  # no replay to run
    failed = check(Lean([["propext"]], printed(["propext"]), kernel="the kernel replay failed: boom"))
    assert failed.status is Status.KERNEL and "boom" in failed.reason


def test_the_explicit_setting_counts_it_and_says_so():
    verdict = check(Lean([["propext"]], printed(["propext"])), kernel_replay=False, accept_without_kernel=True)
    assert verdict.ok and verdict.guarantee == GUARANTEE_NO_KERNEL and "kernel" not in verdict.checks
    assert verdict.to_json()["guarantee"].startswith("NO kernel replay")


def test_a_bypassing_or_unknown_repl_is_no_proof():
    from prover.env.repl_revision import KernelReplayUnavailable
    lean = Lean([["propext"]], printed(["propext"]))

    def bypassed(env):
        raise KernelReplayUnavailable("the REPL at /r (v4.30.0-rc1, c9cde4d461fc) unpickles through replayToElabEnv")

    verdict = check_proof(lean.command, 0, STATEMENT, ["simp"], replay=bypassed)
    assert verdict.status is Status.UNVERIFIED and "v4.30.0-rc1" in verdict.reason


def test_summary_rows_say_what_stands_behind_the_proofs():
    from prover.search.results import markdown, summarize_run
    base = {"key": "a", "theorem": "a", "retriever": "bm25", "status": "proved", "proof": ["simp"],
            "expansions": 1, "times": {}}
    kernel = summarize_run([{**base, "env": "repl", "check": {"guarantee": GUARANTEE_KERNEL}}])
    no_kernel = summarize_run([{**base, "env": "repl", "check": {"guarantee": GUARANTEE_NO_KERNEL}}])
    dojo = summarize_run([{**base, "env": "leandojo", "check": None}])
    assert kernel["guarantee"] == [GUARANTEE_KERNEL] and no_kernel["guarantee"] == [GUARANTEE_NO_KERNEL]
    assert dojo["guarantee"][0].startswith("lean-dojo Dojo") and "no kernel replay" in dojo["guarantee"][0]
    table_md = markdown({"runs": {"r": {**no_kernel, "retriever": "bm25"}}})
    assert "| checked by |" in table_md and "NO kernel replay" in table_md


# 3. The REPL revision is read and looked up.

def test_the_revision_table_is_read_from_each_revisions_source():
    rows = json.loads(REVISIONS.read_text())["revisions"]
    assert rows and all(r["file"] == "REPL/Snapshots.lean" and re.fullmatch(r"[0-9a-f]{40}", r["commit"])
                        and r["read"] for r in rows)
    by_tag = {(r["repo"], r["tag"]): r for r in rows}
    # the transcripts' own revisions replay through the kernel
    for repo, tag in [("leanprover-community/repl", "v4.10.0-rc1"), ("leanprover-community/repl", "v4.24.0"),
                      ("augustepoiroux/repl", "v1.3.18_lean-toolchain-v4.24.0")]:
        assert by_tag[(repo, tag)]["unpickle"] == "kernel" and ".replay (" in by_tag[(repo, tag)]["read"]
    # from v4.30.0-rc1 the upstream REPL rebuilds the environment without the kernel
    assert by_tag[("leanprover-community/repl", "v4.30.0-rc1")]["unpickle"] == "bypass"
    assert "replayToElabEnv" in by_tag[("leanprover-community/repl", "v4.30.0-rc1")]["read"]
    assert by_tag[("leanprover-community/repl", "v4.29.0")]["unpickle"] == "kernel"


def test_the_transcripts_commits_are_the_tables(data_root):
    for commit in (data_root / "lean-repl").glob("**/COMMIT"):
        assert table()[commit.read_text().strip()]["unpickle"] == "kernel"


def test_the_revision_is_read_from_the_checkout(tmp_path):
    repo = tmp_path / "repl"
    repo.mkdir()
    (repo / "lean-toolchain").write_text("leanprover/lean4:v4.24.0\n")
    (repo / ".last_synced_commit").write_text("8fff8552292860d349b459d6a811e6915671dc0d\n")
    assert kernel_problem(read_revision(repo)) is None
    # a git checkout: its HEAD, whatever lean-interact recorded
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "add", "lean-toolchain"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "x"], check=True, env=env)
    rev = read_revision(repo)
    assert rev.commit != "8fff8552292860d349b459d6a811e6915671dc0d"
    problem = kernel_problem(rev)
    assert problem.startswith(f"the REPL at {repo} ({rev.commit[:12]}, leanprover/lean4:v4.24.0) is not a revision")


def test_a_bypassing_revision_is_named_in_one_line():
    row = next(r for r in table().values() if r["tag"] == "v4.30.0-rc1")
    problem = kernel_problem(ReplRevision(row["commit"], "v4.30.0-rc1", row["toolchain"], "/r"))
    assert "replayToElabEnv" in problem and "v4.30.0-rc1" in problem and "\n" not in problem
    assert "lean-toolchain is not" in kernel_problem(ReplRevision(row["commit"], None, "leanprover/lean4:v4.9.0", "/r"))


# 4. The lexer: what follows a numeral, interpolated strings, tokens ending in `%`.

@pytest.mark.parametrize("tactic", [
    "exact 1'\"'\nset_option debug.skipKernelTC true in decide +kernel",
    "exact 1r\"\\\"\nset_option debug.skipKernelTC true in decide +kernel",
    "exact s!\"{\"\\\"\"}\"\nset_option debug.skipKernelTC true in decide +kernel",
    "exact 0x1F'\"'\naxiom cheat : False",
    "exact s!\"{sorry}\"",
    "skip\n  gen_injective_theorems% Nat",
    "exact foo! \"{\" ++ \"\"\n  axiom cheat : False",  # `foo!` a library's interpolating token: both readings
])
def test_text_hidden_by_a_misread_literal_is_refused(tactic):
    assert tactic_text_problem([tactic]) is not None


def test_literals_after_numerals_are_read_as_lean_reads_them():
    assert mask_non_code("exact 1'\"'") == "exact 1   "
    assert mask_non_code("have x' : y'' := 1") == "have x' : y'' := 1"  # `'` inside names
    assert mask_non_code('exact 1r"\\"') == "exact 1    "
    assert mask_non_code('exact s!"a{x + "}"}b"') == "exact s!   x +       "
    toks = [t for _, t, _ in code_tokens("gen_injective_theorems% Foo gen_x%", _tokens())]
    assert toks[:2] == ["gen_injective_theorems%", "Foo"] and "gen_x" in toks


# Lean's tokenizer, written again from src/Lean/Parser/Basic.lean (tokenFnAux, numberFnAux,
# strLitFnAux, charLitFnAux, rawStrLitFnAux, identFnAux, whitespace; `s!`'s interpolatedStr),
# character by character, as the reference the lexer is compared with.

TOKENS = {"s!", "gen_injective_theorems%", "theorem", "axiom", "(", ")", ".", ":=", "{", "}", "+", "!"}


def _ref_idents(text: str) -> tuple[list[str], bool]:
    """The identifiers and keyword tokens Lean's tokenizer reads in `text`, and whether it met
    a lexing error (Lean then skips to the next token that starts a command)."""
    out: list[str] = []
    i, n = 0, len(text)
    error = False

    def string_end(j: int, interpolated: bool) -> int:
        while j < n:
            if text[j] == "\\":
                j += 2
            elif text[j] == '"':
                return j + 1
            elif interpolated and text[j] == "{":
                j = term(j + 1)
                j += 1  # the `}`
            else:
                j += 1
        return n

    def term(j: int) -> int:  # up to the `}` closing an interpolated term
        nonlocal i
        save, depth = i, 0
        i = j
        while i < n:
            if text[i] == "}" and depth == 0:
                break
            if text[i] == "{":
                depth += 1
            if text[i] == "}":
                depth -= 1
            step()
        k, i = i, save
        return k

    def step() -> None:
        nonlocal i
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            k = text.find("\n", i)
            i = n if k < 0 else k
        elif text.startswith("/-", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/-", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("-/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == '"':
            interpolated = bool(out) and out[-1] == "s!"
            out.append('"')  # a string token: what follows a string is not after `s!`
            i = string_end(i + 1, interpolated)
        elif c == "'" and text[i + 1:i + 2] != "'":
            nonlocal error
            k = i + 1
            k += 2 if text[k:k + 1] == "\\" else 1
            error = error or text[k:k + 1] != "'"
            i = k + 1 if text[k:k + 1] == "'" else k
        elif c.isdigit():
            i = re.compile(r"0[xX][0-9a-fA-F_]*|[0-9][0-9_]*(?:\.(?:[0-9][0-9_]*)?)?").match(text, i).end()
        elif c == "r" and re.match(r'r#*"', text[i:]):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            k = text.find('"' + hashes, i + 2 + len(hashes))
            i = n if k < 0 else k + 1 + len(hashes)
        else:
            m = re.compile(r"(?:«[^»]*»|[A-Za-z_][A-Za-z0-9_'!?]*)(?:\.(?:«[^»]*»|[A-Za-z_][A-Za-z0-9_'!?]*))*").match(text, i)
            tk = max((t for t in TOKENS if text.startswith(t, i)), key=len, default=None)
            if m and (tk is None or len(tk) < m.end() - i):
                out.append(m.group())
                i = m.end()
            elif tk:
                out.append(tk)
                i += len(tk)
            else:
                error = True
                i += 1

    while i < n:
        step()
    return out, error


FRAGMENTS = ["1", "'\"'", "r\"\\\"", "r#\"a\"b\"#", "s!", "\"{\"", "\"\\\"\"", "{", "}", "x'", "'a'", "theorem",
             "axiom", "gen_injective_theorems%", "«a b»", " ", "\n", "-- c\n", "/- d -/", "h.1", "2axiom",
             "0x1F", "1.5", "(", ")", "+", "y", "''", "\"a{b\"", "s!\"{\"\\\"\"}\""]


def _ours(text: str) -> list[str]:
    return [t for kind, t, _ in code_tokens(mask_non_code(text), _tokens() | {"s!"}) if kind == "ident"]


def test_the_lexer_agrees_with_leans_tokenizer_on_random_text():
    """The keywords Lean's tokenizer would see (the reference above) are the ones the lexer
    sees, on 3,000 random strings of fragments that put literals after numerals, strings inside
    interpolations, and `%` tokens next to names. Text where Lean's tokenizer meets an error (an
    unclosed char literal, a character no token starts with) is left out: Lean rejects the
    proof it stands in (a parse error in the theorem is an error verdict, and the REPL's tactic
    mode parses one tactic sequence, with no recovery into a command)."""
    rng = random.Random(60)
    keywords = {"theorem", "axiom", "gen_injective_theorems%"}
    exact = 0
    for _ in range(3000):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 12)))
        ref, error = _ref_idents(text)
        ref = [t for t in ref if t in keywords]
        ours = [t for t in _ours(text) if t in keywords]
        if not error:
            exact += 1
            assert ours == ref, text
    assert exact > 1000


# 5. An `example` in a file: the reason is the missing name, not the kernel.

def test_an_example_in_a_file_says_why(tmp_path):
    path = tmp_path / "A.lean"
    path.write_text("example : 1 = 1 := by sorry\n")
    verdict = check_file(lambda p: {"env": 1}, lambda *a, **k: {"env": 2}, None, path,
                         b"example : 1 = 1 := by rfl\n", [None], [["rfl"]], original={"env": 0})
    assert verdict.status is Status.UNVERIFIED
    assert verdict.reason == "no declaration to ask Lean the axioms of (an example has no name)"


# 6. prove-sorries runs lean4checker, where one is installed, before a patch is written.

def _exe(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env python3\nimport os, sys\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def fake_checker(tmp_path, monkeypatch):
    """A fake `lean` (writes the .olean it is asked for) and `lean4checker` (logs its arguments
    and the LEAN_PATH it saw; rejects when FAKE_L4C_REJECT is set; `--fresh` refused with the
    first versions' usage line when FAKE_L4C_OLD is set) first on PATH, beside the fake lake."""
    from tests.conftest import REPO
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    _exe(bin_ / "lean", "out = sys.argv[sys.argv.index('-o') + 1]\nopen(out, 'w').write('olean')\n")
    _exe(bin_ / "lean4checker",
         "log = os.environ['FAKE_L4C_LOG']\n"
         "open(log, 'a').write(' '.join(sys.argv[1:]) + ' | ' + os.environ.get('LEAN_PATH', '') + '\\n')\n"
         "if os.environ.get('FAKE_L4C_OLD') and '--fresh' in sys.argv:\n"
         "    print('uncaught exception: Usage: lake exe lean4checker Mathlib.Data.Nat.Basic', file=sys.stderr); sys.exit(1)\n"
         "mod = sys.argv[-1]\n"
         "assert any(os.path.exists(os.path.join(p, mod + '.olean')) for p in os.environ['LEAN_PATH'].split(':'))\n"
         "if os.environ.get('FAKE_L4C_REJECT'):\n"
         "    print('(kernel) declaration has metavariables', file=sys.stderr); sys.exit(1)\n")
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{REPO / 'tests' / 'fake_repl'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_L4C_LOG", str(tmp_path / "l4c.log"))
    return tmp_path / "l4c.log"


def _recheck_with_checker(tmp_path, checker):
    from prover.sorries.check import recheck_files_in_repl
    from prover.sorries.find import find_sorries
    from prover.sorries.prove import SorryAttempt
    root = tmp_path / "proj"
    root.mkdir()
    (root / "A.lean").write_text("theorem a : 1 = 1 := by sorry\n")
    attempt = SorryAttempt(find_sorries(root)[0], "proved", proof=["rfl"])

    def command(cmd, env=None, timeout=None):
        if is_query(cmd):
            return query_answer(cmd, [[["a"], []]], [])
        return info("'a' does not depend on any axioms")

    counts = recheck_files_in_repl([attempt], root, lambda p: {"env": 0}, command,
                                   replay=lambda env: ("", 3), lean4checker=checker)
    return attempt, counts


def test_lean4checker_checks_the_patched_file_before_it_is_written(tmp_path, fake_checker):
    from prover.sorries.lean4checker import Lean4Checker, available
    assert available() is not None
    checker = Lean4Checker(tmp_path)
    attempt, counts = _recheck_with_checker(tmp_path, checker)
    assert counts["checked"] == 1 and attempt.status == "proved"
    line = fake_checker.read_text().splitlines()
    assert len(line) == 1 and line[0].startswith("--fresh ProverLean4Checker")
    assert checker.checked == [{"file": "A.lean", "mode": "--fresh", "ok": True, "problem": None}]
    assert checker.note() == "lean4checker checked A.lean (accepted, --fresh)"


def test_a_file_lean4checker_rejects_is_not_patched(tmp_path, fake_checker, monkeypatch):
    from prover.sorries.lean4checker import Lean4Checker
    monkeypatch.setenv("FAKE_L4C_REJECT", "1")
    checker = Lean4Checker(tmp_path)
    attempt, counts = _recheck_with_checker(tmp_path, checker)
    assert counts["rejected"] == 1 and attempt.status == "error" and "lean4checker" in attempt.reason
    assert "declaration has metavariables" in attempt.reason
    assert checker.note() == "lean4checker checked A.lean (rejected, --fresh)"


def test_a_lean4checker_without_fresh_checks_from_the_imports(tmp_path, fake_checker, monkeypatch):
    from prover.sorries.lean4checker import Lean4Checker
    monkeypatch.setenv("FAKE_L4C_OLD", "1")
    checker = Lean4Checker(tmp_path)
    _, counts = _recheck_with_checker(tmp_path, checker)
    assert counts["checked"] == 1 and checker.checked[0]["mode"] == "from its imports"
    calls = fake_checker.read_text().splitlines()
    assert calls[0].startswith("--fresh ") and calls[1].startswith("ProverLean4Checker")


def test_a_proof_counted_without_the_kernel_says_so_in_every_file_written(tmp_path):
    from prover.sorries.find import find_sorries
    from prover.sorries.prove import SorryAttempt, write_report
    (tmp_path / "A.lean").write_text("theorem a : 1 = 1 := by sorry\n")
    attempt = SorryAttempt(find_sorries(tmp_path)[0], "proved", proof=["rfl"],
                           check=f"checked with {GUARANTEE_NO_KERNEL}")
    report = write_report(tmp_path, [attempt], tmp_path / "out", "repl", write_files=True)
    assert report["no_kernel_replay"] == ["a"]
    assert (tmp_path / "out" / "proofs.patch").read_text().startswith("NO kernel replay behind 1 of these proofs")
    assert (tmp_path / "out" / "patched" / "NO-KERNEL-REPLAY.txt").exists()
    assert "NO kernel replay behind: a" in (tmp_path / "out" / "report.md").read_text()
    # git apply skips the leading line: the patch still applies
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply", "--check", "out/proofs.patch"], cwd=tmp_path, check=True)


def test_the_driver_names_an_unknown_repl_at_start(tmp_path, monkeypatch, caplog):
    """`prepare` (the driver's REPL build) reads the revision once and says in one line when its
    kernel replay is not one the table lists."""
    from prover.env.repl_session import ReplConfig, prepare
    from tests.conftest import REPO
    monkeypatch.setenv("PATH", f"{REPO / 'tests' / 'fake_repl'}{os.pathsep}{os.environ['PATH']}")
    for folder in ("project", "repl"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "lean-toolchain").write_text("leanprover/lean4:v4.24.0\n")
    (tmp_path / "repl" / ".last_synced_commit").write_text("f" * 40 + "\n")
    with caplog.at_level("WARNING", logger="prover.env.repl_session"):
        prepare(ReplConfig(project=str(tmp_path / "project"), repl_path=str(tmp_path / "repl")))
    said = [r.getMessage() for r in caplog.records if "is not a revision" in r.getMessage()]
    assert len(said) == 1 and "ffffffffffff" in said[0]
