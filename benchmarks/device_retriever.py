"""The retriever of one lent GPU (issue 64): pack the data here, train there, score here.

    python benchmarks/device_retriever.py pack                     # here: .devcarry/retriever/ (tokenizer, token ids, pairs)
    python benchmarks/device_retriever.py plan --deadline 570      # dry run: what travels, seconds per phase, what comes back
    bash benchmarks/on_device_lease.sh 570                         # there: this lease, then the generator's if time is left
    python benchmarks/device_retriever.py land <files_at>          # here: the encoder reassembled into runs/retriever-device
    prover retriever index --config configs/retriever/device.yaml  # here: the corpus embeddings, on the CPU
    prover retriever train-fusion --config configs/retriever/device.yaml
    python benchmarks/device_retriever.py compare --split leandojo-real/select   # choose; then report, once

`pack` writes `.devcarry/retriever/` (ignored; the device tool carries it): the WordPiece tokenizer
(trained here, as `prover retriever pretrain` trains it), the MLM texts as token ids (the training
split's states and every premise, `pretrain.corpus_texts`), and CFR's statement-level pairs as
`train_cfr` builds them: each state's token ids (cut on `cfr.state_truncation_side`), every
premise text's, and each state's positive premises. The device needs no corpus, Ray or FAISS.

`run` (what the shell script calls there), each stage under its own time limit:
0. the ceiling: a bf16 matrix product timed in the call (prover/training/lease.py);
1. MLM from scratch at configs/retriever/device.yaml's width: a probe of a few steps (examples/s,
   FLOPs counted, share of the ceiling), then the steps that fill `lease.mlm_seconds` at that rate
   (at most `pretrain.epochs`), in the lean loop of retriever/training/lease.py;
2. conventional CFR from that encoder, the same way in `lease.cfr_seconds`;
3. the encoder rounded to bf16, a few states' scores against a few premises computed from it (the
   check), and its weights written as parts of at most `lease.part_mib` under `--parts` ($OUT);
   the timing and training records as retriever-lease-device.{json,md}.
The corpus embeddings are not computed there: `land` rebuilds the model folder here, checks the
scores, and `prover retriever index` encodes the corpus on the CPU.

`compare` is the measurement after the lease: on one split, R@10 of BM25, of the lease's CFR
alone, of the fusion fitted with it (the shipped member set, `prover retriever train-fusion` with
device.yaml) and of the shipped fusion (cpu.yaml's run), each with a 95% interval, and the paired
differences that answer the issue (CFR alone − BM25, fusion with it − shipped fusion), intervals
resampling theorems. Choose on leandojo-real/select; score leandojo-real/report once.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from prover.benchmarking.device_travel import CALL_LIMIT_S, MIB, TRAVEL_LIMIT, Clock, folder_bytes, travelling_bytes
from prover.benchmarking.harness import parser, write_results
from prover.config import load_yaml
from prover.data.jsonio import write_json
from prover.utils.logs import setup_logging
from retriever.settings import RetrieverTrainConfig

REPO = Path(__file__).resolve().parents[1]

log = logging.getLogger("benchmarks.device_retriever")

PACK = REPO / ".devcarry" / "retriever"
GEN_PACK = REPO / ".devcarry" / "gen"
RESULTS_STEM = "retriever-lease-device"
RETURN_FILES = 8  # the device tool returns at most 8 files


@dataclass
class RetrieverLease:
    """The lease's own settings (configs/retriever/lease.yaml `lease:`)."""

    mlm_seconds: float = 200.0
    cfr_seconds: float = 150.0
    probe_steps: int = 6
    autocast: bool = True
    part_mib: float = 16.0
    return_mib: float = 56.0
    check_states: int = 16
    score_tolerance: float = 0.01
    ceiling_n: int = 0
    tag: str = ""


@dataclass
class DeviceRetrieverConfig(RetrieverTrainConfig):
    lease: RetrieverLease = field(default_factory=RetrieverLease)


