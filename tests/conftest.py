"""Shared fixtures: where the reference data lives, and tiny hand-written datasets.

The data folder is `$PROVER_DATA`, else `../shared/data` beside the repository when it exists,
else the small sets that ship with the repository, `tests/fixtures/data/` (mathlib-src-mini,
leandojo-sample, the Lean REPL's transcripts, MiniF2F's theorem list; their sources and licences
are in its README.md). Only the full `mathlib-src` does not ship: tests that need it skip, saying
the public command that builds it. Every skip's reason starts with one of SKIP_REASONS, and the
count of each is printed at the end of a run and, for the whole suite, checked against
tests/skips.json (`check_skips`): a new kind of skip, or a new skip of a known kind, fails the run.
"""
from __future__ import annotations

import json
import os

# Before torch is imported anywhere: spinning OpenMP threads slow small models 5-10x on 2 cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURE_DATA = REPO / "tests" / "fixtures" / "data"  # shipped: what the suite needs but mathlib-src
SHARED_DATA = REPO.parent / "shared" / "data"

# What a skip may be for, as the first words of its reason: nothing else skips.
NEEDS_LEAN = "needs Lean"
NEEDS_BROWSER = "needs a browser"
NEEDS_GPU = "needs a GPU"
NEEDS_CORPUS = "needs the full mathlib-src corpus"
NEEDS_EXTRA = "needs an optional extra"  # e.g. `dense` (issue 63): the base install stays light by design
SKIP_REASONS = (NEEDS_LEAN, NEEDS_BROWSER, NEEDS_GPU, NEEDS_CORPUS, NEEDS_EXTRA)
MATHLIB_COMMIT = "29dcec074de168ac2bf835a77ef68bbe069194c5"  # LeanDojo Benchmark 4's Mathlib


@pytest.fixture(autouse=True)
def clean_commit(monkeypatch):
    """A fixed, clean commit for whatever a test writes: results rows from a dirty checkout are
    marked "(dirty tree)", and tests must not change with uncommitted edits of whoever runs them.
    Tests of the commit itself set or unset $PROVER_GIT_COMMIT on top of this."""
    monkeypatch.setenv("PROVER_GIT_COMMIT", "0000000-test")


def find_data_root() -> Path:
    """The one resolver of the tests' data: `$PROVER_DATA` if set, else `<repo>/../shared/data`
    when it exists, else the shipped `tests/fixtures/data`."""
    env = os.environ.get("PROVER_DATA")
    if env:
        return Path(env)
    return SHARED_DATA if SHARED_DATA.is_dir() else FIXTURE_DATA


DATA_ROOT = find_data_root()
# Configs name datasets in the data folder (`${data:NAME}`, prover/data/location.py), which is
# $PROVER_DATA, else the per-user folder: the tests' default is the folder found above.
os.environ.setdefault("PROVER_DATA", str(DATA_ROOT))


def missing_reason(path: Path) -> str:
    """Why a test cannot run without `path`: the full corpus names the command that builds it;
    anything else ships in tests/fixtures/data, so its absence is a broken setup, said as such."""
    try:
        first = Path(path).relative_to(DATA_ROOT).parts[0]
    except (ValueError, IndexError):
        first = ""
    if first == "mathlib-src":
        return (f"{NEEDS_CORPUS} ({path} not found): build it from a Mathlib checkout at {MATHLIB_COMMIT[:8]} "
                f"(LeanDojo Benchmark 4's commit) with `prover data extract PATH/TO/mathlib4 --out "
                f"$PROVER_DATA/mathlib-src`; its leandojo-real/ records are LeanDojo Benchmark 4's random/val "
                f"(`prover data download leandojo-benchmark-4`)")
    return (f"reference data not found at {path}: it ships in {FIXTURE_DATA.relative_to(REPO)}/ "
            f"(unset PROVER_DATA to use it, or point PROVER_DATA at a folder holding {first or path})")


