"""benchmarks/results/README.md, the index of the results files, rendered from their JSON.

One row per results file: the splits it scored, its role there, the commit and command that
wrote it, the training its rows rest on, and its headline numbers (headlines.py). A role is
`select` (something was chosen on the split), `report` (scored once, nothing chosen there) or
both; a split something was chosen or fitted on is marked †. Where each choice was made comes
from the file's own fields (`fit_split`, `fitted_on`, `chosen_on_select`, `best`, `chosen`,
`selected_on`) and from the settings it used: a file whose tactic-neighbour settings, or whose
fusion's member set, are the ones a selection file chose inherits where they were chosen. The one thing no results file
records, which rows are the shipped system's, is listed in benchmarks/results_index.json.

Models. Every model a file used has a training record (its path, steps done of planned,
`stopped_by`, commit): the rows' `training` (one per stage), `model_training` or
`generator_training`, `trained`, or those of the results files it was computed from (`file`,
`base_file`, a correction's `sources`). A file whose records say a time budget stopped a model is
marked partial, for every stage; a file that names a model (`model`) without its record does not
render (`MissingTrainingRecord`).

Corrections. A later session corrects a committed file by adding to its `corrections`, never by
editing its numbers: a sentence, or an object with a `note` and any of
`models` ({model path: training record}), `sources` (results files it was computed from),
`look` (1 or 2: the how-many-th scoring of its report split this is; a file may also carry its
own top-level `look`), `chosen_on` (splits its
recipe was chosen on, for †), `split` and `role` (where the file's own fields do not say).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from prover.benchmarking.harness import REPO, RESULTS_DIR
from prover.benchmarking.headlines import headline, interval, pct, retrieval_values
from prover.benchmarking.looks import REGISTRY as LOOKS, look_of
from prover.benchmarking.per_query import cell as per_query_cell, layout_files, status as per_query_status
from prover.utils.runinfo import partial_note

RESULTS = RESULTS_DIR
SHIPPED = REPO / "benchmarks" / "results_index.json"
INDEX = RESULTS / "README.md"

_SPLIT_IN_NAME = re.compile(r"(leandojo-real|novel_premises|random)-(val|test|select|report)")
_SPLIT_IN_TEXT = re.compile(r"(?:leandojo-real|novel_premises|random)/(?:train|val|test|select|report)")
# Keys that say a choice was made on the file's own scored split.
_CHOSE_HERE = ("best", "chosen", "chosen_members")


class MissingTrainingRecord(ValueError):
    """A results file names a model whose training record neither it nor its sources hold."""


# A split that contains others: what was chosen on it was chosen on each of them.
_CONTAINS = {"leandojo-real/val": ("leandojo-real/select", "leandojo-real/report")}


def corrected(result: dict, key: str) -> list:
    """The values of `key` in the file's structured corrections, in the order they were added."""
    return [c[key] for c in result.get("corrections") or [] if isinstance(c, dict) and key in c]


def correction_notes(result: dict) -> list[str]:
    """Every correction as a sentence (a structured one by its `note`)."""
    return [c if isinstance(c, str) else c.get("note", "") for c in result.get("corrections") or []]


