"""One lent-GPU run of the tactic generator (issue 38): pack the data here, train and score there.

    python benchmarks/device_generator.py pack --config configs/generator/device.yaml   # here, on CPUs
    python benchmarks/device_generator.py plan --deadline 570                          # dry run
    bash benchmarks/on_device_generator.sh 570                                         # on the lent machine
    python benchmarks/device_generator.py land <files_at>/results.tgz                  # here, afterwards (+ the model)

`pack` writes `.devcarry/gen/` (ignored; the device tool carries it): the tactic-level training
pairs as `generator.data` builds them (decoupled random-premise augmentation), the model's tactic
pool, and for every state that will be scored -- each tactic of the EM splits, and every state the
replay simulator can reach from the replay split's theorems -- the premises the fusion retrieves
and the tactic neighbours' answers. So the device needs no corpus, index, Ray or bm25s: only torch,
transformers, and omegaconf from a carried wheel.

`plan` is the dry run: what travels (checkout + carried folders, against the tool's 64 MiB) and
the planned seconds of each phase (against one call's 600 s). It exits 1 when either is over.

Since issue 54 the training inputs copy the test inputs (`lease.match_retrieval`): every example
shows premises, up to `lease.retriever.k` cut by the same byte budget, a gold tactic's premises hidden at
the rate the fusion misses them on `lease.rate_split` (select), negatives for a tactic without
known premises; each pair also carries its bare input (the state alone) for a no-premise model.

`run` (what the shell script calls there), each phase checking the deadline, results written after
every row so a stopped run still returns rows:
0. the ceiling: a bf16 matrix product timed in the call (generator/lease_train.py);
1. sizing: each step variant of `lease.variants` (attention path, compile, autocast) on one size,
   then each of `lease.sizes` with the fastest, trained a few steps on real batches: examples/s,
   FLOPs counted, share of the ceiling; the largest size whose throughput sees `lease.min_epochs`
   of the pairs in `lease.train_seconds` is trained (the sizing table is a result of its own);
2. training: from scratch in the lean loop (generator/lease_train.py), its linear schedule ending
   at the step the measured throughput plans, at most `lease.epochs` (the time budget only a
   guard: `stopped_by` says which ended it); the model's bf16 weights then written as parts of at
   most `lease.part_mib` under `--parts` ($OUT; generator/parts.py), and, if time is left, a
   second model on the bare inputs for the same steps;
3. exact match on the first eval split (report): the mixture with the neighbours (as shipped)
   and the model alone, each with premises none / gold / the fusion's top k; the neighbours alone
   (no model); the no-premise model, mixed and alone; intervals over theorems
   (benchmarks/tactic_generator.py's tables, plus the pairs that separate the parts);
4. replay search (a simulator, never pass@1) on the replay split, premises fusion and none, in
   one process: searches on threads, their generator calls batched (prover/utils/batching.py);
5. exact match on the other eval splits (select), if time is left.

The fusion is the shipped first stage WITHOUT its CFR member (`lease.retriever.name`, bm25+usage+
neighbors-tactic: no trained CFR travels); every row names it.
"""
from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import MISSING, OmegaConf

from generator.lease_train import StepVariant
from generator.settings import GenerateConfig, GeneratorTrainConfig, ModelConfig
from prover.benchmarking.device_travel import CALL_LIMIT_S, MIB, TRAVEL_LIMIT, Clock, folder_bytes, travelling_bytes
from prover.benchmarking.harness import parser, write_results
from prover.config import load_yaml
from prover.data.jsonio import iter_jsonl, load_json, write_json, write_jsonl
from prover.search.best_first import SearchConfig
from prover.utils.byt5 import ByT5Size
from prover.utils.logs import setup_logging
from retriever.settings import RetrieverConfig

REPO = Path(__file__).resolve().parents[1]

log = logging.getLogger("benchmarks.device_generator")

PACK = REPO / ".devcarry" / "gen"


@dataclass
class SizeSpec(ByT5Size):
    """One candidate size of `lease.sizes`: the ByT5Size it extends, its decoder and a name."""

    name: str = MISSING
    num_decoder_layers: int = MISSING


@dataclass
class LeaseConfig(GenerateConfig):
    """The device run's own settings (configs/generator/device.yaml `lease:`), generating as the
    GenerateConfig it extends says (num_tactics and num_beams: the replay search's per expansion)."""

    train_seconds: float = 270.0
    min_epochs: float = 1.0
    sizes: list[SizeSpec] = field(default_factory=list)  # empty: train `model:` as it is
    probe_steps: int = 8
    eval_splits: list[str] = field(default_factory=lambda: ["leandojo-real/report", "leandojo-real/select"])
    exact_match_at: int = 8  # the n of the EM@n rows (the CPU benchmark's num_tactics)
    eval_batch_size: int = 64
    max_examples: int = 0  # per eval split (0: all), a fixed seeded subset
    replay_split: str | None = "leandojo-real/report"
    replay_rows: list[str] = field(default_factory=lambda: ["fusion", "none"])
    replay_limit: int = 0  # theorems (0: all with traced tactics)
    replay_threads: int = 32
    num_tactics: int = 32  # per expansion (the device run's setting; replay_real.yaml keeps 8)
    num_beams: int | None = 8
    # The replay search's budget per theorem. Its time is longer than the CPU runs' 60 s: here a
    # search's generator calls wait in a batch with 31 others, so its wall time says little; the
    # expansion budget is the limit that binds.
    search: SearchConfig = field(default_factory=lambda: SearchConfig(max_expansions=16, timeout_s=300.0))
    max_reachable_states: int = 400  # per replay theorem, when packing
    # The premises shown, as search builds them (its name and its top k): the shipped first stage
    # without its CFR member (no trained CFR travels); every row names it.
    retriever: RetrieverConfig = field(default_factory=lambda: RetrieverConfig(name="bm25+usage+neighbors-tactic"))
    tag: str = ""  # names a second run's files (<stem>-device-<tag>.*)
    note: str = ""  # said in every results file of the run (a second look at a split, say)
    # Seconds kept after training for the report EM rows and the replay (the run shortens
    # training, never these, when the deadline is near).
    score_seconds: float = 200.0
    # The training step (issue 54, generator/lease_train.py): each variant is probed on
    # `variant_size` (default: the first size), the fastest in the budget (its warm-up, compile
    # included, counted) trains; then each size is probed with it.
    variants: list[StepVariant] = field(default_factory=lambda: [StepVariant()])
    variant_size: str = ""
    bucket: bool = True  # length-bucketed batches (false: random batches, padded to their longest)
    pad_multiple: int = 8
    epochs: float = 2.0  # training ends here if the budget allows more (0: the budget alone)
    # Training inputs like test inputs (pack): premises on every example, as many as the fusion's
    # top `k` that fit (augment.max_premises is set to k), a tactic with gold premises shown none
    # of them at the rate the fusion misses them on `rate_split`, and a tactic without known
    # premises shown negatives (augment.without_premises: negatives). false: `augment:` as written.
    match_retrieval: bool = True
    rate_split: str = "leandojo-real/select"
    # A second model trained on the bare states (no premises) for the same steps, when the
    # deadline leaves its training and its rows the time (else the files say why it is absent).
    bare_model: bool = True
    # The trained model comes back in bf16 parts (generator/parts.py) beside the archives.
    return_model: bool = True
    part_mib: float = 16.0
    return_mib: float = 60.0  # of the tool's 64 MiB, the archives keep the rest
    # The bf16 matrix product timed in the call as the ceiling (n x n x n; 0: the device's default).
    ceiling_n: int = 0


