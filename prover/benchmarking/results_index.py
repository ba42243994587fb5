"""benchmarks/results/README.md, the index of the results files, rendered from their JSON.

One row per results file: the splits it scored, its role there, the commit and command that
wrote it, the training its rows rest on, and its headline numbers (headlines.py). A role is
`select` (something was chosen on the split), `report` (scored once, nothing chosen there) or
both; a split something was chosen or fitted on is marked †. Where each choice was made comes
from the file's own fields (`fit_split`, `fitted_on`, `chosen_on_select`, `best`, `chosen`,
`selected_on`); the one thing no results file records, which rows are the shipped system's, is
listed in benchmarks/results_index.json.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from prover.benchmarking.harness import REPO, RESULTS_DIR
from prover.benchmarking.headlines import headline, retrieval_values
from prover.utils.runinfo import partial_note

RESULTS = RESULTS_DIR
SHIPPED = REPO / "benchmarks" / "results_index.json"
INDEX = RESULTS / "README.md"

_SPLIT_IN_NAME = re.compile(r"(leandojo-real|novel_premises|random)-(val|test|select|report)")
_SPLIT_IN_TEXT = re.compile(r"(?:leandojo-real|novel_premises|random)/(?:train|val|test|select|report)")
# Keys that say a choice was made on the file's own scored split.
_CHOSE_HERE = ("best", "chosen", "chosen_members")


def load_results(results: Path = RESULTS) -> dict[str, dict]:
    """stem -> parsed JSON of every results file at the top of `results` (not rankings/ etc.)."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(results.glob("*.json"))}


def scored_splits(stem: str, result: dict) -> list[str]:
    if result.get("split"):
        return [result["split"]]
    if result.get("scored_on"):
        return [result["scored_on"]]
    if isinstance(result.get("n_queries"), dict) or result.get("halves_file"):  # the real halves
        return [f"leandojo-real/{half}" for half in result.get("n_queries") or ("select", "report")]
    m = _SPLIT_IN_NAME.search(stem)
    return [f"{m[1]}/{m[2]}"] if m else []


def choice_splits(result: dict, scored: list[str]) -> list[str]:
    """Splits something in this file was chosen or fitted on."""
    out = [result[k] for k in ("fit_split", "fitted_on") if isinstance(result.get(k), str)]
    if result.get("chosen_on_select"):
        out.append("leandojo-real/select")
    if any(result.get(k) is not None for k in _CHOSE_HERE):
        out += scored
    # selection.json says where each choice was made in words ("random/val (fit) and ...").
    out += [s for c in result.get("choices", []) for s in _SPLIT_IN_TEXT.findall(c.get("selected_on", ""))]
    return list(dict.fromkeys(out))


def role(split: str, chosen: list[str]) -> str:
    if split in chosen or split.endswith(("/select", "/val")):
        return "select"
    return "report" if split.endswith(("/report", "/test")) else "select"


def short_commit(commit: str | None) -> str:
    if not commit:
        return "—"
    dirty = commit.endswith("-dirty")
    return commit.removesuffix("-dirty")[:10] + (" **-dirty**" if dirty else "")


def commits(result: dict) -> str:
    """The file's commit, and any other commit that wrote some of its rows."""
    own = result.get("git_commit")
    rows = result.get("rows") if isinstance(result.get("rows"), list) else []
    others = {r["provenance"]["git_commit"] for r in rows
              if isinstance(r, dict) and isinstance(r.get("provenance"), dict)} - {own}
    out = short_commit(own)
    if others:
        out += "; rows also at " + ", ".join(short_commit(c) for c in sorted(others))
    return out


def _stage(name: str, s: dict) -> str:
    steps = s.get("steps")
    cpu = s.get("cpu_seconds")
    parts = [name] + ([f"{steps} steps"] if steps else []) + ([f"{cpu / 60:.0f} CPU-min"] if cpu else [])
    if s.get("device") and s["device"] != "cpu":
        parts.append(f"on {s['device']}")
    if s.get("stopped_by") == "budget" or s.get("done") is False:
        parts.append("(stopped by its budget)")
    return " ".join(parts)


