"""tools/count_schemas.py, issue 40's acceptance counts: it runs, and what is done stays done."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def run_counts() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "tools/count_schemas.py"], cwd=REPO, capture_output=True, text=True)


def counted(out: str) -> dict[str, int]:
    rows = [line[5:] for line in out.splitlines() if line.startswith(("ok  ", "MISS"))]
    return {what: int(n.split()[0]) for what, n in (row.rsplit(": ", 1) for row in rows)}


def test_the_count_runs_and_counts_every_target():
    out = run_counts()
    assert out.returncode == 0, out.stdout + out.stderr  # every target met
    found = counted(out.stdout)
    assert set(found) == {"settings classes: recipe", "settings classes: generation", "settings classes: batching",
                          "settings classes: retriever choice", "settings classes: ByT5 size",
                          "settings classes: search budget",
                          "settings fields: tactics per state", "settings fields: a second k beside a nested one",
                          "config-wrapper dicts", "training imports from non-training code", "loops between subpackages"}
    assert found["loops between subpackages"] == 0
    # Tactics per expansion is one setting, where the generator reads it (issue 53).
    assert "generator/settings.py:GenerateConfig.num_tactics" in out.stdout
    # The device run's section nests the retriever choice and the search budget (issue 53; before,
    # its own fusion/k and max_expansions/search_timeout_s made each count 2).
    assert found["settings classes: retriever choice"] == found["settings classes: search budget"] == 1
    assert "LeaseConfig" not in out.stdout


# What is met stays met: every row is at its target (the script exits 0, asserted above).
MOST = {"settings classes: recipe": 1, "settings classes: generation": 1, "settings classes: batching": 1,
        "settings classes: ByT5 size": 1, "settings classes: retriever choice": 1, "settings classes: search budget": 1,
        "settings fields: tactics per state": 1, "settings fields: a second k beside a nested one": 0,
        "config-wrapper dicts": 0, "training imports from non-training code": 0, "loops between subpackages": 0}


def test_no_count_grows_back():
    found = counted(run_counts().stdout)
    assert {what: n for what, n in found.items() if n > MOST[what]} == {}


def test_the_count_reads_no_test_module():
    """The rules it counts live in tools/ (tools/layers.py), which the tests import, not the reverse."""
    import ast
    tree = ast.parse((REPO / "tools/count_schemas.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m == "tests" or m.startswith("tests.") for m in imported), imported