@dataclass
class DeviceGeneratorConfig(GeneratorTrainConfig):
    lease: LeaseConfig = field(default_factory=LeaseConfig)


# `lease:` keys that became the retriever choice's and the search budget's own settings.
NESTED = {"fusion": "retriever.name", "k": "retriever.k", "max_expansions": "search.max_expansions",
          "search_timeout_s": "search.timeout_s"}


def load(path: str | Path, overrides: list[str] | None = None) -> Any:
    file_cfg, cli = load_yaml(str(path)), OmegaConf.from_dotlist(list(overrides or []))
    for source, node in ((str(path), file_cfg), ("the command line", cli)):
        section = node.get("lease") if OmegaConf.is_dict(node) else None
        for old in (k for k in NESTED if OmegaConf.is_dict(section) and k in section):
            raise SystemExit(f"lease.{old} in {source} is now lease.{NESTED[old]} (the retriever choice "
                             f"and the search budget are their own settings)")
    return OmegaConf.merge(OmegaConf.structured(DeviceGeneratorConfig), file_cfg, cli)


def read_rows(path: Path) -> list:
    return [row for _, row in iter_jsonl(path)]


# ---------------------------------------------------------------------------------------------
# pack (here)

def reachable_states(theorem: Any, focus_goals: bool, cap: int) -> list[str]:
    """Every state the replay simulator can reach from `theorem`'s initial state by its recorded
    tactics (breadth first, at most `cap`): the only states a replay search can ever ask about."""
    from collections import deque

    from prover.env.base import State, normalize_ws
    from prover.env.replay import ReplayConfig, ReplayEnv
    env = ReplayEnv(theorem, ReplayConfig(focus_goals=focus_goals))
    env.open()
    seen = {normalize_ws(env.initial_state.text): env.initial_state}
    queue = deque([env.initial_state])
    while queue and len(seen) < cap:
        state = queue.popleft()
        for tactic in env.recorded_tactics(state):
            after = env.run_tactic(state, tactic)  # a State, or the proof's end
            if isinstance(after, State) and normalize_ws(after.text) not in seen and len(seen) < cap:
                seen[normalize_ws(after.text)] = after
                queue.append(after)
    return [s.text for s in seen.values()]


def retrieval_match(rows: list[dict], corpus: Any, cfg: Any) -> dict:
    """What the fusion shows at test time on `rows` (packed eval rows): premises per input after
    the byte budget, for names and for name + statement, and how often a tactic with gold
    premises finds one among those shown (the rate the training inputs copy)."""
    from generator.inputs import format_input
    by_name = {p.full_name: p for p in corpus.premises}
    kept = {"name": [], "full": []}
    hit, with_gold = 0, 0
    for r in rows:
        ps = [by_name[n] for n in r["fusion"] if n in by_name]
        for text in kept:
            kept[text].append(format_input(r["state"], ps, cfg.input.max_bytes, text, cfg.input.max_state_bytes)[1])
        if r["gold"]:
            with_gold += 1
            shown = {p.full_name for p in ps[: kept[cfg.input.premise_text][-1]]}
            hit += bool(shown & set(r["gold"]))
    n = max(len(rows), 1)
    return {"tactics": len(rows), "with_gold": with_gold,
            "premises_shown_mean": round(float(np.mean(kept[cfg.input.premise_text] or [0])), 3),
            "premises_shown_mean_by_text": {t: round(float(np.mean(v or [0])), 3) for t, v in kept.items()},
            "gold_shown_given_gold": round(hit / max(with_gold, 1), 4),
            "inputs_with_gold": round(hit / n, 4)}


def gold_survival(cfg: Any, ds: Any, corpus: Any, n_theorems: int = 400) -> float:
    """Of the training tactics shown a gold premise, the share whose input still holds one after
    the byte budget (the list is shuffled, so a cut can take every positive), on the first
    `n_theorems` of the training split: the training rate is the test rate divided by it."""
    from generator.augment import augment_examples
    from prover.data.tactic_steps import tactic_level
    theorems = ds.theorems(cfg.train_split)[:n_theorems]
    if OmegaConf.select(cfg, "data.granularity", default="statement") == "tactic":
        theorems, _ = tactic_level(theorems, cfg.input.max_target_bytes)
    aug = OmegaConf.to_object(cfg.augment)
    aug.positive_rate = 1.0
    _, st = augment_examples(theorems, corpus, aug, cfg.seed, cfg.input.max_bytes, progress=False,
                             premise_text=cfg.input.premise_text, max_state_bytes=cfg.input.max_state_bytes)
    return st.gold_kept / max(st.with_positives, 1)