def require(path: Path) -> Path:
    """`path`, or skip the calling test saying which data is missing and how to provide it."""
    if not Path(path).exists():
        pytest.skip(missing_reason(Path(path)))
    return path


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The data folder (leandojo-sample/, mathlib-src-mini/, lean-repl/, minif2f/; mathlib-src/
    only where it was built or shared)."""
    return require(DATA_ROOT)


@pytest.fixture(scope="session")
def leandojo_sample(data_root: Path) -> Path:
    """`leandojo-sample/test.json`: 20 real LeanDojo Benchmark 4 records."""
    return require(data_root / "leandojo-sample" / "test.json")


@pytest.fixture(scope="session")
def mini_root(data_root: Path) -> Path:
    """`mathlib-src-mini/`: 362 files, 9,375 premises, random + novel_premises splits."""
    return require(data_root / "mathlib-src-mini")


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """`prover demo` as the README writes it, on a fresh HOME, in a clean folder that holds the
    repository's configs (as a clone does), with no data folder: it writes runs/demo/ there.
    Shared by the tests of the demo and of the README lines that run on what it leaves."""
    import subprocess
    import sys
    tmp_path = tmp_path_factory.mktemp("clean")
    (tmp_path / "configs").symlink_to(REPO / "configs")
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PROVER_CACHE": str(tmp_path / "cache")}
    env.pop("PROVER_DATA", None)  # a user's machine: the per-user data folder, empty
    out = subprocess.run([sys.executable, "-m", "prover.cli", "demo"],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    return tmp_path, env, out


# -- skips, counted by reason --------------------------------------------------------------

SKIPS_PINNED = REPO / "tests" / "skips.json"
_skips: Counter = Counter()
_reports: list[str] = []


def skip_category(reason: str) -> str:
    """The SKIP_REASONS entry a skip's reason starts with ("Skipped: " dropped), else the reason."""
    text = reason.removeprefix("Skipped: ").strip()
    return next((c for c in SKIP_REASONS if text.startswith(c)), text)


def data_mode() -> str:
    """"fixtures" when the suite runs on the shipped sets alone, else "shared"."""
    return "fixtures" if DATA_ROOT.resolve() == FIXTURE_DATA.resolve() else "shared"


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _reports.append(report.nodeid)
    if report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        _skips[skip_category(reason)] += 1


def _whole_suite(session) -> bool:
    """Every collected test ran, none deselected, from the default test paths."""
    cfg = session.config
    args = [Path(a).resolve() for a in cfg.args]
    default = not args or all(a in (REPO, REPO / "tests") for a in args)
    return (default and not cfg.option.keyword and not cfg.option.markexpr and not cfg.option.lf
            and session.testscollected > 0 and len(set(_reports)) >= session.testscollected)


# What the machine has (Lean, a browser, a GPU, an optional extra) varies: a machine with more runs
# more, so those counts are pinned as a ceiling (the count on a machine with none of them). What the
# data has is the same for every clone, so the full corpus's count is pinned exactly.
MACHINE_REASONS = (NEEDS_LEAN, NEEDS_BROWSER, NEEDS_GPU, NEEDS_EXTRA)


def check_skips(counts: dict, pinned: dict, mode: str) -> list[str]:
    """What is wrong with a whole suite's skips: a reason outside SKIP_REASONS, or (on the
    shipped data) a count other than the pinned one (above it, for what the machine may lack)."""
    problems = [f"a skip for another reason than {', '.join(SKIP_REASONS)}: {r!r} (x{n})"
                for r, n in counts.items() if r not in SKIP_REASONS]
    want = pinned.get(mode)
    if want is not None:
        for reason in sorted(set(want) | {r for r in counts if r in SKIP_REASONS}):
            got, pin = counts.get(reason, 0), want.get(reason, 0)
            if got > pin or (got < pin and reason not in MACHINE_REASONS):
                problems.append(f"{got} skips '{reason}', {pin} pinned "
                                f"{'at most ' if reason in MACHINE_REASONS else ''}in tests/skips.json ({mode})")
    return problems


