"""What was tried, on which validation split, and what was chosen: the `selection` results file.

    python benchmarks/selection.py

Reads the committed results files that chose a recipe or a setting and writes
benchmarks/results/selection.{json,md}: for each choice, every candidate tried with its
validation score, the one chosen, and the test file that scored the chosen recipe (once).
Nothing here is measured anew; every number comes from a committed file named beside it, so a
choice can be checked against its source. Test numbers never chose anything: where a test file
exists for a recipe, it was written after the choice on validation.
"""
from __future__ import annotations

import json
import sys

from prover.benchmarking.harness import RESULTS_DIR, write_results

RESULTS = RESULTS_DIR

# CAR recipes A-D of configs/retriever/cpu.yaml: each chose k1 and the fusion weight on
# random/val (car_fusion.py) and was then scored once on random/test.
CAR_RECIPES = {
    # A's test rows lived in retrieval-...-random-test-cpu.json until recipe E rewrote it (git history).
    "A": ("car-fusion-mathlib-src-random-val-cpu", None),
    "B": ("car-fusion-mathlib-src-random-val-cpu-carB", "retrieval-mathlib-src-random-test-cpu-carB"),
    "C": ("car-fusion-mathlib-src-random-val-cpu-carC", "retrieval-mathlib-src-random-test-cpu-carC"),
    "D": ("car-fusion-mathlib-src-random-val-cpu-cfrL", "retrieval-mathlib-src-random-test-cpu-cfrL"),
}


def _load(stem: str) -> dict | None:
    path = RESULTS / f"{stem}.json"
    return json.loads(path.read_text()) if path.exists() else None


def car_choices() -> list[dict]:
    out = []
    for recipe, (val_stem, test_stem) in CAR_RECIPES.items():
        val = _load(val_stem)
        if val is None:
            continue
        tried = [{"k1": r["k1"], "first_stage_weight": r["first_stage_weight"],
                  "val_R@10": r["metrics"]["R@10"]} for r in val["rows"]]
        best = val["best"]
        test = _load(test_stem) if test_stem else None
        out.append({"choice": f"CAR recipe {recipe}: k1 and fusion weight", "selected_on": val["split"],
                    "metric": val.get("metric", "R@10"), "source": f"{val_stem}.json",
                    "commit": val["git_commit"], "tried": tried,
                    "chosen": {"k1": best["k1"], "first_stage_weight": best["first_stage_weight"],
                               "val_R@10": best["metrics"]["R@10"]},
                    "test_file": f"{test_stem}.json" if test else None})
    return out


def other_choices() -> list[dict]:
    out = []
    sizing = _load("reprover-sizing")
    if sizing:
        fits = [r for r in sizing["rows"] if r["ge_cfr_steps"]]
        out.append({"choice": "ReProver-style encoder size (by CPU cost, not by accuracy: the rule is "
                              "at least CFR's steps in 45 CPU-minutes)",
                    "selected_on": "random/train batches (cost only)", "metric": "steps in 45 CPU-minutes",
                    "source": "reprover-sizing.json", "commit": sizing["git_commit"],
                    "tried": [{k: r[k] for k in ("d_model", "num_layers", "max_state_len", "max_premise_len",
                                                 "steps_in_45_cpu_min")} for r in sizing["rows"]],
                    "chosen": "d_model 64, 1 layer, 384/192 bytes (the larger byte budget of the two that fit: "
                              f"{len(fits)} fit)",
                    "test_file": "retrieval-mathlib-src-random-test-cpu.json"})
    real = _load("retrieval-mathlib-src-leandojo-real-val-cpu")
    if real:
        out.append({"choice": "Recipe E (what cpu.yaml trains now): D, with every stage stopping at the steps "
                              "its 45 CPU-minutes buy (LR decay ends there); CAR's k1 and weight kept from D, "
                              "not re-chosen",
                    "selected_on": "nothing new was chosen", "metric": "-",
                    # The commit that trained and scored E's rows (the file's own moves with every resume).
                    "source": "configs/retriever/cpu.yaml",
                    "commit": next(r["provenance"]["git_commit"] for r in real["rows"]
                                   if r["retriever"] == "cfr-conventional"),
                    "tried": [{"validation file (real states)": "retrieval-mathlib-src-leandojo-real-val-cpu.json",
                               "best no-learning row there": real.get("best_no_learning")}],
                    "chosen": "E", "test_file": "retrieval-mathlib-src-random-test-cpu.json"})
    fsel = _load("fusion-selection-mathlib-src")
    if fsel:
        out.append({"choice": "neighbors' k (training states that vote)", "selected_on": "random/val and leandojo-real/val",
                    "metric": "R@10", "source": "fusion-selection-mathlib-src.json", "commit": fsel["git_commit"],
                    "tried": fsel["neighbors_k"], "chosen": f"k = {fsel['chosen_neighbors_k']} (best on both)",
                    "test_file": "retrieval-mathlib-src-random-test-cpu.json"})
        out.append({"choice": "fusion members (fitted on random/val, scored on leandojo-real/val)",
                    "selected_on": "random/val (fit) and leandojo-real/val (score)", "metric": "R@10",
                    "source": "fusion-selection-mathlib-src.json", "commit": fsel["git_commit"],
                    "tried": [{k: v for k, v in r.items() if "CI" not in k} for r in fsel["member_sets"]],
                    "chosen": f"{fsel['chosen_members']}: the highest leandojo-real/val R@10; the sets "
                              "within its noise (intervals in the source) are smaller but lower",
                    "test_file": "retrieval-mathlib-src-random-test-cpu.json"})
    trunc = _load("truncation-mathlib-src-random-val")
    if trunc:
        out.append({"choice": "CFR state truncation side (left keeps the goal)", "selected_on": trunc["split"],
                    "metric": "share of states longer than max_state_len, then val R@10 of recipe D",
                    "source": "truncation-mathlib-src-random-val.json + car-fusion-...-cfrL.json",
                    "commit": trunc["git_commit"],
                    "tried": [{"side": "right", "states_longer": trunc["states_longer_than_max_state_len"]}],
                    "chosen": "left", "test_file": "retrieval-mathlib-src-random-test-cpu-cfrL.json"})
    return out


def markdown(choices: list[dict]) -> str:
    lines = ["# Selection: what was tried on validation, and what was chosen", "",
             "Every number is read from the committed file named in its row (`python benchmarks/selection.py`). "
             "Test splits chose nothing: each chosen recipe was scored on test once, in the file named.", ""]
    for c in choices:
        lines += [f"## {c['choice']}", "",
                  f"Selected on `{c['selected_on']}` by {c['metric']}; source `{c['source']}` (commit {c['commit']}); "
                  f"test: `{c['test_file'] or 'not scored'}`.", ""]
        keys = list(c["tried"][0]) if c["tried"] else []
        lines += ["| " + " | ".join(keys) + " |", "|---" * len(keys) + "|"]
        for t in c["tried"]:
            lines.append("| " + " | ".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in t.values()) + " |")
        lines += ["", f"Chosen: {c['chosen']}", ""]
    return "\n".join(lines)


def main() -> int:
    choices = car_choices() + other_choices()
    write_results(RESULTS / "selection", {"benchmark": "selection", "choices": choices}, markdown(choices), indent=1)
    print(markdown(choices))
    return 0


if __name__ == "__main__":
    sys.exit(main())