def pack(cfg: Any, out: Path) -> dict:
    """Build the device run's data in `out` (see the module docstring); return its manifest."""
    from generator.data import build_split, data_path
    from generator.evaluate import eval_examples
    from generator.inputs import format_input
    from generator.model import frequent_targets
    from generator.neighbors import FrozenNeighbors, training_neighbors
    from prover.data.dataset import Dataset
    from prover.env.base import normalize_ws
    from prover.search.theorems import load_source
    from prover.utils.runinfo import git_commit
    from retriever.base import TheoremContext
    from retriever.registry import build_retriever
    from retriever.settings import RetrieverConfig

    t0 = time.perf_counter()
    lease = cfg.lease
    out.mkdir(parents=True, exist_ok=True)
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    corpus = ds.corpus()

    # The theorems scored: EM examples of each eval split (and of the split the training inputs
    # copy their rate from), and the replay split's traced theorems.
    splits: dict[str, list] = {}
    measured = [*lease.eval_splits, *([lease.rate_split] if lease.match_retrieval else [])]
    for split in dict.fromkeys(measured):
        splits[split] = eval_examples(ds.theorems(split), corpus, lease.max_examples, cfg.seed)
    tasks = []
    if lease.replay_split:
        tasks = [t for t in load_source(str(cfg.data.root), lease.replay_split) if t.theorem.traced_tactics]
        if lease.replay_limit:
            tasks = tasks[: lease.replay_limit]
    evaluated = {f"{e.file_path}::{e.theorem}" for exs in splits.values() for e in exs} | {t.key for t in tasks}

    # Every (theorem, state) asked about, with the theorem's context for the fusion's accessible premises.
    asked: dict[tuple[str, str], tuple[str, Any]] = {}
    for exs in splits.values():
        for e in exs:
            asked.setdefault((f"{e.file_path}::{e.theorem}", normalize_ws(e.state)), (e.state, e.context))
    replay_rows = []
    for task in tasks:
        thm = task.theorem
        ctx = TheoremContext(thm.file_path, thm.start) if thm.file_path in corpus.file_index else None
        states = reachable_states(thm, True, lease.max_reachable_states)
        for s in states:
            asked.setdefault((task.key, normalize_ws(s)), (s, ctx))
        replay_rows.append({"key": task.key, "theorem": thm.to_json(), "states": len(states)})
    log.info("pack: %d states to retrieve for (%d replay theorems)", len(asked), len(tasks))

    live = training_neighbors(cfg)
    left_out = live.exclude(evaluated)
    frozen = FrozenNeighbors.freeze(live, [s for s, _ in asked.values()])

    # As search builds it (prover/search/components.py): the retriever choice, whose `exclude`
    # keeps any prior from counting the proof of a theorem it is scored on.
    choice = replace(OmegaConf.to_object(lease.retriever), usage_split=cfg.train_split,
                     training_data=str(cfg.data.root), exclude=tuple(sorted(evaluated)))
    retriever = build_retriever(choice.name, corpus, choice)
    items = list(asked.items())
    premises: dict[str, list[str]] = {}
    for lo in range(0, len(items), 64):
        chunk = items[lo: lo + 64]
        ranked = retriever.retrieve([s for _, (s, _) in chunk], choice.k, [c for _, (_, c) in chunk])
        for ((key, norm), _), hits in zip(chunk, ranked):
            premises[f"{key}\n{norm}"] = [h.premise.full_name for h in hits]

    eval_rows = {split: [{"key": e.key, "theorem": e.theorem, "file_path": e.file_path, "state": e.state,
                          "tactic": e.tactic, "gold": [corpus.premises[i].full_name for i in e.gold],
                          "fusion": premises[f"{e.file_path}::{e.theorem}\n{normalize_ws(e.state)}"]}
                         for e in exs] for split, exs in splits.items()}
    for split in lease.eval_splits:
        write_jsonl(out / f"eval-{split.replace('/', '-')}.jsonl.gz", eval_rows[split])

    # Training inputs like test inputs (issue 54): the rate measured on the selection split only.
    match = None
    if lease.match_retrieval:
        match = {"split": lease.rate_split, **retrieval_match(eval_rows[lease.rate_split], corpus, cfg)}
        cfg.augment.max_premises = choice.k
        cfg.augment.without_premises = "negatives"
        match["train_gold_survival"] = round(gold_survival(cfg, ds, corpus), 4)
        cfg.augment.positive_rate = round(min(1.0, match["gold_shown_given_gold"] / max(match["train_gold_survival"], 1e-6)), 4)
        log.info("pack: training inputs as %s's fusion shows them: %s", lease.rate_split, match)
    train_path, train_stats = build_split(cfg, cfg.train_split, ds, corpus)
    rows = [r for _, r in iter_jsonl(data_path(cfg, cfg.train_split))]
    # Each pair with its bare input too (the state alone): the no-premise model trains on it.
    bare = [format_input(r["state"], [], cfg.input.max_bytes, cfg.input.premise_text, cfg.input.max_state_bytes)[0]
            for r in rows]
    inputs, tactics = [r["input"] for r in rows], [r["tactic"] for r in rows]
    write_jsonl(out / "train.jsonl.gz", [[i, t, b] for i, t, b in zip(inputs, tactics, bare)])
    pool = frequent_targets(tactics, cfg.train.pool_size) if cfg.train.pool_size else []
    log.info("pack: %d training pairs (%s)", len(inputs), train_path)

    write_json(out / "lookup.json.gz", {"neighbors": frozen.to_json(), "premises": premises, "replay": replay_rows})
    manifest = {
        "git_commit": git_commit(), "dataset": Path(str(cfg.data.root)).name,
        "config": OmegaConf.to_container(cfg, resolve=True), "train_pairs": len(inputs),
        "augment": train_stats, "retrieval_match": match, "pool": pool, "fusion": choice.name,
        "eval_splits": {s: {"examples": len(eval_rows[s]), "theorems": len({x["key"].rsplit("#", 1)[0] for x in eval_rows[s]}),
                            "with_gold": sum(bool(x["gold"]) for x in eval_rows[s])} for s in lease.eval_splits},
        "replay_split": lease.replay_split, "replay_theorems": len(tasks),
        "replay_states": sum(r["states"] for r in replay_rows), "neighbor_states_left_out": left_out,
        "states": len(asked), "seconds": round(time.perf_counter() - t0, 1),
    }
    write_json(out / "manifest.json", manifest)
    log.info("pack: %s written in %.0f s (%.1f MiB)", out, manifest["seconds"], folder_bytes(out) / MIB)
    return manifest


# ---------------------------------------------------------------------------------------------
# plan (here): the dry run

START_S = 140.0  # issue 38's second lease: the script's start to the run's first line (install, imports, pack read)
PROBE_S = 6.0  # one sizing probe there (a model build and probe_steps + 2 steps)
COMPILE_S = 60.0  # a compiled variant's warm-up: a guess, not yet measured on that machine


def planned_phases(cfg: Any, deadline: float) -> dict[str, float]:
    """Seconds per phase of one call, from issue 38's leases where measured (START_S, PROBE_S;
    its report EM rows took about 15 s each). The premise model trains on what the deadline
    leaves after scoring (at most `lease.train_seconds`, ending sooner at `lease.epochs`); the
    no-premise model gets the same steps only if time is left after it: its line says what it
    would need."""
    lease = cfg.lease
    variants = list(lease.variants) or [StepVariant()]
    compiled = sum(bool(v.compile) for v in variants)
    # A warm-up probe, one per variant, one per size but the variants' own.
    sizing = (PROBE_S * (len(variants) + len(lease.sizes)) + COMPILE_S * compiled) if lease.sizes else 0.0
    phases = {"start (install, imports, pack)": START_S, "bf16 ceiling": 5.0, "sizing": sizing}
    tail = lease.score_seconds + 20.0 + (10.0 if lease.return_model else 0.0)
    left = deadline - sum(phases.values()) - tail
    phases["train (premises)"] = max(0.0, min(lease.train_seconds, left))
    phases["model parts"] = 10.0 if lease.return_model else 0.0
    if lease.bare_model:
        phases["train (no premises, same steps: only if time is left)"] = max(0.0, left - phases["train (premises)"])
    phases["score: report EM + replay"] = lease.score_seconds
    phases["pack results"] = 20.0
    return phases


def size_params(cfg: Any) -> dict[str, int]:
    """Parameters of each of `lease.sizes` (built on the meta device: no memory, no time)."""
    import torch
    from generator.model import fresh_model
    out = {}
    for spec in cfg.lease.sizes:
        with torch.device("meta"):
            model = fresh_model(_spec_model(spec))
        out[spec.name] = sum(p.numel() for p in model.parameters())
    return out