def pytest_terminal_summary(terminalreporter):
    if not _skips:
        return
    mode = data_mode()
    terminalreporter.write_line(f"skips by reason (data: {mode}, {DATA_ROOT}): " + "; ".join(
        f"{r}: {n}" for r, n in sorted(_skips.items())))
    session = terminalreporter._session if hasattr(terminalreporter, "_session") else None
    if session is not None and _whole_suite(session):
        problems = check_skips(dict(_skips), json.loads(SKIPS_PINNED.read_text()), mode)
        for p in problems:
            terminalreporter.write_line(f"skips: {p}", red=True)


def pytest_sessionfinish(session, exitstatus):
    if _skips and _whole_suite(session):
        if check_skips(dict(_skips), json.loads(SKIPS_PINNED.read_text()), data_mode()) and exitstatus == 0:
            session.exitstatus = 1


# ---------------------------------------------------------------------------------------
# Tiny hand-written datasets (LeanDojo layout) for exact assertions.

def premise(name: str, start: tuple[int, int], end: tuple[int, int], code: str | None = None,
            kind: str = "theorem", **extra) -> dict:
    return {"full_name": name, "code": code or f"theorem {name} : True", "start": list(start),
            "end": list(end), "kind": kind, **extra}


def tactic(text: str, premises: list[tuple[str, str]] = (), before: str = "⊢ True",
           after: str = "no goals") -> dict:
    """A traced tactic using `premises` [(full_name, def_path), ...]."""
    return {
        "tactic": text,
        "annotated_tactic": [text, [{"full_name": n, "def_path": p, "def_pos": [1, 1],
                                     "def_end_pos": [1, 2]} for n, p in premises]],
        "state_before": before, "state_after": after,
    }


def theorem_record(name: str, file_path: str, tactics: list[dict],
                   start: tuple[int, int] = (10, 1), end: tuple[int, int] = (12, 1)) -> dict:
    return {"url": "https://example.org/repo", "commit": "abc", "file_path": file_path,
            "full_name": name, "start": list(start), "end": list(end), "traced_tactics": tactics}


def benchmark_script(name: str):
    """A script under benchmarks/ (not a package) imported as a module, for its functions;
    `name` may be `tried/<script>` (benchmarks/tried/)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name.replace("/", "."), REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def write_json(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


TINY_CORPUS = [
    # A <- B <- C (C imports B, B imports A); D is unrelated.
    {"path": "A.lean", "imports": [], "premises": [
        premise("a1", (1, 1), (1, 20)),
        premise("a2", (3, 1), (3, 20)),
        premise("dup", (5, 1), (5, 20)),
    ]},
    {"path": "B.lean", "imports": ["A.lean", "Lean/Core.lean"], "premises": [
        premise("b1", (1, 1), (1, 20)),
        premise("dup", (3, 1), (3, 20)),
    ]},
    {"path": "C.lean", "imports": ["B.lean"], "premises": [
        premise("c1", (1, 1), (2, 10)),
        premise("c2", (4, 1), (5, 8)),       # ends exactly where the theorem at (5, 8) starts
        premise("c3", (20, 1), (21, 5)),     # after the theorem
    ]},
    {"path": "D.lean", "imports": [], "premises": [
        premise("d1", (1, 1), (1, 20)),
    ]},
]


@pytest.fixture
def tiny_corpus_path(tmp_path: Path) -> Path:
    """corpus.jsonl of four files: A <- B <- C import chain plus unrelated D (10 premises)."""
    return write_jsonl(tmp_path / "corpus.jsonl", TINY_CORPUS)


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models on shared cores: a second thread mostly waits on the first, and results
    must not depend on the thread count."""
    import torch
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