def load_results(results: Path = RESULTS) -> dict[str, dict]:
    """stem -> parsed JSON of every results file at the top of `results` (not rankings/ etc.)."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(results.glob("*.json"))}


def scored_splits(stem: str, result: dict) -> list[str]:
    if corrected(result, "split"):
        return list(corrected(result, "split")[-1])
    if result.get("split"):
        return [result["split"]]
    if result.get("scored_on"):
        return [result["scored_on"]]
    halves = next((result[k] for k in ("n_queries", "n_examples") if isinstance(result.get(k), dict)), None)
    if halves or result.get("halves_file"):  # the real halves
        return [f"leandojo-real/{half}" for half in halves or ("select", "report")]
    m = _SPLIT_IN_NAME.search(stem)
    return [f"{m[1]}/{m[2]}"] if m else []


def _neighbour_setting(result: dict) -> tuple | None:
    n = result.get("neighbors")
    if isinstance(n, dict) and {"k", "temperature", "weight"} <= set(n):
        return n["k"], n["temperature"], n["weight"]
    return None


def _fusion_members(result: dict) -> set[frozenset]:
    """The member sets of the fitted fusions the file used (its rows' training records, its `members`)."""
    rows = result.get("rows") if isinstance(result.get("rows"), list) else []
    out = {frozenset(f["members"]) for r in rows if isinstance(r, dict)
           for f in [((r.get("training") or {}).get("fusion") or {})] if isinstance(f.get("members"), list)}
    return out | ({frozenset(result["members"])} if isinstance(result.get("members"), list) else set())


def inherited_choices(results: dict[str, dict]) -> dict[str, list[str]]:
    """stem -> splits its recipe's settings were chosen on in another file: the tactic-neighbour
    settings a selection file chose (its `chosen`), or the fusion member set the fusion
    selection chose (`chosen_members`, on its `scored_on`), used by a file that names the same."""
    neighbours, members = {}, {}
    for r in results.values():
        c = r.get("chosen")
        if r.get("benchmark") == "generator_neighbors_selection" and isinstance(c, dict):
            neighbours[(c.get("k"), c.get("temperature"), c.get("weight"))] = r.get("split")
        if isinstance(r.get("chosen_members"), str) and r.get("scored_on"):
            members[frozenset(r["chosen_members"].split("+"))] = r["scored_on"]
    out: dict[str, list[str]] = {}
    for stem, r in results.items():
        if r.get("benchmark") != "generator_neighbors_selection" and (s := _neighbour_setting(r)) in neighbours:
            out.setdefault(stem, []).append(neighbours[s])
        if not r.get("chosen_members"):
            out.setdefault(stem, []).extend(members[m] for m in _fusion_members(r) if m in members)
    return {stem: list(dict.fromkeys(v)) for stem, v in out.items() if v}


def choice_splits(result: dict, scored: list[str]) -> list[str]:
    """Splits something in this file was chosen or fitted on."""
    out = [result[k] for k in ("fit_split", "fitted_on") if isinstance(result.get(k), str)]
    if result.get("chosen_on_select"):
        out.append("leandojo-real/select")
    if any(result.get(k) is not None for k in _CHOSE_HERE):  # on select, where it scored both halves
        out += [s for s in scored if s.endswith("/select")] or scored
    # selection.json says where each choice was made in words ("random/val (fit) and ...").
    out += [s for c in result.get("choices", []) for s in _SPLIT_IN_TEXT.findall(c.get("selected_on", ""))]
    return list(dict.fromkeys(out))


def dagger_splits(result: dict, own: list[str], inherited: list[str] = ()) -> list[str]:
    """Splits the file's recipe was chosen or fitted on, here or elsewhere (†), with the splits
    a chosen-on split contains."""
    out = [*own, *inherited, *(s for c in corrected(result, "chosen_on") for s in c)]
    out += [inner for s in out for inner in _CONTAINS.get(s, ())]
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


def _records_here(result: dict) -> dict[str, dict]:
    """name -> training record, of the models the file itself records."""
    out: dict[str, dict] = {}
    for r in result.get("rows") if isinstance(result.get("rows"), list) else []:
        for stage, rec in (r.get("training") or {}).items() if isinstance(r, dict) else ():
            if isinstance(rec, dict):
                name = stage if out.get(stage, rec) == rec else f"{stage} ({r.get('retriever', '?')})"
                out.setdefault(name, rec)
    for key in ("model_training", "generator_training"):
        if isinstance(result.get(key), dict):
            name = next((m for m in (result[key].get("model"), result.get("model")) if isinstance(m, str)), "generator")
            out.setdefault(name, result[key])
    for name, rec in (result.get("trained") or {}).items():
        if isinstance(rec, dict):
            out.setdefault(name, rec)
    for models in corrected(result, "models"):
        out.update(models)
    return out


def _sources(result: dict) -> list[str]:
    """Stems of the results files this one was computed from."""
    paths = [result[k] for k in ("file", "base_file") if isinstance(result.get(k), str)]
    paths += [p for c in corrected(result, "sources") for p in c]
    return [Path(p).name.removesuffix(".json") for p in paths]


def model_records(stem: str, results: dict[str, dict], seen: frozenset = frozenset()) -> dict[str, dict]:
    """name -> training record of every model the file used, its sources' included."""
    result = results[stem]
    out = _records_here(result)
    for src in _sources(result):
        if src in results and src not in seen | {stem}:
            for name, rec in model_records(src, results, seen | {stem}).items():
                out.setdefault(name, rec)
    model = result.get("model")
    if isinstance(model, str) and model and not any(
            isinstance(result.get(k), dict) for k in ("model_training", "generator_training")) \
            and model not in {n for m in corrected(result, "models") for n in m}:
        raise MissingTrainingRecord(
            f"{stem}.json names the model {model} without its training record: add it as "
            "`model_training`, or as a correction's `models` (prover/benchmarking/results_index.py)")
    return out


def partial_models(stem: str, results: dict[str, dict]) -> list[str]:
    """What the training records of the models the file used say of any its time budget stopped
    before the planned step, for every stage."""
    notes = {f"{name} {note}" for name, rec in model_records(stem, results).items()
             if (note := partial_note(rec))}
    return sorted(notes)


def look_number(result: dict, stem: str | None = None, registry: Path = LOOKS) -> int | None:
    """How many times the file's report (or test) split had been scored when it was: a
    correction's `look`, else the registry of scorings (prover/benchmarking/looks.py), else
    the file's own (written by a script from that registry)."""
    if corrected(result, "look"):
        return corrected(result, "look")[-1]
    counted = look_of(stem, result.get("git_commit"), registry) if stem else None
    return counted or result.get("look")


def looks(result: dict, stem: str | None = None, registry: Path = LOOKS) -> str:
    """"first look"/"second look"/"look N" at the file's report split, as `look_number` counts it."""
    n = look_number(result, stem, registry)
    if not n:
        return ""
    return {1: "first look", 2: "second look"}.get(n, f"look {n}: a later look")


def file_row(stem: str, results: dict[str, dict], inherited: dict[str, list[str]] | None = None,
             results_dir: Path = RESULTS, layouts: dict[str, list[str]] | None = None,
             registry: Path = LOOKS) -> str:
    result = results[stem]
    scored = scored_splits(stem, result)
    chosen = choice_splits(result, scored)
    dagger = dagger_splits(result, chosen, (inherited or {}).get(stem, ()))
    splits = [s + ("†" if s in dagger else "") for s in scored]
    splits += [f"chosen or fitted on {s}†" for s in dagger
               if s not in scored and not any(inner in scored for inner in _CONTAINS.get(s, ()))
               and not any(s in _CONTAINS.get(o, ()) for o in dagger)]
    if corrected(result, "role"):
        roles = corrected(result, "role")[-1]
    else:
        # A file that scores no split records choices made elsewhere, or measures cost (time,
        # memory, throughput, sizing).
        roles = ", ".join(dict.fromkeys(role(s, chosen) for s in scored)) or ("select" if dagger else "measure")
    if not splits:
        splits = ["none (measures cost, no quality scored)"]
    if looks(result, stem, registry):
        roles += f" ({looks(result, stem, registry)})"
    if result.get("corrections"):  # a later session found something wrong in what it says
        roles += f"; {len(result['corrections'])} correction(s) in the file"
    partial = partial_models(stem, results)
    if partial:  # a model's time budget stopped it before the planned step (issues 42, 52)
        roles += "; **partial model**: " + "; ".join(partial)
    kind, what = per_query_status(stem, results, scored, results_dir, layouts)
    if per_query_cell(kind, what):  # what each number averages, or why it is not committed (issue 62)
        roles += f"; {per_query_cell(kind, what)}"
    command = f"`{cell(result['command'])}`" if result.get("command") else "—"
    numbers = "<br>".join(cell(h) for h in headline(result)) or "—"
    trained = budget(result)
    if trained == "—":  # the records a correction added, or the files it was computed from
        trained = "; ".join(dict.fromkeys(_stage(n, r) for n, r in model_records(stem, results).items())) or "—"
    return (f"| [{stem}]({stem}.md) | {result.get('benchmark', '—')} | {'<br>'.join(splits) or '—'} | "
            f"{roles} | {commits(result)} | {command} | {cell(trained)} | {numbers} |")


def shipped_rows(results: dict[str, dict], shipped: list[dict], registry: Path = LOOKS) -> list[str]:
    out = []
    for entry in shipped:
        result = results[entry["file"]]
        mark = " †" if entry.get("dagger") else ""
        n = look_number(result, entry["file"], registry)
        mark += f" ({looks(result, entry['file'], registry)})" if n and n > 1 else ""
        if isinstance(result["rows"], dict):  # the real-val halves' files: row -> {half: R@10, ci}
            half = entry["half"]
            v = result["rows"][entry["row"]][half]
            out.append(f"| {entry['row']}{mark} | leandojo-real/{half} | {v['R@10']} {v['ci']} | "
                       f"[{entry['file']}]({entry['file']}.md) | {short_commit(result.get('git_commit'))} | "
                       f"`{cell(result.get('command', ''))}` | {cell(budget(result))} |")
            continue
        # The retrieval benchmark's rows name a retriever; the structure benchmark's, a member set.
        row = next(r for r in result["rows"] if r.get("retriever", r.get("row")) == entry["row"])
        commit = (row.get("provenance") or {}).get("git_commit", result.get("git_commit"))
        command = (row.get("provenance") or {}).get("command", result.get("command", ""))
        values = (retrieval_values(row) if "metrics" in row
                  else f"{pct(row['R@10'])} {interval(row['R@10 95% CI'], pct)}")
        trained = budget({"rows": [row]}) if "metrics" in row else budget(result)
        if trained == "—":  # the records a correction added
            trained = "; ".join(dict.fromkeys(_stage(n, r) for n, r in model_records(entry["file"], results).items())) or "—"
        out.append(f"| {entry['row']}{mark} | {result['split']} | {cell(values)} | "
                   f"[{entry['file']}]({entry['file']}.md) | {short_commit(commit)} | `{cell(command)}` | "
                   f"{cell(trained)} |")
    return out


HEADER = """# Results index

Rendered by `python benchmarks/results_index.py` from the results JSON in this folder (and, for
which rows are the shipped system's, `benchmarks/results_index.json`); do not edit by hand:
`tests/test_results_index.py` fails when this file differs from the render.

Role: `select` where something was chosen (or the split is a validation half), `report` where
a file only scores, `measure` where it scores no split (time, memory, throughput, sizing). "first look",
"second look" or "look N" says how many times the file's benchmark had scored its report (or test)
split when it wrote the file, any setting counted, as `benchmarks/results/looks.jsonl`, the
registry of scorings, records it (prover/benchmarking/looks.py), or as a correction says.
"per-query data committed": what each number averages (rankings or outcomes per query) is
committed beside the file (`per_query/`, `rankings/`, `outcomes/`, or in the file); "no per-query
data": the file says why, and the command that regenerates them (prover/benchmarking/per_query.py). † marks a split something in the file, or a
setting it uses (the tactic-neighbour settings, chosen on all of leandojo-real/val), was chosen
or fitted on. **partial model**: a model the file used was stopped by its time budget before its
planned step, as its training record says (every stage; records of the files it was computed
from included). Numbers are written as the file's Markdown writes them, each interval with its
unit: `%` (R@10, EM@8, proof rates), `pts` (a paired difference in percentage points), `×` (a
ratio: `÷bm25`), `nats` (a difference of the recorded tactic's log-likelihood). `−best` is the
difference to the best no-learning row and `Δ` the row's paired difference. Intervals are 95%
and resample theorems unless the file says otherwise.
"""


def render(results_dir: Path = RESULTS, shipped_file: Path = SHIPPED) -> str:
    results = load_results(results_dir)
    shipped = json.loads(shipped_file.read_text())["shipped"]
    lines = [HEADER, "## Headline: the shipped first stage", "",
             json.loads(shipped_file.read_text())["description"], "",
             "| row | split | R@10 | file | commit | command | training |",
             "|---|---|---|---|---|---|---|", *shipped_rows(results, shipped, results_dir / LOOKS.name), "",
             "## Every results file", "",
             "| file | benchmark | split | role | commit | command | training budget | headline |",
             "|---|---|---|---|---|---|---|---|"]
    inherited = inherited_choices(results)
    layouts = layout_files(results_dir, list(results))
    registry = results_dir / LOOKS.name
    lines += [file_row(stem, results, inherited, results_dir, layouts, registry) for stem in results]
    return "\n".join(lines) + "\n"