def load(path: str | Path, overrides: list[str] | None = None) -> Any:
    return OmegaConf.merge(OmegaConf.structured(DeviceRetrieverConfig), load_yaml(str(path)),
                           OmegaConf.from_dotlist(list(overrides or [])))


# ---------------------------------------------------------------------------------------------
# pack (here)

def pack(cfg: Any, out: Path) -> dict:
    """The lease's data in `out` (see the module docstring); its manifest."""
    from retriever.models.cfr import tokenize_texts
    from retriever.models.text import format_state, premise_text
    from retriever.training.lease import TokenTable, tokenizer_sha1
    from retriever.training.pretrain import corpus_texts, ensure_tokenizer, tokenized_corpus
    from retriever.training.train_cfr import _pairs
    from prover.training.run import RunDir
    from prover.utils.runinfo import git_commit

    t0 = time.perf_counter()
    if cfg.cfr.similarity != "conventional":
        raise SystemExit("the lease trains conventional CFR (the fusion's member): set cfr.similarity=conventional")
    out.mkdir(parents=True, exist_ok=True)
    fresh = not (Path(cfg.run_dir) / "tokenizer" / "tokenizer.json").exists()
    texts = corpus_texts(cfg) if fresh else None
    tokenizer = ensure_tokenizer(cfg, texts)
    tokenizer.save_pretrained(str(out / "tokenizer"))
    vocab = len(tokenizer)
    seqs = tokenized_corpus(cfg, tokenizer, RunDir(Path(cfg.run_dir) / "pretrain").path / "tokens.pt", texts)
    TokenTable.from_lists(seqs, vocab).save(out / "mlm.npz")

    _, corpus, pairs, stats = _pairs(cfg)
    c = cfg.cfr
    states = [format_state(p.state) for p in pairs]
    premise_texts = [premise_text(p) for p in corpus.premises]
    TokenTable.from_lists(tokenize_texts(tokenizer, states, c.max_state_len, c.state_truncation_side), vocab).save(
        out / "states.npz")
    TokenTable.from_lists(tokenize_texts(tokenizer, premise_texts, c.max_premise_len), vocab).save(out / "premises.npz")
    positives = [list(p.premises) for p in pairs]
    with open(out / "positives.npz", "wb") as f:
        np.savez_compressed(f, ids=np.concatenate([np.asarray(x, dtype=np.int32) for x in positives]),
                            offsets=np.cumsum([0] + [len(x) for x in positives]).astype(np.int64))
    # The check: the first states and their first positive premises' texts, scored there and here.
    n = min(cfg.lease.check_states, len(pairs))
    check = {"states": states[:n], "premises": [premise_texts[positives[i][0]] for i in range(n)]}
    manifest = {"git_commit": git_commit(), "dataset": Path(str(cfg.data.root)).name,
                "config": OmegaConf.to_container(cfg, resolve=True), "tokenizer_sha1": tokenizer_sha1(tokenizer),
                "vocab": vocab, "mlm_texts": len(seqs), "mlm_tokens": int(sum(len(s) for s in seqs)),
                "pairs": len(pairs), "premises": len(corpus.premises), "pair_stats": stats.as_dict(),
                "check": check, "seconds": round(time.perf_counter() - t0, 1)}
    write_json(out / "manifest.json", manifest)
    log.info("pack: %s written in %.0f s (%.1f MiB)", out, manifest["seconds"], folder_bytes(out) / MIB)
    return manifest


# ---------------------------------------------------------------------------------------------
# plan (here): the dry run

START_S = 60.0  # install, imports, the pack read (the generator's lease: 140 s with its larger reads and Ray-free imports)
PROBE_S = 15.0  # a stage's probe: a model build, two warm-up steps, probe_steps timed and counted
PARTS_S = 10.0  # the check scores and the bf16 parts
GENERATOR_MIN_S = 240.0  # below this the generator's run would only train (its scoring alone plans 200 s)