def budget(result: dict) -> str:
    """What training the file's rows rest on, as recorded; "—" where nothing was trained."""
    if isinstance(result.get("budget"), str):
        return result["budget"]
    stages: dict[str, dict] = {}
    for r in result.get("rows") if isinstance(result.get("rows"), list) else []:
        for name, s in (r.get("training") or {}).items() if isinstance(r, dict) else ():
            if isinstance(s, dict):
                stages.setdefault(name, s)
    for key in ("model_training", "generator_training"):
        if isinstance(result.get(key), dict):
            stages.setdefault("generator", result[key])
    for name, s in (result.get("trained") or {}).items():
        if isinstance(s, dict):
            stages.setdefault(name, s)
    return "; ".join(_stage(n, s) for n, s in stages.items()) or "—"


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def partial_models(result: dict) -> list[str]:
    """What the file's model-training records say of a model its time budget stopped (files
    written before results rows said so themselves)."""
    return [note for key in ("model_training", "generator_training")
            if isinstance(result.get(key), dict) and (note := partial_note(result[key]))]


def file_row(stem: str, result: dict) -> str:
    scored = scored_splits(stem, result)
    chosen = choice_splits(result, scored)
    splits = [s + ("†" if s in chosen else "") for s in scored]
    splits += [f"chosen or fitted on {s}†" for s in chosen if s not in scored]
    roles = ", ".join(dict.fromkeys(role(s, chosen) for s in scored)) or "—"
    if result.get("corrections"):  # a later session found something wrong in what it says
        roles += f"; {len(result['corrections'])} correction(s) in the file"
    partial = partial_models(result)
    if partial:  # its model's time budget stopped it before the planned step (issue 42)
        roles += "; **partial model**: " + "; ".join(partial)
    command = f"`{cell(result['command'])}`" if result.get("command") else "—"
    numbers = "<br>".join(cell(h) for h in headline(result)) or "—"
    return (f"| [{stem}]({stem}.md) | {result.get('benchmark', '—')} | {'<br>'.join(splits) or '—'} | "
            f"{roles} | {commits(result)} | {command} | {cell(budget(result))} | {numbers} |")


def shipped_rows(results: dict[str, dict], shipped: list[dict]) -> list[str]:
    out = []
    for entry in shipped:
        result = results[entry["file"]]
        mark = " †" if entry.get("dagger") else ""
        if isinstance(result["rows"], dict):  # the real-val halves' files: row -> {half: R@10, ci}
            half = entry["half"]
            v = result["rows"][entry["row"]][half]
            out.append(f"| {entry['row']}{mark} | leandojo-real/{half} | {v['R@10']} {v['ci']} | "
                       f"[{entry['file']}]({entry['file']}.md) | {short_commit(result.get('git_commit'))} | "
                       f"`{cell(result.get('command', ''))}` | {cell(budget(result))} |")
            continue
        row = next(r for r in result["rows"] if r.get("retriever") == entry["row"])
        commit = (row.get("provenance") or {}).get("git_commit", result.get("git_commit"))
        command = (row.get("provenance") or {}).get("command", result.get("command", ""))
        out.append(f"| {entry['row']}{mark} | {result['split']} | {cell(retrieval_values(row))} | "
                   f"[{entry['file']}]({entry['file']}.md) | {short_commit(commit)} | `{cell(command)}` | "
                   f"{cell(budget({'rows': [row]}))} |")
    return out


HEADER = """# Results index

Rendered by `python benchmarks/results_index.py` from the results JSON in this folder (and, for
which rows are the shipped system's, `benchmarks/results_index.json`); do not edit by hand:
`tests/test_results_index.py` fails when this file differs from the render.

Role: `select` where something was chosen (or the split is a validation half), `report` where
a file only scores. † marks a split something was chosen or fitted on. Numbers are written as
the file's Markdown writes them: R@10, EM@8 and proof rates in percent with 95% intervals;
`÷bm25` is the ratio interval, `−best` the difference to the best no-learning row and `Δ` the
row's paired difference, both in points.
"""


def render(results_dir: Path = RESULTS, shipped_file: Path = SHIPPED) -> str:
    results = load_results(results_dir)
    shipped = json.loads(shipped_file.read_text())["shipped"]
    lines = [HEADER, "## Headline: the shipped first stage", "",
             json.loads(shipped_file.read_text())["description"], "",
             "| row | split | R@10 | file | commit | command | training |",
             "|---|---|---|---|---|---|---|", *shipped_rows(results, shipped), "",
             "## Every results file", "",
             "| file | benchmark | split | role | commit | command | training budget | headline |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [file_row(stem, result) for stem, result in results.items()]
    return "\n".join(lines) + "\n"
