"""`prover retriever train-cfr` and `prover retriever index`: train CFR, then index the corpus.

Both read a retriever config (`configs/retriever/{tiny,small,paper}.yaml`) plus overrides;
training starts from `cfr.init` or `<run_dir>/pretrain/model` and writes `<run_dir>/cfr/`
(`cfr-conventional/` for the conventional similarity); the index goes to `<that>/index/`.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from prover.config import load_config
from prover.utils.runinfo import partial_line
from retriever.settings import RetrieverTrainConfig

log = logging.getLogger(__name__)


def run_train_cfr(config: str | None, overrides: list[str]) -> int:
    cfg = load_config(RetrieverTrainConfig, config, list(overrides))
    # Heavy imports (torch, transformers) only once the config is known good: a typo is answered at once.
    from retriever.training.train_cfr import train_cfr
    model_dir = train_cfr(cfg)
    summary = json.loads((model_dir.parent / "summary.json").read_text())
    print(json.dumps(summary, indent=2))
    print(f"model: {model_dir}")
    if line := partial_line(summary, "cfr"):
        print(line)
    return 0


def run_index(config: str | None, overrides: list[str], out: str | None = None) -> int:
    """Encode every premise with the trained CFR model, index and save; then read the saved
    index back and check it answers exactly as the one in memory."""
    cfg = load_config(RetrieverTrainConfig, config, list(overrides))
    # Heavy imports (torch, transformers) only once the config is known good: a typo is answered at once.
    import numpy as np

    from prover.data.dataset import Dataset
    from retriever.models.cfr import CFRRetriever, cfr_config
    from retriever.models.faiss_index import PremiseIndex
    from retriever.training.train_cfr import cfr_run_dir
    model_dir = cfr_run_dir(cfg) / "model"
    if not (model_dir / "config.json").exists():
        raise FileNotFoundError(f"no trained CFR model at {model_dir}; run `prover retriever train-cfr` first")
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    corpus = ds.corpus()
    t0 = time.perf_counter()
    retriever = CFRRetriever(corpus, model_dir, cfr_config(cfg), cfg.device)
    seconds = time.perf_counter() - t0
    out_dir = retriever.save_index(Path(out) if out else cfr_run_dir(cfg) / "index")

    loaded = PremiseIndex.load(out_dir, retriever.index.fingerprint, retriever.index.meta)
    probe = retriever.premise_vectors[np.linspace(0, len(corpus) - 1, min(64, len(corpus))).astype(int)]
    k = min(20, len(corpus))
    for (s1, i1), (s2, i2) in zip(retriever.index.search_masked(probe, k, [None] * len(probe)),
                                  loaded.search_masked(probe, k, [None] * len(probe))):
        if not (np.array_equal(i1, i2) and np.array_equal(s1, s2)):
            raise RuntimeError(f"the index saved to {out_dir} does not answer as the one built")
    print(f"{retriever.name}: indexed {len(corpus)} premises ({retriever.index.kind}, "
          f"d={retriever.premise_vectors.shape[1]}) in {seconds:.1f} s; saved to {out_dir}")
    return 0