def encoder_params(cfg: Any) -> int:
    """Parameters of the encoder that comes back (a BertModel without pooler), built on the meta device."""
    import torch
    from transformers import BertConfig, BertModel
    e = cfg.encoder
    vocab = cfg.tokenizer.vocab_size
    with torch.device("meta"):
        bert = BertModel(BertConfig(vocab_size=vocab, hidden_size=e.hidden_size, num_hidden_layers=e.num_layers,
                                    num_attention_heads=e.num_heads, intermediate_size=e.intermediate_size,
                                    max_position_embeddings=e.max_positions), add_pooling_layer=False)
    return sum(p.numel() for p in bert.parameters())


def planned_phases(cfg: Any, deadline: float) -> dict[str, float]:
    lease = cfg.lease
    phases = {"start (install, imports, pack)": START_S, "bf16 ceiling": 5.0, "MLM probe": PROBE_S,
              "MLM training": lease.mlm_seconds, "CFR probe": PROBE_S, "CFR training": lease.cfr_seconds,
              "check scores, bf16 parts": PARTS_S}
    phases["generator (if at least %.0f s are left)" % GENERATOR_MIN_S] = max(0.0, deadline - sum(phases.values()))
    return phases


def plan(cfg: Any, deadline: float, pack_dir: Path, gen_pack: Path | None = None) -> int:
    carry = [pack_dir, *([gen_pack] if gen_pack else []), REPO / ".whl"]
    total, parts = travelling_bytes(REPO, carry)
    print(f"travels: {total / MIB:.1f} MiB of the device tool's {TRAVEL_LIMIT // MIB} MiB")
    for name, n in sorted(parts.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {n / MIB:7.1f} MiB  {name}")
    phases = planned_phases(cfg, deadline)
    retriever_s = sum(v for k, v in phases.items() if not k.startswith("generator"))
    print(f"phases (deadline {deadline:.0f} s, one call at most {CALL_LIMIT_S} s; the retriever's "
          f"{retriever_s:.0f} s are {retriever_s / 900:.0%} of the 15-minute lease):")
    for name, s in phases.items():
        print(f"  {s:6.0f} s  {name}")
    n_params = encoder_params(cfg)
    mib = 2 * n_params / MIB
    n_parts = int(np.ceil(mib / (cfg.lease.part_mib - 1 / 16))) if mib else 0
    back = mib <= cfg.lease.return_mib
    print(f"back: the encoder, {n_params / 1e6:.1f}M parameters, {mib:.1f} MiB in bf16 "
          f"({'comes back' if back else 'too large to come back'} in about {n_parts} parts of "
          f"{cfg.lease.part_mib:g} MiB, at most {cfg.lease.return_mib:g}); with the records "
          f"(retriever.tgz, the generator's two) {n_parts + 3} of {RETURN_FILES} files")
    manifest = pack_dir / "manifest.json"
    print(f"pack: {manifest if manifest.exists() else 'missing (run `pack` first)'}")
    if manifest.exists():
        m = json.loads(manifest.read_text())
        print(f"  {m['mlm_texts']} MLM texts ({m['mlm_tokens']} tokens), {m['pairs']} CFR pairs, {m['premises']} premises")
    ok = (total <= TRAVEL_LIMIT and deadline <= CALL_LIMIT_S - 30 and manifest.exists() and back
          and n_parts + 3 <= RETURN_FILES)
    if total > TRAVEL_LIMIT:
        print("over the limit: `python benchmarks/device_generator.py hide` takes the committed rankings "
              "out of the call (and `restore` puts them back after it)")
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------
# run (there)

def _positives(path: Path) -> list[list[int]]:
    with np.load(path) as z:
        ids, offsets = z["ids"], z["offsets"]
    return [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]


def _stage(task: Any, recipe: Any, seconds: float, lease: Any, ceiling: float, out: Path, name: str) -> dict:
    """Probe `task`, plan its steps to fill `seconds` (at most `recipe.epochs`), train it."""
    from prover.training.lease import planned_steps
    from retriever.training.lease import probe, train_timed
    rate = probe(task, lease.probe_steps, ceiling, lease.autocast)
    log.info("%s probe: %s", name, rate)
    steps = planned_steps(rate["examples_per_s"], seconds, task.batch_size, task.n, recipe.epochs)
    # The recipe's warm-up is a share of its planned steps (device.yaml): the same share here.
    planned = recipe.max_steps or steps
    warmup = max(1, round(recipe.warmup_steps * steps / planned))
    (out / name).mkdir(parents=True, exist_ok=True)
    log_file = out / name / "train_log.jsonl"

    def on_log(row: dict) -> None:
        with log_file.open("a") as f:
            f.write(json.dumps(row) + "\n")
        log.info("%s: %s", name, row)
    guard = max(1.1 * seconds, seconds + 5)
    done = train_timed(task, steps, guard, recipe.lr, warmup, recipe.weight_decay, recipe.grad_clip,
                       lease.autocast, recipe.log_every, on_log)
    done.pop("log")
    flops = rate["flops_per_example"]
    summary = {**done, "probe": rate, "seconds_allowed": round(seconds, 1), "recipe_max_steps": recipe.max_steps,
               "tflops_estimate": round(done["examples_per_s"] * flops / 1e12, 4)}
    if ceiling:
        summary["share_of_bf16_rate"] = round(summary["tflops_estimate"] / ceiling, 4)
    write_json(out / name / "summary.json", summary)
    return summary


def run(cfg: Any, pack_dir: Path, out: Path, parts_dir: Path, deadline: float, command: str) -> int:
    import torch
    from prover.training.lease import matmul_ceiling
    from prover.training.run import set_seed
    from prover.utils.device import pick_device
    from prover.utils.parts import MIB as PART_MIB, round_to_bf16
    from prover.utils.runinfo import git_commit, machine
    from retriever.models.cfr import CFREncoder
    from retriever.models.tokenizer import load_tokenizer
    from retriever.training.lease import (CFRTask, MLMTask, TokenTable, check_scores, cfr_settings,
                                          write_encoder_parts)
    from retriever.training.pretrain import build_model
    clock = Clock(deadline)
    lease = cfg.lease
    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((pack_dir / "manifest.json").read_text())
    tokenizer = load_tokenizer(pack_dir / "tokenizer")
    mlm = TokenTable.load(pack_dir / "mlm.npz")
    states, premises = TokenTable.load(pack_dir / "states.npz"), TokenTable.load(pack_dir / "premises.npz")
    positives = _positives(pack_dir / "positives.npz")
    device = pick_device(cfg.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    kind = os.environ.get("DEVICE_KIND", "")
    result = {"benchmark": "retriever-lease", "command": command, "git_commit": git_commit(), "machine": machine(),
              "device_kind": kind, "device": str(device), "dataset": manifest["dataset"],
              "pack_commit": manifest["git_commit"], "config": OmegaConf.to_container(cfg, resolve=True),
              "mlm_texts": len(mlm), "pairs": len(states), "premises": len(premises), "stages": {}, "absent": {}}

    def save() -> None:
        write_results(out / RESULTS_STEM, result, markdown(result))
    log.info("run: %d MLM texts, %d pairs, device %s, %.0f s left", len(mlm), len(states), device, clock.left())
    result["ceiling"] = matmul_ceiling(device, lease.ceiling_n or None)
    ceiling = result["ceiling"]["tflops"]
    log.info("ceiling: %s", result["ceiling"])

    # What each stage may use: its own seconds, and never what the later phases need.
    tail = PROBE_S + lease.cfr_seconds + PARTS_S + 10
    set_seed(cfg.seed)
    model = build_model(cfg, tokenizer).to(device)
    result["parameters"] = {"mlm": sum(p.numel() for p in model.parameters()),
                            "encoder": sum(p.numel() for p in model.bert.parameters())}
    mlm_task = MLMTask(model, mlm, tokenizer, cfg.pretrain.batch_size, cfg.pretrain.mlm_probability, cfg.seed, device)
    seconds = max(1.0, min(lease.mlm_seconds, clock.left() - PROBE_S - tail))
    result["stages"]["pretrain"] = _stage(mlm_task, cfg.pretrain, seconds, lease, ceiling, out, "pretrain")
    save()

    set_seed(cfg.seed)
    bert = model.bert  # the MLM head stays here: CFR trains and returns the encoder
    cfr_task = CFRTask(bert, states, premises, positives, tokenizer.pad_token_id, cfg.cfr.batch_size,
                       cfg.cfr.premises_per_query, cfg.cfr.temperature, cfg.seed, device)
    seconds = max(1.0, min(lease.cfr_seconds, clock.left() - PROBE_S - PARTS_S - 10))
    summary = _stage(cfr_task, cfg.cfr, seconds, lease, ceiling, out, "cfr-conventional")
    result["stages"]["cfr-conventional"] = summary
    save()

    # The encoder as it travels: rounded to bf16 here, the check scored from those weights.
    round_to_bf16(bert)
    encoder = CFREncoder(bert, tokenizer, **cfr_settings(cfg.cfr))
    encoder.eval()
    check = {**manifest["check"], "scores": check_scores(encoder, manifest["check"]["states"],
                                                         manifest["check"]["premises"]),
             "tolerance": lease.score_tolerance}
    training = {"pretrain": result["stages"]["pretrain"], "cfr-conventional": summary, "device": str(device),
                "device_kind": kind, "git_commit": result["git_commit"], "ceiling": result["ceiling"]}
    try:
        written = write_encoder_parts(encoder, parts_dir, int(lease.part_mib * PART_MIB), int(lease.return_mib * PART_MIB),
                                      check, training)
        result["parts"] = [p.name for p in written]
        result["parts_mib"] = round(sum(p.stat().st_size for p in written) / PART_MIB, 2)
    except ValueError as e:
        result["absent"]["encoder"] = str(e)
        log.warning("encoder not brought back: %s", e)
    result["seconds"] = round(clock.elapsed(), 1)
    save()
    log.info("run: done at %.0f s (%.0f s left)", clock.elapsed(), clock.left())
    return 0 if "parts" in result else 1


def markdown(result: dict) -> str:
    ceiling = result.get("ceiling") or {}
    lines = [f"# The retriever's lease on {result['machine'].get('gpu') or 'CPU'} ({result.get('device_kind') or 'no kind given'})",
             "", f"`{result['command']}` at commit {result['git_commit']} (data packed at {result['pack_commit']}). "
             f"configs/retriever/device.yaml's recipe: MLM over {result['mlm_texts']} texts, then conventional CFR on "
             f"{result['pairs']} statement-level pairs; parameters {result.get('parameters', {})}. Ceiling: a "
             f"{ceiling.get('n', '?')}³ bf16 matrix product timed in the same call, {ceiling.get('tflops', float('nan')):g} "
             "TFLOP/s. Rates: the probe's (a few steps, FLOPs counted by PyTorch's counter) and the whole stage's "
             "(its examples over its seconds; TFLOP/s from the probe's FLOPs per example).", "",
             "| stage | steps (planned) | stopped by | epochs | seconds | examples/s (probe) | TFLOP/s | share of bf16 rate "
             "| final train loss |", "|---|---|---|---|---|---|---|---|---|"]
    for name, s in result["stages"].items():
        p = s["probe"]
        lines.append(f"| {name} | {s['steps']} ({s['planned_steps']}) | {s['stopped_by']} | {s['epochs']:.2f} | {s['seconds']:.0f} "
                     f"| {s['examples_per_s']:.0f} {s['unit']} ({p['examples_per_s']:.0f}) | {s['tflops_estimate']:.3g} "
                     f"| {s.get('share_of_bf16_rate', float('nan')):.1%} | {s['train_loss']} |")
    back = f"{', '.join(result['parts'])} ({result['parts_mib']} MiB)" if result.get("parts") else "no"
    lines += ["", f"Encoder back: {back}."]
    for k, why in result.get("absent", {}).items():
        lines.append(f"Absent: {k}: {why}.")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# land (here)

def land(folder: Path, pack_dir: Path, cfg: Any, results_dir: Path) -> dict:
    """The device's $OUT (parts and retriever.tgz) as `cfg.run_dir`'s cfr-conventional model and
    the stages' summaries; the results file into `results_dir`. Exits when the reassembled
    encoder does not score the check as it did there."""
    from retriever.training.lease import PART_NAME, assemble_encoder, score_difference
    from prover.utils.parts import part_paths
    written = []
    archive = folder / "retriever.tgz"
    if archive.exists():
        with tarfile.open(archive) as tar:
            for m in tar.getmembers():
                name = Path(m.name)
                if not m.isfile() or name.is_absolute() or ".." in name.parts:
                    continue
                if name.name.startswith(RESULTS_STEM):
                    target = results_dir / name.name
                elif name.parent.name in ("pretrain", "cfr-conventional") or name.name == "run.log":
                    # The training records, committed beside the CPU runs' (results/training/).
                    stage = f"-{name.parent.name}" if name.parent.name != "." and name.parent.name else ""
                    target = results_dir / "training" / f"retriever-device{stage}-{name.name}"
                else:
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(m).read())
                written.append(str(target))
    parts = part_paths(folder, PART_NAME)
    if not parts:
        raise SystemExit(f"error: no encoder parts ({PART_NAME.replace('{:02d}', 'NN')}) in {folder}")
    encoder, meta = assemble_encoder(parts, pack_dir / "tokenizer")
    diff = score_difference(encoder, meta["check"])
    if diff > meta["check"]["tolerance"]:
        raise SystemExit(f"error: the reassembled encoder scores the check {diff:.2g} away from the device's "
                         f"(tolerance {meta['check']['tolerance']:g})")
    run = Path(cfg.run_dir)
    dest = run / "cfr-conventional" / "model"
    if dest.exists():
        shutil.rmtree(dest)
    encoder.save_pretrained(dest)
    training = meta["training"]
    for stage in ("pretrain", "cfr-conventional"):
        s = {**training[stage], "device": training["device"], "device_kind": training["device_kind"],
             "git_commit": training["git_commit"], "trained_by": "benchmarks/on_device_lease.sh (issue 64)"}
        if stage == "cfr-conventional":
            s.update(similarity="conventional", params=sum(p.numel() for p in encoder.parameters()),
                     train_split=cfg.train_split, score_check_max_diff=diff)
        write_json(run / stage / "summary.json", s)
    return {"model": str(dest), "score_check_max_diff": diff, "results": written}


# ---------------------------------------------------------------------------------------------
# compare (here, after `prover retriever index` and `train-fusion` with device.yaml)

def compare(split: str, device_config: str, shipped_config: str, results_dir: Path, command: str,
            allow_partial: bool = False, device_overrides: list[str] = (), shipped_overrides: list[str] = ()) -> dict:
    """R@10 on `split` of BM25, the lease's CFR alone, the fusion fitted with it and the shipped
    fusion, with intervals; the paired differences that answer the issue."""
    from prover.benchmarking.harness import git_commit, load_config, machine, mean_interval, paired_intervals
    from prover.config import DataConfig
    from prover.data.dataset import Dataset
    from prover.data.pairs import premise_queries
    from prover.utils.runinfo import require_full_training
    from retriever.evaluation.benchmark import members_trained_by, training_summaries
    from retriever.evaluation.evaluate import evaluate
    from retriever.models.learned_fusion import FusionModel
    from retriever.registry import build_retriever, require_trained
    from retriever.settings import RetrieverConfig
    dev = load_config(RetrieverTrainConfig, device_config, list(device_overrides))
    ship = load_config(RetrieverTrainConfig, shipped_config, list(shipped_overrides))
    choices = {"device": RetrieverConfig(models=device_config, run_dir=dev.run_dir, model_overrides=list(device_overrides)),
               "shipped": RetrieverConfig(models=shipped_config, run_dir=ship.run_dir,
                                          model_overrides=list(shipped_overrides))}
    for c in choices.values():
        require_trained("fusion", c)
    summaries = {f"device {m}": s for m, s in training_summaries(dev, ["pretrain", "cfr-conventional", "fusion"]).items()}
    partial = require_full_training(summaries, allow_partial)
    ds = Dataset(dev.data.root)
    corpus = ds.corpus()
    queries, _ = premise_queries(ds.theorems(split), corpus)
    data = DataConfig(root=str(dev.data.root), split=split)  # the priors leave this split out
    members = {k: FusionModel.load(Path(c.run_dir) / "fusion" / "model.json").members for k, c in choices.items()}
    rows_of = {"bm25": build_retriever("bm25", corpus, choices["device"], data=data),
               "cfr-conventional (lease)": build_retriever("cfr-conventional", corpus, choices["device"], data=data),
               "fusion (lease's CFR)": build_retriever("fusion", corpus, choices["device"], data=data),
               "fusion (shipped)": build_retriever("fusion", corpus, choices["shipped"], data=data)}
    t0 = time.perf_counter()
    clusters = [q.theorem for q in queries]
    per_query = {}
    for name, retriever in rows_of.items():
        per_query[name] = evaluate(retriever, queries, ks=(10,), rankings_k=10).per_query["R@10"]
    rows = []
    for name, r10 in per_query.items():
        lo, hi = mean_interval(r10, clusters=clusters)
        rows.append({"row": name, "R@10": round(float(r10.mean()), 4), "R@10 95% CI": [round(lo, 4), round(hi, 4)]})
    comparisons = []
    for a, b in (("cfr-conventional (lease)", "bm25"), ("fusion (lease's CFR)", "fusion (shipped)")):
        d = paired_intervals(per_query[a], per_query[b], clusters=clusters).diff
        comparisons.append({"a": a, "b": b, "metric": "R@10", "diff": round(float(per_query[a].mean() - per_query[b].mean()), 4),
                            "diff_ci": [round(d[0], 4), round(d[1], 4)]})
    result = {"benchmark": "retriever-lease-compare", "command": command, "git_commit": git_commit(), "machine": machine(),
              "split": split, "dataset": Path(str(dev.data.root)).name, "n_queries": len(queries),
              "n_theorems": len(set(clusters)), "members": members, "partial": partial, "rows": rows,
              "comparisons": comparisons, "seconds": round(time.perf_counter() - t0, 1),
              "run_dirs": {k: c.run_dir for k, c in choices.items()},
              "per_query": {k: v.tolist() for k, v in per_query.items()}, "query_theorems": clusters,
              "trained": {"device": training_summaries(dev, members_trained_by(members["device"]) + ["fusion"]),
                          "shipped": training_summaries(ship, members_trained_by(members["shipped"]) + ["fusion"])}}
    lines = [f"# The lease's retriever on {split} ({len(queries)} queries, {len(set(clusters))} theorems)", "",
             f"`{command}` at commit {result['git_commit']}" + (f" (PARTIAL: {partial})" if partial else "")
             + ". The lease's CFR: configs/retriever/device.yaml, trained on a lent GPU "
             "(benchmarks/on_device_lease.sh), its corpus embeddings computed here. Brackets: 95% bootstrap "
             "intervals resampling theorems; differences paired, in points.", "",
             "| row | R@10 |", "|---|---|"]
    for r in rows:
        ci = r["R@10 95% CI"]
        lines.append(f"| {r['row']} | {100 * r['R@10']:.1f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}] |")
    lines += ["", "| comparison | R@10 difference |", "|---|---|"]
    for c in comparisons:
        lines.append(f"| {c['a']} − {c['b']} | {100 * c['diff']:+.1f} [{100 * c['diff_ci'][0]:+.1f}, "
                     f"{100 * c['diff_ci'][1]:+.1f}] |")
    lines += ["", f"Fusion members: lease {members['device']}; shipped {members['shipped']}."]
    stem = results_dir / f"retriever-lease-{result['dataset']}-{split.replace('/', '-')}"
    write_results(stem, result, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return result


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("pack", "plan", "run", "land"):
        s = sub.add_parser(name)
        s.add_argument("--config", default="configs/retriever/lease.yaml")
        s.add_argument("--pack", default=str(PACK))
        if name == "plan":
            s.add_argument("--deadline", type=float, default=570.0)
            s.add_argument("--gen-pack", default=str(GEN_PACK), help="the generator's pack, which travels too")
        if name == "run":
            s.add_argument("--deadline", type=float, default=570.0)
            s.add_argument("--out", default=os.environ.get("OUT", "/tmp/device-out"))
            s.add_argument("--parts", default=os.environ.get("OUT", "/tmp/device-out"),
                           help="folder for the encoder's bf16 parts (the device's $OUT)")
        if name == "land":
            s.add_argument("folder", help="the device's returned files (files_at): retriever-part-NN.safetensors, retriever.tgz")
            s.add_argument("--results-dir", default=str(REPO / "benchmarks" / "results"))
        s.add_argument("overrides", nargs="*")
    s = sub.add_parser("compare")
    s.add_argument("--split", required=True, help="leandojo-real/select (choose) or leandojo-real/report (once)")
    s.add_argument("--device-config", default="configs/retriever/device.yaml")
    s.add_argument("--shipped-config", default="configs/retriever/cpu.yaml")
    s.add_argument("--device-override", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the lease's run (e.g. run_dir=DIR)")
    s.add_argument("--shipped-override", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the shipped run (e.g. run_dir=/work/train/runs/retriever-cpu)")
    s.add_argument("--results-dir", default=str(REPO / "benchmarks" / "results"))
    s.add_argument("--allow-partial", action="store_true")
    s.add_argument("--allow-dirty", action="store_true")
    p.add_argument("-v", action="store_true")
    args = p.parse_args(argv)
    setup_logging()
    if args.cmd == "compare":
        from prover.benchmarking.harness import command_line, require_clean_tree
        require_clean_tree(args.allow_dirty)
        compare(args.split, args.device_config, args.shipped_config, Path(args.results_dir),
                command_line("benchmarks/device_retriever.py", argv), args.allow_partial, args.device_override,
                args.shipped_override)
        return 0
    cfg = load(args.config, args.overrides)
    if args.cmd == "pack":
        m = pack(cfg, Path(args.pack))
        print(json.dumps({k: m[k] for k in ("mlm_texts", "mlm_tokens", "pairs", "premises", "seconds")}))
        return 0
    if args.cmd == "plan":
        gen = Path(args.gen_pack)
        return plan(cfg, args.deadline, Path(args.pack), gen if gen.exists() else None)
    if args.cmd == "land":
        print(json.dumps(land(Path(args.folder), Path(args.pack), cfg, Path(args.results_dir)), indent=1))
        return 0
    command = " ".join(["bash benchmarks/on_device_lease.sh", f"{args.deadline:g}", *args.overrides])
    return run(cfg, Path(args.pack), Path(args.out), Path(args.parts), args.deadline, command)


if __name__ == "__main__":
    sys.exit(main())
