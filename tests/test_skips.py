"""What the suite may skip (issue 61): from a clone with nothing else, only tests that need Lean,
a browser, a GPU or the full mathlib-src corpus, each saying so first, counted by reason."""
from __future__ import annotations

import json
import re

from tests.conftest import (DATA_ROOT, FIXTURE_DATA, NEEDS_BROWSER, NEEDS_CORPUS, REPO, SKIP_REASONS,
                            SKIPS_PINNED, check_skips, missing_reason, skip_category)


def test_skip_reasons_are_sorted_into_the_allowed_kinds():
    assert skip_category("Skipped: needs a browser: chromium not found") == NEEDS_BROWSER
    assert skip_category(missing_reason(DATA_ROOT / "mathlib-src" / "corpus.jsonl.gz")) == NEEDS_CORPUS
    other = "reference data not found at /x (set PROVER_DATA to the shared data folder)"
    assert skip_category(other) == other  # not an allowed kind: it stays itself, and is flagged


def test_the_full_corpus_skip_names_the_public_command_that_builds_it():
    reason = missing_reason(DATA_ROOT / "mathlib-src" / "leandojo-real" / "val.json")
    assert reason.startswith(NEEDS_CORPUS)
    assert "prover data extract PATH/TO/mathlib4 --out $PROVER_DATA/mathlib-src" in reason
    assert "29dcec07" in reason and "prover data download leandojo-benchmark-4" in reason


def test_a_shipped_set_gone_missing_is_not_an_allowed_skip():
    reason = missing_reason(DATA_ROOT / "mathlib-src-mini")
    assert skip_category(reason) not in SKIP_REASONS and "tests/fixtures/data" in reason


def test_check_skips_flags_new_kinds_and_changed_counts():
    pinned = {"fixtures": {NEEDS_CORPUS: 3}}
    assert check_skips({NEEDS_CORPUS: 3}, pinned, "fixtures") == []
    assert check_skips({NEEDS_CORPUS: 3}, pinned, "shared") == []  # counts pinned for the shipped data only
    assert check_skips({NEEDS_CORPUS: 4}, pinned, "fixtures") == [
        f"4 skips '{NEEDS_CORPUS}', 3 pinned in tests/skips.json (fixtures)"]
    assert check_skips({NEEDS_CORPUS: 3, "no `patch` program": 1}, pinned, "shared") == [
        f"a skip for another reason than {', '.join(SKIP_REASONS)}: 'no `patch` program' (x1)"]


def test_what_the_machine_may_lack_is_pinned_as_a_ceiling():
    """A machine with Lean or a browser runs those tests (fewer skips: fine); a new test that
    skips for the same reason raises the count above the pin and fails."""
    pinned = {"fixtures": {NEEDS_CORPUS: 3, NEEDS_BROWSER: 1}}
    assert check_skips({NEEDS_CORPUS: 3}, pinned, "fixtures") == []
    assert check_skips({NEEDS_CORPUS: 3, NEEDS_BROWSER: 2}, pinned, "fixtures") == [
        f"2 skips '{NEEDS_BROWSER}', 1 pinned at most in tests/skips.json (fixtures)"]
    assert check_skips({NEEDS_CORPUS: 2, NEEDS_BROWSER: 1}, pinned, "fixtures") == [
        f"2 skips '{NEEDS_CORPUS}', 3 pinned in tests/skips.json (fixtures)"]


def test_the_pinned_counts_name_only_allowed_kinds():
    pinned = json.loads(SKIPS_PINNED.read_text())
    for mode in ("fixtures",):
        assert set(pinned[mode] or {}) <= set(SKIP_REASONS), pinned[mode]


def test_every_skip_in_the_suite_says_an_allowed_kind_first():
    """Each `pytest.skip(` in tests/ either goes through `require` (data) or starts its reason
    with an allowed kind; no test uses skipif."""
    for path in sorted((REPO / "tests").glob("*.py")):
        if path.name == "test_skips.py":
            continue
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"pytest\.skip\((.{0,80})", text):
            arg = m.group(1)
            assert any(k in arg for k in ("message", "missing_reason")) or any(
                arg.lstrip("f\"'").startswith(k) for k in SKIP_REASONS), (path.name, arg)
        assert "skipif(" not in text, path.name


def test_the_shipped_sets_are_there_with_their_licences():
    for name, licence in [("mathlib-src-mini", "LICENSE"), ("leandojo-sample", "LICENSE.md"),
                          ("lean-repl", "LICENSE"), ("minif2f", "LICENSE")]:
        assert (FIXTURE_DATA / name / licence).is_file(), name
    readme = (FIXTURE_DATA / "README.md").read_text()
    assert "Apache 2.0" in readme and "CC BY" in readme and "MIT" in readme
    # No shipped file over 5 MB (the biggest are gzipped).
    big = [p for p in FIXTURE_DATA.rglob("*") if p.is_file() and p.stat().st_size > 5 * 2**20]
    assert not big, big
