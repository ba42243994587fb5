"""The replay search benchmark on traced theorems: outcomes, ceiling, intervals, tables.

THE REPLAY ENVIRONMENT IS A SIMULATOR (prover/env/replay.py): a tactic succeeds only when it is
one a traced proof recorded for that state. Its proof rate is a "replay proof rate", never
pass@1, and every table and file this module writes says so.

Each theorem's search ends in one of these outcomes (from its results record):

- proved: a proof was found;
- no_match: the search tree was exhausted: at every reached state, every generated tactic was
  rejected by the simulator (or led back to a state already seen), so no open state was left;
- budget_expansions / budget_time: open states were left when the expansion or time budget ran
  out (the search might have gone on);
- error: the environment failed to open or crashed, or the workers running it kept dying.

The ceiling row replays the recorded tactics themselves through the same best-first search
(`RecordedTactics` proposes, at each state, every tactic recorded from it, or, with
`focus_goals`, from its first goals): what a generator that always proposed the recorded
tactic could reach in this simulator.
"""
from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import numpy as np

from prover.env.base import ENV_REPLAY, normalize_ws
from prover.env.replay import ReplayConfig, ReplayEnv, split_goals
from prover.search.best_first import ERROR, PROVED, SearchConfig, best_first_search
from prover.search.results import make_record, rate_label
from prover.search.sources import NoPremises, Suggested
from prover.search.theorems import ProofTask

OUTCOMES = ("proved", "no_match", "budget_expansions", "budget_time", "error")
OUTCOME_LABELS = {"proved": "proved", "no_match": "no candidate matched",
                  "budget_expansions": "budget exhausted (expansions)",
                  "budget_time": "budget exhausted (time)", "error": "error"}
CEILING = "recorded tactics (ceiling)"
CEILING_IN_BUDGET = "recorded tactics (this search's budget)"
CEILINGS = (CEILING, CEILING_IN_BUDGET)
RATE_LABEL = f"{rate_label(ENV_REPLAY)} (simulator), not pass@1"


def classify(record: dict) -> str:
    """A results record's outcome (see the module docstring)."""
    if record.get("status") == PROVED:
        return "proved"
    if record.get("status") == ERROR or record.get("error_kind"):
        return "error"
    reason = record.get("stop_reason")
    if reason == "queue_empty":
        return "no_match"
    if reason == "max_expansions":
        return "budget_expansions"
    if reason == "timeout":
        return "budget_time"
    return "error"


class RecordedTactics:
    """A TacticSource that proposes the recorded tactics of a state, not a model: the replay
    ceiling. Each tactic gets log-probability -1 (ties expand first-come), less 0.01 per rank."""

    name = "recorded-tactics"

    def __init__(self, theorems: Sequence, focus_goals: bool = False) -> None:
        self.by_state: dict[str, list[str]] = {}
        for thm in theorems:
            for t in thm.traced_tactics:
                tactics = self.by_state.setdefault(normalize_ws(t.state_before), [])
                if t.tactic not in tactics:
                    tactics.append(t.tactic)
        self.focus_goals = focus_goals

    def recorded(self, state: str) -> list[str]:
        keys = [normalize_ws(state)]
        if self.focus_goals:  # as ReplayEnv's focus_goals: records made on the first goals
            goals = split_goals(state)
            keys += [normalize_ws("\n\n".join(goals[:k])) for k in range(len(goals) - 1, 0, -1)]
        out: list[str] = []
        for key in keys:
            out += [t for t in self.by_state.get(key, []) if t not in out]
        return out

    def suggest(self, requests):
        return [[Suggested(t, -1.0 - 0.01 * i) for i, t in enumerate(self.recorded(state))]
                for state, _premises in requests]


def replay_ceiling(tasks: Sequence[ProofTask], replay: ReplayConfig,
                   search: SearchConfig | None = None, name: str = CEILING) -> list[dict]:
    """Results records of best-first search with each theorem's own recorded tactics proposed,
    every one at each state (in process: no model, milliseconds a theorem). Default budget: no
    expansion limit, 60 s."""
    search = search or SearchConfig(max_expansions=None, timeout_s=60.0)
    out = []
    for task in tasks:
        result = best_first_search(ReplayEnv(task.theorem, replay), NoPremises(),
                                   RecordedTactics([task.theorem], replay.focus_goals), search)
        out.append(make_record(task, result, name, 1, "in-process"))
    return out


def outcome_row(name: str, records: dict[str, dict], keys: Sequence[str]) -> tuple[dict, np.ndarray]:
    """A table row over `keys` (a theorem without a record counts as an error) and its
    per-theorem proved indicator, in `keys` order."""
    outcomes = [classify(records[k]) if k in records else "error" for k in keys]
    proved = np.asarray([o == "proved" for o in outcomes], dtype=np.float64)
    counts = Counter(outcomes)
    searched = [records[k] for k in keys if k in records]
    row = {"row": name, "theorems": len(keys), "recorded": len(searched),
           "proved": int(proved.sum()), "rate": round(float(proved.mean()), 6) if len(keys) else None,
           "outcomes": {o: counts.get(o, 0) for o in OUTCOMES},
           "mean_expansions": round(float(np.mean([r.get("expansions", 0) for r in searched])), 3)
           if searched else None,
           "theorems_with_a_matched_tactic": sum(
               bool((r.get("tree") or {}).get("outcomes", {}).get("new_state")
                    or r.get("status") == PROVED) for r in searched)}
    return row, proved


