"""The benchmark harness: what every script in benchmarks/ takes from one place.

- arguments: `parser(__doc__)` and `add_allow_dirty(p)`, the flag every benchmark that can
  refuse a dirty tree takes;
- config: `load_config` (OmegaConf, a schema plus YAML plus dotlist overrides) and `to_plain`;
- provenance: `require_clean_tree` (call it before any work), `git_commit`, `row_provenance`,
  `machine`, `peak_rss_gib`, and `command_line`, the command a results file records;
- results: `write_results` writes STEM.json and STEM.md under benchmarks/results/ (or the
  folder a run names);
- statistics: the theorem-level paired bootstrap (`paired_intervals`, `mean_interval`,
  `resampled_means`), one seed and one resampling for every results file;
- models: `model_training`, the training record a results file keeps for each model it used
  (the results index marks partial models from it and refuses a named model without it);
- choices: `choose_within_noise`, the project's one rule for a close call (DEVELOPING.md), and
  `corrections_markdown`, how a committed file says what was later found wrong in it.

Scripts are run as `python benchmarks/NAME.py` with the project installed: they import this
package and never edit sys.path, and code two scripts share lives in prover/benchmarking/.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from prover.config import load_config, to_plain
from prover.data.jsonio import write_json
from prover.utils.runinfo import (git_commit, machine, peak_rss_gib, provenance_lines,
                                  require_clean_tree, row_provenance)
from retriever.evaluation.bootstrap import (N_RESAMPLES, SEED, PairedIntervals, mean_interval,
                                            paired_intervals, percentile_interval, resampled_means)

REPO = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO / "benchmarks" / "results"

__all__ = ["REPO", "RESULTS_DIR", "N_RESAMPLES", "SEED", "PairedIntervals", "add_allow_dirty",
           "command_line", "git_commit", "load_config", "machine", "mean_interval", "model_training",
           "paired_intervals", "parser", "peak_rss_gib", "percentile_interval", "provenance_lines",
           "require_clean_tree", "resampled_means", "row_provenance", "to_plain", "write_and_print",
           "write_results"]


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser described by the first line of a script's docstring."""
    return argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)


def add_allow_dirty(p: argparse.ArgumentParser,
                    help: str = "run on uncommitted code or configs; the rows written are marked dirty",
                    ) -> argparse.ArgumentParser:
    """--allow-dirty: pass its value to `require_clean_tree` before any work."""
    p.add_argument("--allow-dirty", action="store_true", help=help)
    return p


def add_run_flags(p: argparse.ArgumentParser, partial_help: str) -> argparse.ArgumentParser:
    """What a benchmark over trained models takes last: --allow-dirty, --allow-partial (a model
    its time budget stopped; `partial_help` says what is then marked) and key=value overrides."""
    add_allow_dirty(p)
    p.add_argument("--allow-partial", action="store_true", help=partial_help)
    p.add_argument("overrides", nargs="*", help="key=value config overrides")
    return p


def command_line(script: str | None = None, argv: list[str] | None = None) -> str:
    """The command a results file records: `python SCRIPT ARGS`. `script` names the script as
    the README runs it (benchmarks/NAME.py) where sys.argv[0] may be another path; `argv`
    replaces sys.argv[1:] for a call from Python."""
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join(["python", script or sys.argv[0], *args])


def write_results(stem: str | Path, result: dict, markdown: str,
                  indent: int | None = None) -> tuple[Path, Path]:
    """STEM.json (the record) and STEM.md (its tables); returns both paths. `indent` keeps a
    file written before the harness in its own layout (selection.json: 1, a final newline)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    json_path, md_path = stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".md")
    if indent is None:
        write_json(json_path, result)
    else:
        json_path.write_text(json.dumps(result, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(markdown, encoding="utf-8")
    return json_path, md_path


def write_and_print(stem: str | Path, result: dict, render: Callable[[dict], str]) -> None:
    """`write_results` with the Markdown rendered by `render`, and the tables printed."""
    text = render(result)
    write_results(stem, result, text)
    print(text)


def model_training(model: str | Path) -> dict | None:
    """The training record (summary.json beside the model folder: steps, planned steps,
    `stopped_by`, commit) of the model at `model`, None when it has none."""
    summary = Path(model).parent / "summary.json"
    return json.loads(summary.read_text()) if summary.exists() else None


def choose_within_noise(shipped: str, best: str, interval: tuple[float, float] | list[float]) -> tuple[str, str]:
    """The option to ship, and why: `best` (the best on select) only when its paired interval
    over `shipped` lies wholly above zero; otherwise `shipped` stays, since a gain inside its
    noise is not a gain. Where nothing is shipped yet, pass the simpler option as `shipped`."""
    lo, hi = interval
    if best == shipped:
        return shipped, f"{shipped} is already the best on select"
    if lo > 0:
        return best, f"{best} − {shipped} is [{lo:+.1f}, {hi:+.1f}] on select: above zero"
    return shipped, (f"{best} − {shipped} is [{lo:+.1f}, {hi:+.1f}] on select: inside the noise, "
                     f"so {shipped} stays")


def corrections_markdown(result: dict) -> list[str]:
    """The Markdown lines of a file's `corrections` (what a later session found wrong in what
    the file says, each with where it was corrected), [] for none. Numbers are never edited."""
    notes = [n if isinstance(n, str) else n.get("note", "") for n in result.get("corrections") or []]
    return (["", "## Corrections", ""] + [f"- {n}" for n in notes]) if notes else []
