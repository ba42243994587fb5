"""`python -m prover.benchmarking.readme_numbers`: every number of README.md's Results section
recomputes from committed files (issue 62), and the command catches a hand edit and a file
whose numbers disagree with its per-query data."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from prover.benchmarking.readme_numbers import README, check, recompute, results_section
from prover.benchmarking.harness import RESULTS_DIR

REPO = Path(__file__).resolve().parents[1]
GENERATOR = "generator-mathlib-src-leandojo-real-report-cpu-select"


def test_the_documented_command_passes_on_the_committed_readme():
    done = subprocess.run([sys.executable, "-m", "prover.benchmarking.readme_numbers"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"{GENERATOR}: recomputed from outcomes/" in done.stdout
    assert "python -m prover.benchmarking.readme_numbers" in results_section(README.read_text())


def test_the_generator_row_is_recomputed_from_its_outcomes():
    how, numbers, bad = recompute(GENERATOR)
    assert how.startswith("recomputed") and not bad
    # README's 9.7 against 8.9, and their paired difference, come out of the outcome files.
    assert {"9.7", "6.6", "12.8", "8.9", "5.8", "12.5", "0.8", "-1.2", "2.9"} <= numbers


def test_a_hand_edited_number_in_the_section_fails():
    text = README.read_text()
    _, problems = check(text)
    assert not problems
    edited = text.replace("9.7 [6.6, 12.8]", "97.7 [6.6, 12.8]", 1)
    assert edited != text
    _, problems = check(edited)
    assert any("97.7" in p for p in problems)


def test_a_file_that_disagrees_with_its_outcomes_fails(tmp_path):
    shutil.copy(RESULTS_DIR / f"{GENERATOR}.json", tmp_path / f"{GENERATOR}.json")
    (tmp_path / "outcomes").symlink_to(RESULTS_DIR / "outcomes")
    result = json.loads((tmp_path / f"{GENERATOR}.json").read_text())
    result["rows"][0]["exact_match@8"] += 0.01  # one point by hand
    (tmp_path / f"{GENERATOR}.json").write_text(json.dumps(result))
    _, _, bad = recompute(GENERATOR, tmp_path)
    assert any("exact_match@8 recomputes" in b for b in bad)
