"""`prover serve`: the premise search engine over HTTP (uvicorn), or as a Ray Serve deployment.

    prover serve --index runs/retriever-tiny --corpus ../shared/data/mathlib-src-mini
    prover serve --corpus ../shared/data/mathlib-src --retrievers bm25
    prover serve --config configs/serve/tiny.yaml --generator tiny=runs/generator-tiny/generator/model

`--index` is a retriever run folder (or its cfr/index folder) and `--corpus` the dataset folder
its index was built from (the config's `retriever.run_dir` and `retriever.corpus`);
`--generator [NAME=]MODEL` adds a tactic generator for LeanCopilot (`generators` in the config);
flags and `key=value` overrides go over `--config` (configs/serve/*.yaml, schema
`prover.serve.settings.ServeConfig`). The admin token is read from PROVER_SERVE_TOKEN when the
config sets none.
"""
from __future__ import annotations

import ipaddress
import logging
import os
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from prover.config import load_config
from prover.data.errors import UserInputError
from prover.serve.settings import ServeConfig

log = logging.getLogger(__name__)

TOKEN_ENV = "PROVER_SERVE_TOKEN"
# The path flags, and the keys of the served retriever choice they set.
PATH_FLAGS = {"index": "retriever.run_dir", "corpus": "retriever.corpus"}


def serve_config(config: str | None, index: str | None, corpus: str | None, host: str | None,
                 port: int | None, retrievers: str | None, overrides: list[str],
                 generators: list[str] | None = None):
    flags = [f"{k}={v}" for k, v in ((PATH_FLAGS["index"], index), (PATH_FLAGS["corpus"], corpus),
                                     ("host", host), ("port", port)) if v is not None]
    if retrievers:
        flags.append(f"retrievers=[{','.join(r.strip() for r in retrievers.split(',') if r.strip())}]")
    cfg = load_config(ServeConfig, config, flags + list(overrides))
    if generators:  # after the overrides: a flag adds to the config's list, as the other flags win
        added = [generator_flag(g) for g in generators]
        cfg = OmegaConf.merge(cfg, {"generators": [*OmegaConf.to_container(cfg.generators), *added]})
    if not cfg.admin_token and os.environ.get(TOKEN_ENV):
        cfg.admin_token = os.environ[TOKEN_ENV]
    return cfg


def generator_flag(value: str) -> dict:
    """`--generator [NAME=]MODEL`: the name LeanCopilot sends, and the model folder or hub id."""
    name, sep, model = value.partition("=")
    if not sep:
        name, model = "generator", value
    if not name.strip() or not model.strip():
        raise UserInputError(f"--generator {value!r}: expected MODEL or NAME=MODEL")
    return {"name": name.strip(), "model": model.strip()}


def check_paths(cfg: Any) -> None:
    """Name a missing --index or --corpus (both, when both are) before torch and faiss load:
    seconds of loading, and their log lines, would only bury the mistake."""
    expected = {"index": "a retriever run folder such as runs/retriever-tiny, or its cfr/index folder",
                "corpus": "the LeanDojo dataset folder the index was built from"}
    from prover.data.demo import DEMO
    missing = []
    for key, what in expected.items():  # the index first: it is the primary argument
        path = OmegaConf.select(cfg, PATH_FLAGS[key])
        if path and path != DEMO and not Path(path).exists():
            # The demo's run folder: the command that makes it is known.
            made_by = "; `prover demo` makes it" if Path(path).parts[:2] == ("runs", "demo") else ""
            missing.append(f"--{key} {path} does not exist (expected {what}{made_by})")
    if missing:
        raise UserInputError("; ".join(missing))


def _warn_if_exposed(host: str) -> None:
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        log.warning("listening on %s: the service is reachable from other machines, and has no "
                    "authentication except for /admin", host)


def run_serve(config: str | None, index: str | None, corpus: str | None, host: str | None,
              port: int | None, retrievers: str | None, use_ray: bool, overrides: list[str],
              generators: list[str] | None = None) -> int:
    cfg = serve_config(config, index, corpus, host, port, retrievers, overrides, generators)
    check_paths(cfg)
    _warn_if_exposed(cfg.host)
    if use_ray:
        from prover.serve.ray_serve import start
        start(cfg, blocking=True)
        return 0
    from prover.serve.app import create_app
    from prover.serve.server import serve_forever
    from prover.serve.service import SearchService
    service = SearchService(cfg)
    try:
        print(f"premise search: http://{cfg.host}:{cfg.port}/  (API schema: /openapi.json)", flush=True)
        if service.generators:
            print(f"LeanCopilot: POST /generate with name {', '.join(service.generators)}; POST /encode "
                  f"with name {', '.join(service.encoder_names()) or '(no dense retriever served)'}", flush=True)
        serve_forever(create_app(service), cfg.host, cfg.port, cfg.log_level)
    finally:
        service.close()
    return 0