def plan(cfg: Any, deadline: float, pack_dir: Path) -> int:
    carry = [pack_dir, REPO / ".whl"]
    total, parts = travelling_bytes(REPO, carry)
    big = sorted(parts.items(), key=lambda kv: -kv[1])[:6]
    print(f"travels: {total / MIB:.1f} MiB of the device tool's {TRAVEL_LIMIT // MIB} MiB")
    for name, n in big:
        print(f"  {n / MIB:7.1f} MiB  {name}")
    phases = planned_phases(cfg, deadline)
    print(f"phases (deadline {deadline:.0f} s, one call at most {CALL_LIMIT_S} s):")
    for name, s in phases.items():
        print(f"  {s:6.0f} s  {name}")
    both = phases["train (premises)"] + phases.get("train (no premises, same steps: only if time is left)", 0.0)
    if cfg.lease.bare_model and cfg.lease.epochs > 0:
        pairs = json.loads((pack_dir / "manifest.json").read_text())["train_pairs"] if (pack_dir / "manifest.json").exists() else None
        need = f"{2 * cfg.lease.epochs * pairs / both:.0f} examples/s" if pairs else "a rate known once packed"
        print(f"  the no-premise model trains only if the first reaches {cfg.lease.epochs:g} epochs in "
              f"{both / 2:.0f} s or less ({need})")
    print(f"back ({cfg.lease.return_mib} MiB for the model's bf16 parts of {cfg.lease.part_mib} MiB):")
    for name, n_params in size_params(cfg).items():
        mib = 2 * n_params / MIB
        print(f"  {name:12s} {n_params / 1e6:7.1f}M  {mib:6.1f} MiB  "
              f"{'comes back' if mib <= cfg.lease.return_mib else 'too large to come back'}")
    manifest = pack_dir / "manifest.json"
    print(f"pack: {manifest if manifest.exists() else 'missing (run `pack` first)'}")
    if manifest.exists():
        m = json.loads(manifest.read_text())
        if m.get("retrieval_match"):
            a = m["augment"]
            print(f"  test inputs ({m['retrieval_match']['split']}): {m['retrieval_match']['premises_shown_mean']} premises, "
                  f"gold among them for {m['retrieval_match']['inputs_with_gold']:.1%}; training inputs: "
                  f"{a.get('premises_shown_mean')} premises, gold among them for "
                  f"{a.get('inputs_with_gold', 0) / max(a['examples'], 1):.1%}")
    ok = total <= TRAVEL_LIMIT and deadline <= CALL_LIMIT_S - 30 and manifest.exists()
    if total > TRAVEL_LIMIT:
        print("over the limit: `python benchmarks/device_generator.py hide` takes the committed rankings "
              "out of the call (and `restore` puts them back after it)")
    return 0 if ok else 1


# The committed rankings (benchmarks/results/rankings, 137 MiB) alone are over the device tool's
# 64 MiB, and the run reads none of them. For the length of a call they are taken out of the index
# and ignored (the files stay where they are), then put back: `hide` before, `restore` after.
HIDDEN = ["benchmarks/results/rankings"]
EXCLUDE_MARK = "# hidden from a device call by benchmarks/device_generator.py hide"


def _git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=REPO, check=True)


def hide() -> None:
    exclude = REPO / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text() if exclude.exists() else ""
    if EXCLUDE_MARK not in text:  # gitignore has no trailing comments: the mark is a line of its own
        exclude.write_text(text + EXCLUDE_MARK + "\n" + "".join(f"/{p}/\n" for p in HIDDEN))
    _git("rm", "-r", "-q", "--cached", "--", *HIDDEN)


def restore() -> None:
    exclude = REPO / ".git" / "info" / "exclude"
    if exclude.exists():
        ours = {EXCLUDE_MARK, *(f"/{p}/" for p in HIDDEN)}
        exclude.write_text("".join(line for line in exclude.read_text().splitlines(keepends=True)
                                   if line.rstrip("\n") not in ours))
    _git("reset", "-q", "--", *HIDDEN)


# ---------------------------------------------------------------------------------------------
# run (there)

def _sync(device: Any) -> None:
    import torch
    if device.type == "cuda":
        torch.cuda.synchronize()


def _spec_model(spec: Any) -> ModelConfig:
    return ModelConfig(**{k: v for k, v in OmegaConf.to_container(spec).items() if k != "name"}, dropout=0.0)


