"""The select/report halves of real val: disjoint, by theorem, reproducible, loadable as splits."""
from __future__ import annotations

import json

from prover.data.dataset import Dataset
from prover.data.halves import HALVES_FILE, SEED, make_halves, theorem_key
from tests.conftest import require


def test_committed_halves_are_the_seeded_cut_of_real_val(data_root):
    ds = Dataset(require(data_root / "mathlib-src"))
    val = ds.theorems("leandojo-real/val")
    committed = json.loads(HALVES_FILE.read_text())
    assert committed["seed"] == SEED and committed["n_theorems"] == len(val) == 348
    assert make_halves(val, SEED) == {"select": committed["select"], "report": committed["report"]}
    select, report = set(committed["select"]), set(committed["report"])
    assert not select & report  # no theorem on both sides
    assert select | report == {theorem_key(t) for t in val}
    names = lambda keys: {k.split("::")[1] for k in keys}  # noqa: E731
    assert not names(select) & names(report)  # not even a full name shared across files


def test_halves_load_as_splits_with_half_the_real_tactics_each(data_root):
    ds = Dataset(require(data_root / "mathlib-src"))
    select, report = ds.theorems("leandojo-real/select"), ds.theorems("leandojo-real/report")
    assert ds.has_split("leandojo-real/report") and len(select) + len(report) == 348
    traced = [sum(bool(t.traced_tactics) for t in half) for half in (select, report)]
    tactics = [sum(len(t.traced_tactics) for t in half) for half in (select, report)]
    assert traced == [93, 92] and tactics == [358, 372] and sum(tactics) == 730


def test_a_different_seed_gives_a_different_cut(data_root):
    val = Dataset(require(data_root / "mathlib-src")).theorems("leandojo-real/val")
    assert make_halves(val, SEED)["select"] != make_halves(val, SEED + 1)["select"]


def test_readme_report_numbers_are_the_results_files():
    """docs/results.md's table of report numbers is exactly what the committed results JSON renders."""
    import importlib.util

    from tests.conftest import REPO
    spec = importlib.util.spec_from_file_location("real_halves", REPO / "benchmarks" / "real_halves.py")
    real_halves = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real_halves)
    res = json.loads((REPO / "benchmarks" / "results" / "real-halves-mathlib-src.json").read_text())
    readme = (REPO / "docs" / "results.md").read_text()
    block = readme.split("<!-- real-halves:", 1)[1].split("-->", 1)[1].split("<!-- /real-halves -->")[0]
    assert block.strip() == real_halves.headline(res).strip()
    # and the table's numbers are the rows' own
    assert f"| fusion R@10 † | {res['retrieval']['rows']['fusion']['report']['R@10']} " in block