def add_intervals(rows: list[dict], proved: dict[str, np.ndarray], pairs: Sequence[str]) -> list[dict]:
    """Each row's rate interval, and the paired difference of every two rows named in `pairs`
    (later minus earlier), all from the retrieval benchmark's paired bootstrap over theorems."""
    from retriever.evaluation.bootstrap import mean_interval, paired_intervals
    for row in rows:
        values = proved.get(row["row"])
        if values is not None and len(values):
            lo, hi = mean_interval(values)
            row["rate_ci"] = [round(lo, 6), round(hi, 6)]
    out = []
    for b, a in itertools.combinations([p for p in pairs if p in proved], 2):
        lo, hi = paired_intervals(proved[a], proved[b]).diff
        out.append({"a": a, "b": b, "diff": round(float(proved[a].mean() - proved[b].mean()), 6),
                    "diff_ci": [round(lo, 6), round(hi, 6)]})
    return out


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def markdown(result: dict) -> str:
    s = result["settings"]
    b = result["bootstrap"]
    t = result.get("generator_training") or {}
    trained = (f" ({t['params'] / 1e6:.2f}M parameters, {t['steps']} steps on {t['train_split']}, "
               f"{t.get('cpu_seconds')} CPU-s)" if t.get("steps") is not None else "")
    lines = [f"# Replay proof search (simulator, not pass@1): {result['dataset']} {result['split']}", "",
             "env: replay (a simulator: a tactic succeeds only when a traced proof recorded it for that "
             f"state; focus_goals {'on' if s['focus_goals'] else 'off'}). These numbers test the search "
             "machinery with real proof states; they are not pass@1 and no Lean ran.", "",
             f"{result['n_theorems']} theorems with traced tactics (of {result['n_theorems_in_split']} in the "
             f"split). Search: best-first, {s['num_tactics']} tactics per expansion"
             + (f" (beam {s['num_beams']}, the rest from the tactic pool and the neighbours)" if s.get("num_beams") else "")
             + ", at most "
             f"{s['max_expansions']} expansions and {s['timeout_s']} s per theorem; generator "
             f"`{s['generator']}`{trained}; top {s['k']} premises.", "",
             f"| row | proved | {RATE_LABEL} (%) | no candidate matched | budget: expansions | budget: time "
             "| error | mean expansions | theorems with a matched tactic |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        ci = r.get("rate_ci")
        rate = _pct(r["rate"]) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")
        o = r["outcomes"]
        dirty = " (dirty tree)" if (r.get("provenance") or {}).get("dirty") else ""
        dirty += f" ({r['partial']})" if r.get("partial") else ""  # the generator's, issue 42
        lines.append(f"| {r['row']}{dirty} | {r['proved']} of {r['theorems']} | {rate} | {o['no_match']} "
                     f"| {o['budget_expansions']} | {o['budget_time']} | {o['error']} "
                     f"| {r['mean_expansions']} | {r['theorems_with_a_matched_tactic']} |")
    for name, reason in result.get("absent", {}).items():
        lines.append(f"| {name} | absent: {reason} | | | | | | | |")
    if result.get("comparisons"):
        lines += ["", f"Paired differences of the {RATE_LABEL} (percentage points, 95% bootstrap "
                  f"intervals, {b['resamples']} resamples of the theorems, seed {b['seed']}):", "",
                  "| comparison | difference | 95% interval |", "|---|---|---|"]
        for c in result["comparisons"]:
            lo, hi = c["diff_ci"]
            lines.append(f"| {c['a']} − {c['b']} | {100 * c['diff']:+.1f} | [{100 * lo:+.1f}, {100 * hi:+.1f}] |")
    proved_by = {r["row"]: [t["theorem"] for t in result["per_theorem"] if t.get(r["row"]) == "proved"]
                 for r in result["rows"] if r["row"] not in CEILINGS}
    if any(proved_by.values()):
        lines += ["", "Proved in the simulator:"]
        lines += [f"- {name}: {', '.join(f'`{t}`' for t in names)}" for name, names in proved_by.items() if names]
    lines += ["", f"Brackets: 95% bootstrap intervals ({b['resamples']} resamples of the theorems, seed "
              f"{b['seed']}). Outcomes: no candidate matched = the search tree was exhausted (at every "
              "reached state every generated tactic was rejected by the simulator or led to a state "
              "already seen); budget exhausted = open states were left when the expansion or time "
              "budget ran out; error = the environment failed or a worker kept dying. "
              f"`{CEILING}`: the recorded tactics themselves proposed at every state, through the same "
              f"search ({_ceiling_tactics(result['ceiling_search'])}expansions "
              f"{result['ceiling_search']['max_expansions'] or 'unlimited'}, "
              f"{result['ceiling_search']['timeout_s']} s): the most any generator can prove here; "
              f"`{CEILING_IN_BUDGET}`: the same within the models' search budget. "
              "Per-theorem outcomes of every row are in the JSON file (`per_theorem`).", "",
              *([result["note"], ""] if result.get("note") else []),
              f"Machine: {result['machine'].get('cpu')} ({result['machine'].get('cpu_count')} cores). "
              f"Commit {result['git_commit']}.", f"Command: `{result['command']}`", ""]
    if result.get("corrections"):  # what a later session found wrong here; numbers never edited
        lines += ["", "## Corrections", ""] + [f"- {n if isinstance(n, str) else n.get('note', '')}"
                                                for n in result["corrections"]]
    return "\n".join(lines)


def _ceiling_tactics(search: dict) -> str:
    """Results written before the ceiling tried every recorded tactic capped them per expansion."""
    return f"{search['num_tactics']} tactics per expansion, " if search.get("num_tactics") else "every recorded tactic, "