def _probe_one(cfg: Any, spec: Any, variant: StepVariant, inputs: list[str], tactics: list[str], device: Any,
               ceiling: float | None) -> dict:
    """One size under one step variant: `lease.probe_steps` timed steps (after two warm-up
    steps) on batches spread over the epoch as training draws them (random batches pad every
    input to a long one, and a plan made from their rate ended the first lease's training early)."""
    import torch
    from generator.lease_train import Batches, probe, probe_picks
    from generator.model import TacticGenerator, fresh_model
    from generator.settings import InputConfig
    from prover.training.run import set_seed
    lease = cfg.lease
    set_seed(cfg.seed)
    row = {"size": spec.name, **OmegaConf.to_container(spec), "variant": variant.name}
    gen = None
    try:
        gen = TacticGenerator(fresh_model(_spec_model(spec)), InputConfig(**OmegaConf.to_container(cfg.input)), device)
        row["params"] = sum(p.numel() for p in gen.model.parameters())
        batches = Batches(gen, inputs, tactics, cfg.train.batch_size, cfg.seed, lease.bucket, lease.pad_multiple)
        row.update(probe(gen, variant, batches, probe_picks(batches, lease.probe_steps), ceiling))
        # The budget pays for the variant's warm-up (a compile) once.
        usable = max(0.0, lease.train_seconds - row["warmup_s"])
        row["epochs_in_budget"] = round(row["examples_per_s"] * usable / len(inputs), 3)
        if device.type == "cuda":
            row["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
    except torch.OutOfMemoryError:
        row["error"] = "out of memory"
    except Exception as e:  # a variant that cannot run here (a compile failure, say) is a row, not the end
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    finally:
        gen = None  # noqa: F841
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    log.info("sizing: %s", row)
    return row


def measure_variants(cfg: Any, inputs: list[str], tactics: list[str], device: Any, ceiling: float | None
                     ) -> tuple[list[dict], StepVariant]:
    """Each of `lease.variants` on `lease.variant_size` (the first size by default); the one
    that sees the most examples in the training budget, its warm-up paid."""
    lease = cfg.lease
    variants = [StepVariant(**OmegaConf.to_container(v)) for v in lease.variants] or [StepVariant()]
    specs = {s.name: s for s in lease.sizes}
    spec = specs.get(lease.variant_size) or lease.sizes[0]
    # The first probe would also pay for the device's start-up (handles, kernel selection):
    # it is run once before, untimed.
    _probe_one(cfg, spec, variants[0], inputs, tactics, device, ceiling)
    rows = [_probe_one(cfg, spec, v, inputs, tactics, device, ceiling) for v in variants]
    ok = [(r, v) for r, v in zip(rows, variants) if "error" not in r]
    if not ok:
        return rows, variants[0]
    best = max(ok, key=lambda rv: rv[0]["epochs_in_budget"])
    return rows, best[1]


def measure_sizes(cfg: Any, inputs: list[str], tactics: list[str], device: Any, variant: StepVariant | None = None,
                  ceiling: float | None = None, known: list[dict] = ()) -> list[dict]:
    """Examples/s and the share of the bf16 rate of each of `lease.sizes` under `variant`,
    smallest first, until one runs out of memory; a size already probed with it (`known`, the
    variant rows) is not probed again."""
    variant = variant or StepVariant()
    rows = []
    for spec in cfg.lease.sizes:
        seen = [r for r in known if r["size"] == spec.name and r["variant"] == variant.name and "error" not in r]
        row = dict(seen[0]) if seen else _probe_one(cfg, spec, variant, inputs, tactics, device, ceiling)
        rows.append(row)
        if "error" in row:
            break
    return rows


def choose_size(rows: list[dict], min_epochs: float) -> dict | None:
    """The largest size whose budget sees `min_epochs` of the pairs, else the fastest."""
    ok = [r for r in rows if r.get("epochs_in_budget", 0) >= min_epochs]
    if ok:
        return max(ok, key=lambda r: r["params"])
    timed = [r for r in rows if "examples_per_s" in r]
    return max(timed, key=lambda r: r["examples_per_s"]) if timed else None


def sizing_markdown(result: dict) -> str:
    ceiling = result.get("ceiling") or {}
    lines = [f"# Generator sizing on {result['machine'].get('gpu') or 'CPU'} ({result.get('device_kind') or 'no kind given'})",
             "", f"Training steps of batch {result['batch_size']} on the tactic-level pairs "
             f"({result['train_pairs']} pairs), inputs up to {result['max_bytes']} bytes; "
             f"{result['probe_steps']} timed steps after two warm-up steps, FLOPs counted by PyTorch's counter "
             f"on the timed batches. Ceiling: a {ceiling.get('n', '?')}³ bf16 matrix product timed in the same call, "
             f"{ceiling.get('tflops', float('nan')):g} TFLOP/s. Budget: {result['train_seconds']:g} s of training.", "",
             "## Step variants", "",
             "| size | variant | examples/s | TFLOP/s | share of bf16 rate | warm-up s | epochs in budget |",
             "|---|---|---|---|---|---|---|"]

    def cells(r: dict) -> str:
        if "error" in r:
            return f"| {r['error']} | | | | |"
        return (f"| {r['examples_per_s']:.0f} | {r['tflops']:.3g} | {r.get('share_of_bf16_rate', float('nan')):.1%} "
                f"| {r['warmup_s']:.1f} | {r['epochs_in_budget']:.2f} |")
    for r in result.get("variants", []):
        lines.append(f"| {r['size']} | {r['variant']}{' (chosen)' if r['variant'] == result.get('variant') else ''} {cells(r)}")
    lines += ["", "## Sizes", "", "| size | parameters (M) | d_model | layers (enc/dec) | examples/s | TFLOP/s "
              "| share of bf16 rate | warm-up s | epochs in budget | peak GiB |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        params = f"{r['params'] / 1e6:.1f}" if "params" in r else "–"
        lines.append(f"| {r['size']}{' (trained)' if r['size'] == result.get('chosen') else ''} | {params} "
                     f"| {r['d_model']} | {r['num_layers']}/{r['num_decoder_layers']} {cells(r)[:-1]}| {r.get('peak_gib', '–')} |")
    reached = [r for r in result["rows"] if r.get("epochs_in_budget", 0) >= result["min_epochs"]]
    rule = (f"the largest size that sees at least {result['min_epochs']:g} epochs in the budget" if reached else
            f"no size sees {result['min_epochs']:g} epochs in the budget, so the fastest was trained")
    lines += ["", f"Trained: {rule}, with the step variant that sees the most examples in the budget "
              "(its warm-up, a compile included, paid). Commit " + str(result["git_commit"]) + ".", ""]
    return "\n".join(lines)


def train(cfg: Any, inputs: list[str], tactics: list[str], pool: list[str], device: Any, seconds: float,
          examples_per_s: float | None, run_dir: Path, size: str, variant: StepVariant | None = None,
          steps: int | None = None) -> tuple[Any, dict]:
    """Train the generator from scratch (generator/lease_train.py): the linear schedule ends at
    `steps`, else at the step the measured throughput plans for `seconds` (at most
    `lease.epochs`); the time budget is a guard (25% over)."""
    from generator.lease_train import Batches, planned_steps, train_timed
    from generator.model import TacticGenerator
    from generator.settings import InputConfig
    from prover.training.run import set_seed
    lease, bs = cfg.lease, cfg.train.batch_size
    if variant is None:
        variant = StepVariant(**OmegaConf.to_container(lease.variants[0])) if lease.variants else StepVariant()
    if steps is None:
        steps = (planned_steps(examples_per_s, seconds, bs, len(inputs), lease.epochs) if examples_per_s
                 else cfg.train.max_steps or max(1, math.ceil(len(inputs) / bs)))
    warmup = min(cfg.train.warmup_steps, max(1, steps // 10))
    set_seed(cfg.seed)
    gen = TacticGenerator.create(cfg.model, InputConfig(**OmegaConf.to_container(cfg.input)), device)
    gen.pool = list(pool)
    batches = Batches(gen, inputs, tactics, bs, cfg.seed, lease.bucket, lease.pad_multiple)
    run_dir.mkdir(parents=True, exist_ok=True)
    log_file = run_dir / "train_log.jsonl"

    def on_log(row: dict) -> None:
        with log_file.open("a") as f:
            f.write(json.dumps(row) + "\n")
        log.info("train %s: %s", size, row)
    guard = max(1.25 * seconds, seconds + 10)
    done = train_timed(gen, variant, batches, steps, guard, cfg.train.lr, warmup, cfg.train.log_every,
                       cfg.train.weight_decay, on_log)
    summary = {"size": size, "params": sum(p.numel() for p in gen.model.parameters()),
               **{k: v for k, v in done.items() if k != "log"},
               "epochs": round(done["examples"] / max(len(inputs), 1), 3), "train_pairs": len(inputs),
               "batch_size": bs, "train_split": cfg.train_split, "device": str(device),
               "model": OmegaConf.to_container(cfg.model), "input": OmegaConf.to_container(cfg.input),
               "lr": cfg.train.lr, "warmup_steps": warmup, "bucket": lease.bucket, "pad_multiple": lease.pad_multiple}
    write_json(run_dir / "summary.json", summary)
    return gen, summary


def _premise(name: str) -> Any:
    from prover.data.premise import Premise
    return Premise(full_name=name, path="", start=(0, 0), end=(0, 0), kind="", code="", args=(), goal="")


# Row prefixes: the model without its neighbours; the model trained without premises (the rows
# name outcome files too, so no ':' or '/').
ALONE, BARE = "alone-", "bare-"


def em_conditions(fusion: str, bare: bool) -> list[tuple[str, str, bool, str]]:
    """(row, model, mixed with the neighbours, premises) of every EM row, in the order they run:
    the mixture as shipped first (the rows of issue 38), then the model alone, then the model
    trained without premises, which is shown none."""
    rows = [("neighbors", "", True, ""), ("none", "premises", True, "none"), ("gold", "premises", True, "gold"),
            (fusion, "premises", True, "fusion")]
    rows += [(f"{ALONE}{p}", "premises", False, p if p != fusion else "fusion") for p in ("none", "gold", fusion)]
    if bare:
        rows += [(f"{BARE}none", "bare", True, "none"), (f"{BARE}{ALONE}none", "bare", False, "none")]
    return rows


def em_pairs(fusion: str, names: list[str]) -> list[tuple[str, str]]:
    """The comparisons that separate the parts (beside the tables' every-row-against-none):
    premises within the model alone, and the premise model against the no-premise one."""
    pairs = [(f"{ALONE}gold", f"{ALONE}none"), (f"{ALONE}{fusion}", f"{ALONE}none"), (fusion, f"{BARE}none"),
             (f"{ALONE}{fusion}", f"{BARE}{ALONE}none"), ("none", f"{BARE}none"), (f"{ALONE}none", f"{BARE}{ALONE}none"),
             (fusion, f"{ALONE}{fusion}")]
    return [(a, b) for a, b in pairs if a in names and b in names]


def em_split(gen: Any, frozen: Any, split: str, rows: list[dict], ctx: dict, clock: Clock,
             out: Path, bare: Any | None = None) -> None:
    """The EM rows of one split, written after each row (benchmarks/tactic_generator.py's tables):
    the mixture and the model alone, each with premises none / gold / the fusion's, and the model
    trained without premises (`bare`) when there is one."""
    from generator.evaluate import EvalExample, evaluate_condition, exact_match_row
    from prover.benchmarking.generator_tables import add_intervals, markdown, theorem_of, write_outcomes
    from prover.benchmarking.harness import paired_intervals
    from prover.utils.runinfo import row_provenance
    lease = ctx["lease"]
    n = lease.exact_match_at
    examples = [EvalExample(r["theorem"], r["file_path"], None, r["state"], r["tactic"], (), int(r["key"].rsplit("#", 1)[1]))
                for r in rows]
    keys = [r["key"] for r in rows]
    stem = f"generator-{ctx['dataset']}-{split.replace('/', '-')}-device" + (f"-{lease.tag}" if lease.tag else "")
    result = {"benchmark": "generator", "command": ctx["command"], "dataset": ctx["dataset"], "split": split,
              "config": {"num_tactics": n, "k": lease.retriever.k, "conditions": [c[0] for c in em_conditions(ctx["fusion"], True)],
                         "fusion": ctx["fusion"], "lease": OmegaConf.to_container(lease)},
              "git_commit": ctx["commit"], "machine": ctx["machine"], "device_kind": ctx["kind"],
              "model": ctx.get("model_back") or "trained on the device (not kept)", "model_params": ctx["training"]["params"],
              "bare_model_training": ctx.get("bare_training"), "training_throughput": ctx.get("throughput"),
              "pool_size": len(gen.pool), "neighbors": asdict(frozen.cfg), "neighbor_tactics_in_input": 0,
              "instantiate": 0, "premise_bonus": 0.0, "num_beams": None, "model_training": ctx["training"],
              "max_bytes": gen.input_cfg.max_bytes, "n_examples": len(rows),
              "n_with_gold": sum(bool(r["gold"]) for r in rows), "rows": [], "absent": {},
              "frequency": None,
              "neighbors_baseline": {**asdict(frozen.cfg), "n_states": ctx["train_pairs"], "train_split": ctx["train_split"]},
              "note": (f"Run on {ctx['machine'].get('gpu') or 'CPU'} ({ctx['kind'] or 'no kind given'}) by "
                       f"benchmarks/on_device_generator.sh: the model was trained there for this run and not kept. "
                       f"`{ctx['fusion']}` is the shipped first stage without its CFR member (no trained CFR "
                       "travels); its premises and the neighbours' answers were computed ahead, on a CPU."
                       + (f" {lease.note}" if lease.note else ""))}
    per_example: dict[str, dict[str, np.ndarray]] = {}

    def save() -> None:
        add_intervals(result, per_example, n, keys)
        clusters = [theorem_of(k) for k in keys]
        at_n = f"hit@{n}"
        for a, b in em_pairs(ctx["fusion"], list(per_example)):
            for metric, key in ((f"exact_match@{n}", at_n), ("gold_loglik", "loglik")):
                va, vb = per_example[a][key], per_example[b][key]
                result["comparisons"].append({"a": a, "b": b, "metric": metric, "diff": round(float(va.mean() - vb.mean()), 6),
                                              "diff_ci": [round(float(x), 6) for x in
                                                          paired_intervals(va, vb, clusters=clusters).diff]})
        write_results(out / stem, result, markdown(result))

    shown = {"none": [[] for _ in rows], "gold": [[_premise(x) for x in r["gold"]] for r in rows],
             "fusion": [[_premise(x) for x in r["fusion"]] for r in rows]}
    models = {"premises": gen, "bare": bare}
    conditions = em_conditions(ctx["fusion"], bare is not None)
    if lease.bare_model and bare is None:
        for cond, *_ in em_conditions(ctx["fusion"], True):
            if cond.startswith(BARE):
                result["absent"][cond] = ctx.get("bare_absent") or "no model was trained without premises"
    last = 0.0
    for cond, which, mixed, premises in conditions:
        if clock.left() < max(10.0, 1.2 * last):
            result["absent"][cond] = f"the device deadline came first ({clock.elapsed():.0f} s in)"
            log.warning("%s %s: skipped, %.0f s left", split, cond, clock.left())
            continue
        t0 = time.perf_counter()
        if cond == "neighbors":
            row = {"condition": cond, **exact_match_row(examples, (frozen.distribution(e.state) for e in examples), n)}
        else:
            model = models[which]
            model.mix_neighbors = mixed
            try:
                row = {"condition": cond, **evaluate_condition(model, examples, shown[premises], n, lease.eval_batch_size)}
            finally:
                model.mix_neighbors = True
            row.update(model_trained=which, neighbours_mixed=mixed)
        last = time.perf_counter() - t0
        values = row.pop("per_example")
        write_outcomes(out / "outcomes" / f"{stem}-{cond}.jsonl.gz", keys, values)
        per_example[cond] = {m: np.asarray(v, dtype=np.float64) for m, v in values.items()}
        row["provenance"] = row_provenance(ctx["commit"], ctx["command"], result["config"])
        row["device_kind"] = ctx["kind"]
        result["rows"].append(row)
        log.info("%s %s: EM@1 %.3f, EM@%d %.3f (%.0f s)", split, cond, row["exact_match@1"], n, row[f"exact_match@{n}"], last)
        save()
    save()


class PackedPremises:
    """A PremiseSource for one theorem: the fusion's top k, packed per reachable state."""

    def __init__(self, table: dict[str, list[str]], theorem_key: str) -> None:
        self.table = table
        self.key = theorem_key
        self.misses = 0

    def retrieve(self, states: list[str], contexts: list) -> list[list[Any]]:
        from prover.env.base import normalize_ws
        out = []
        for s in states:
            names = self.table.get(f"{self.key}\n{normalize_ws(s)}")
            if names is None:
                self.misses += 1
            out.append([_premise(x) for x in names or []])
        return out


class BatchedTactics:
    """A TacticSource shared by the search threads: their requests run together in batches."""

    def __init__(self, inner: Any, batch_size: int) -> None:
        from prover.utils.batching import Batcher
        self.batcher = Batcher(lambda key, items: inner.suggest(items), max_batch_size=batch_size,
                               max_wait_s=0.005, name="device-generator")

    def suggest(self, requests: list) -> list:
        futures = [self.batcher.submit("gen", r) for r in requests]
        return [f.result() for f in futures]


def replay(gen: Any, lookup: dict, ctx: dict, clock: Clock, out: Path) -> None:
    """Replay search (a simulator, never pass@1) on the packed theorems, one row per premise
    condition, the rows interleaved theorem by theorem so a stopped run leaves them paired."""
    from prover.data.theorem import parse_theorem
    from prover.env.replay import ReplayConfig, ReplayEnv
    from prover.search.best_first import best_first_search
    from prover.search.replay_benchmark import (CEILING_IN_BUDGET, RATE_LABEL, add_intervals, classify, markdown,
                                                outcome_row, replay_ceiling)
    from prover.search.results import make_record
    from prover.search.sources import GeneratorTactics, NoPremises
    from prover.search.theorems import ProofTask
    from prover.env.base import ENV_REPLAY
    from prover.utils.runinfo import row_provenance
    lease = ctx["lease"]
    split = lease.replay_split
    tasks = [ProofTask(parse_theorem(r["theorem"], "pack", i, None, 10 ** 9), "leandojo", split)
             for i, r in enumerate(lookup["replay"])]
    keys = [t.key for t in tasks]
    names = [ctx["fusion"] if r == "fusion" else r for r in lease.replay_rows]
    search = OmegaConf.to_object(lease.search)
    replay_cfg = ReplayConfig(focus_goals=True)
    gen.settings = GenerateConfig(num_tactics=lease.num_tactics, num_beams=lease.num_beams,
                                  batch_size=lease.replay_threads)
    source = BatchedTactics(GeneratorTactics(gen), lease.replay_threads)
    records: dict[str, dict[str, dict]] = {n: {} for n in names}
    misses = {n: 0 for n in names}

    def one(name: str, task: ProofTask) -> None:
        if clock.left() < 15:
            return
        premises = PackedPremises(lookup["premises"], task.key) if name != "none" else NoPremises()
        # A search begun near the deadline gets only what is left: the run must end on time.
        budget = replace(search, timeout_s=max(1.0, min(search.timeout_s, clock.left() - 15)))
        result = best_first_search(ReplayEnv(task.theorem, replay_cfg), premises, source, budget)
        records[name][task.key] = make_record(task, result, name, 1, "in-process")
        misses[name] += getattr(premises, "misses", 0)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(lease.replay_threads) as pool:
        for f in [pool.submit(one, n, t) for t in tasks for n in names]:
            f.result()
    seconds = time.perf_counter() - t0
    done = [k for k in keys if all(k in records[n] for n in names)]
    rows, proved = [], {}
    ceiling = {r["key"]: r for r in replay_ceiling([t for t in tasks if t.key in set(done)], replay_cfg, search,
                                                   CEILING_IN_BUDGET)}
    for name, recs in [(CEILING_IN_BUDGET, ceiling), *((n, records[n]) for n in names)]:
        row, proved[name] = outcome_row(name, recs, done)
        row["provenance"] = row_provenance(ctx["commit"], ctx["command"], {"lease": OmegaConf.to_container(lease)})
        row["device_kind"] = ctx["kind"]
        if name in misses:
            row["premise_lookup_misses"] = misses[name]
        rows.append(row)
    from retriever.evaluation.bootstrap import N_RESAMPLES, SEED
    result = {"benchmark": "search-replay", "env": ENV_REPLAY, "rate_label": RATE_LABEL, "command": ctx["command"],
              "git_commit": ctx["commit"], "machine": ctx["machine"], "device_kind": ctx["kind"],
              "config": {"lease": OmegaConf.to_container(lease), "fusion": ctx["fusion"]},
              "dataset": ctx["dataset"], "split": split, "n_theorems_in_split": len(tasks), "n_theorems": len(done),
              "settings": {"focus_goals": True, "num_tactics": lease.num_tactics, "num_beams": lease.num_beams,
                           "max_expansions": search.max_expansions, "timeout_s": search.timeout_s,
                           "generator": ctx.get("model_back") or "trained on the device (not kept)", "k": lease.retriever.k, "retrievers": names},
              "generator_training": ctx["training"],
              "ceiling_search": {"max_expansions": search.max_expansions, "timeout_s": search.timeout_s},
              "bootstrap": {"resamples": N_RESAMPLES, "seed": SEED, "level": 0.95, "paired_over": "theorems"},
              "rows": rows, "absent": {}, "comparisons": add_intervals(rows, proved, names[::-1]),
              "per_theorem": [{"theorem": t.name, "key": t.key, CEILING_IN_BUDGET: classify(ceiling[t.key]),
                               **{n: classify(records[n][t.key]) for n in names},
                               **{f"{n}_proof": records[n][t.key].get("proof") for n in names
                                  if records[n][t.key].get("proof")}} for t in tasks if t.key in set(done)],
              "neighbour_lookup_misses": ctx["frozen"].misses, "seconds": round(seconds, 1),
              "batches": source.batcher.batches, "largest_batch": source.batcher.largest,
              "note": (f"Premises: `{ctx['fusion']}` (the shipped first stage without its CFR member), looked up "
                       f"for every reachable state as packed on a CPU. Searches ran on {lease.replay_threads} threads "
                       f"in one process on {ctx['machine'].get('gpu') or 'CPU'} ({ctx['kind'] or 'no kind given'}), "
                       f"their generator calls batched (so the per-theorem time limit is {search.timeout_s:g} s, not "
                       f"60: the expansion budget binds); {len(done)} of {len(tasks)} theorems were searched in every "
                       "row before the deadline." + (f" {lease.note}" if lease.note else ""))}
    stem = f"search-replay-{ctx['dataset']}-{split.replace('/', '-')}-device" + (f"-{lease.tag}" if lease.tag else "")
    write_results(out / stem, result, markdown(result))
    log.info("replay: %s", {r["row"]: r["proved"] for r in rows})


def bring_back(gen: Any, lease: Any, parts_dir: Path | None, training: dict) -> dict:
    """The trained model in bf16 parts under `parts_dir` (generator/parts.py), or why not."""
    from generator.parts import MIB as PART_MIB, bf16_bytes, round_to_bf16, write_parts
    need = bf16_bytes(gen.model)
    info = {"bf16_mib": round(need / PART_MIB, 2), "limit_mib": lease.return_mib,
            "largest_params_back": int(lease.return_mib * PART_MIB // 2)}
    if not lease.return_model or parts_dir is None:
        return {**info, "absent": "not asked for (lease.return_model)"}
    if need <= lease.return_mib * PART_MIB:
        # The weights rounded to bf16 here, before any row is scored: the rows are then those of
        # the model that comes back, and the CPU scores it the same.
        round_to_bf16(gen.model)
        info["rounded_to_bf16"] = True
    try:
        written = write_parts(gen, parts_dir, lease.part_mib * PART_MIB, lease.return_mib * PART_MIB,
                              extra={k: v for k, v in training.items() if not isinstance(v, (dict, list))})
    except ValueError as e:
        log.warning("model not brought back: %s", e)
        return {**info, "absent": str(e)}
    return {**info, "parts": [w.name for w in written]}


def run(cfg: Any, pack_dir: Path, out: Path, deadline: float, command: str, parts_dir: Path | None = None) -> int:
    import torch
    from generator.lease_train import matmul_ceiling
    from generator.neighbors import FrozenNeighbors
    from prover.utils.device import pick_device
    from prover.utils.runinfo import git_commit, machine
    clock = Clock(deadline)
    out.mkdir(parents=True, exist_ok=True)
    lease = cfg.lease
    manifest = json.loads((pack_dir / "manifest.json").read_text())
    pairs = read_rows(pack_dir / "train.jsonl.gz")
    inputs, tactics = [p[0] for p in pairs], [p[1] for p in pairs]
    bare_inputs = [p[2] for p in pairs] if pairs and len(pairs[0]) > 2 else None
    lookup = load_json(pack_dir / "lookup.json.gz")
    frozen = FrozenNeighbors.from_json(lookup["neighbors"])
    device = pick_device(cfg.device)
    commit = git_commit()
    ctx = {"lease": lease, "commit": commit, "machine": machine(), "kind": os.environ.get("DEVICE_KIND", ""),
           "dataset": manifest["dataset"], "fusion": manifest["fusion"], "command": command,
           "train_pairs": len(inputs), "train_split": cfg.train_split, "frozen": frozen}
    log.info("run: %d pairs, device %s, %.0f s left", len(inputs), device, clock.left())
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True

    # 0. the ceiling, in this call
    ceiling = matmul_ceiling(device, lease.ceiling_n or None)
    log.info("ceiling: %s", ceiling)
    # 1. sizing: the step variants on one size, then every size with the fastest
    variant = StepVariant(**OmegaConf.to_container(lease.variants[0])) if lease.variants else StepVariant()
    if lease.sizes:
        variant_rows, variant = measure_variants(cfg, inputs, tactics, device, ceiling["tflops"])
        rows = measure_sizes(cfg, inputs, tactics, device, variant, ceiling["tflops"], variant_rows)
        chosen = choose_size(rows, lease.min_epochs)
        sizing = {"benchmark": "generator-sizing", "git_commit": commit, "machine": ctx["machine"],
                  "device_kind": ctx["kind"], "command": command, "batch_size": cfg.train.batch_size,
                  "train_pairs": len(inputs), "max_bytes": cfg.input.max_bytes, "probe_steps": lease.probe_steps,
                  "train_seconds": lease.train_seconds, "min_epochs": lease.min_epochs, "ceiling": ceiling,
                  "variants": variant_rows, "variant": variant.name, "rows": rows,
                  "chosen": chosen["size"] if chosen else None}
        stem = "generator-sizing-device" + (f"-{lease.tag}" if lease.tag else "")
        write_results(out / stem, sizing, sizing_markdown(sizing))
        if chosen is None:
            log.error("sizing: no size could train")
            return 1
        cfg.model = OmegaConf.merge(cfg.model, {k: v for k, v in chosen.items() if k in ModelConfig.__dataclass_fields__})
        rate = chosen["examples_per_s"]
    else:
        chosen, rate = None, None
    size = chosen["size"] if chosen else "model:"
    # 2. training, then the model back, then (time allowing) the same steps without premises
    bare_ok = lease.bare_model and bare_inputs is not None
    reserve = lease.score_seconds + 20
    # The premise model first: the no-premise one trains only in what it leaves (planned_phases).
    seconds = max(5.0, min(lease.train_seconds, clock.left() - reserve))
    gen, training = train(cfg, inputs, tactics, manifest["pool"], device, seconds, rate, out / "train", size, variant)
    ctx["training"] = training
    ctx["throughput"] = {"examples_per_s": training["examples_per_s"], "ceiling": ceiling, "variant": variant.name,
                         "tflops_estimate": round(training["examples_per_s"] * chosen["flops_per_example"] / 1e12, 4)
                         if chosen and "flops_per_example" in chosen else None}
    if ctx["throughput"]["tflops_estimate"] is not None:
        ctx["throughput"]["share_of_bf16_rate"] = round(ctx["throughput"]["tflops_estimate"] / ceiling["tflops"], 4)
    if training["partial"]:  # every row built on it says so (issue 42)
        lease.note = (f"PARTIAL model: its time guard stopped it at step {training['steps']} of "
                      f"{training['planned_steps']} planned. " + lease.note).strip()
    log.info("train: %s", training)
    back = bring_back(gen, lease, parts_dir, training)
    training["brought_back"] = back
    write_json(out / "train" / "summary.json", training)
    if "parts" in back:
        ctx["model_back"] = (f"trained on the device; brought back in {len(back['parts'])} bf16 parts "
                             "(benchmarks/device_generator.py land reassembles it)")
    bare = None
    if bare_ok:
        needed = training["seconds"] * 1.1 + reserve
        if clock.left() > needed:
            bare, bare_training = train(cfg, bare_inputs, tactics, manifest["pool"], device, training["seconds"], None,
                                        out / "train-bare", f"{size} (no premises)", variant, steps=training["steps"])
            ctx["bare_training"] = bare_training
            bare.neighbors = frozen
            if back.get("rounded_to_bf16"):  # both models scored at the same precision
                from generator.parts import round_to_bf16
                round_to_bf16(bare.model)
        else:
            ctx["bare_absent"] = (f"no time for a model without premises: it needs about {needed:.0f} s "
                                  f"and {clock.left():.0f} s were left")
            log.warning("bare model: %s", ctx["bare_absent"])
    gen.neighbors = frozen
    # 3-5. scoring
    splits = list(lease.eval_splits)
    evals = {s: read_rows(pack_dir / f"eval-{s.replace('/', '-')}.jsonl.gz") for s in splits}
    if splits:
        em_split(gen, frozen, splits[0], evals[splits[0]], ctx, clock, out, bare)
    if lease.replay_split and lookup["replay"] and clock.left() > 30:
        replay(gen, lookup, ctx, clock, out)
    for s in splits[1:]:
        if clock.left() > 30:
            em_split(gen, frozen, s, evals[s], ctx, clock, out, bare)
    log.info("run: done at %.0f s (%.0f s left)", clock.elapsed(), clock.left())
    return 0


# ---------------------------------------------------------------------------------------------
# land (here)

def land(archive: Path, results_dir: Path) -> list[str]:
    """Unpack the device run's results archive into the results folder; return what it wrote."""
    written = []
    with tarfile.open(archive) as tar:
        for m in tar.getmembers():
            name = Path(m.name)
            if not m.isfile() or name.is_absolute() or ".." in name.parts:
                continue
            if name.parts[0] in ("train", "train-bare"):
                continue  # the training logs are their own archive
            target = results_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(m).read())
            written.append(str(target))
    return written


def land_model(folder: Path, dest: Path) -> Path | None:
    """The model parts beside the archives (the device's $OUT) reassembled into `dest`, a model
    folder every CPU benchmark loads (`model=<dest>`); None when none came back."""
    from generator.parts import PART_NAME, assemble
    parts = sorted(folder.glob(PART_NAME.replace("{:02d}", "*")))
    return assemble(parts, dest) if parts else None


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("pack", "plan", "run"):
        s = sub.add_parser(name)
        s.add_argument("--config", default="configs/generator/device.yaml")
        s.add_argument("--pack", default=str(PACK))
        s.add_argument("overrides", nargs="*")
        if name in ("plan", "run"):
            s.add_argument("--deadline", type=float, default=570.0)
        if name == "run":
            s.add_argument("--out", default=os.environ.get("OUT", "/tmp/device-out"))
            s.add_argument("--parts", default=None, help="folder for the model's bf16 parts (the device's $OUT)")
    sub.add_parser("hide", help="take the committed rankings out of the next device call")
    sub.add_parser("restore", help="put them back")
    s = sub.add_parser("land")
    s.add_argument("archive")
    s.add_argument("--results-dir", default=str(REPO / "benchmarks" / "results"))
    s.add_argument("--model-dir", default=str(REPO / "runs" / "generator-device" / "model"),
                   help="where the model's parts (beside the archive) are reassembled")
    p.add_argument("-v", action="store_true")
    args = p.parse_args(argv)
    setup_logging()
    if args.cmd in ("hide", "restore"):
        (hide if args.cmd == "hide" else restore)()
        return 0
    if args.cmd == "land":
        for w in land(Path(args.archive), Path(args.results_dir)):
            print(w)
        model = land_model(Path(args.archive).parent, Path(args.model_dir))
        print(f"model: {model}" if model else "model: no parts came back")
        return 0
    cfg = load(args.config, args.overrides)
    if args.cmd == "pack":
        m = pack(cfg, Path(args.pack))
        print(json.dumps({k: m[k] for k in ("train_pairs", "eval_splits", "replay_theorems", "replay_states",
                                             "states", "seconds")}))
        return 0
    if args.cmd == "plan":
        return plan(cfg, args.deadline, Path(args.pack))
    command = " ".join(["bash benchmarks/on_device_generator.sh", f"{args.deadline:g}", *args.overrides])
    return run(cfg, Path(args.pack), Path(args.out), args.deadline, command, Path(args.parts) if args.parts else None)


if __name__ == "__main__":
    sys.exit(main())
