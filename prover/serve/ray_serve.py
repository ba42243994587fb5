"""The search service as a Ray Serve deployment, for scale-out.

Each replica is a Ray actor holding one `SearchService` (its own corpus, retrievers and model
thread) behind the same FastAPI app as `prover serve`, so answers, errors and the page are
identical; Ray Serve's proxy spreads requests over `ray.num_replicas` replicas, on this
machine or across a cluster (`ray.address`). Note that `/admin/reload` reaches one replica
per call: with several replicas, restart the deployment instead.

    prover serve --ray --index runs/retriever-tiny --corpus ../shared/data/mathlib-src-mini
"""
from __future__ import annotations

import logging
from typing import Any

from omegaconf import OmegaConf
from ray import serve

from prover.serve.settings import ServeConfig
from prover.utils.ray_cluster import start_ray

log = logging.getLogger(__name__)

APP_NAME = "premise-search"


def _config(plain: dict) -> Any:
    return OmegaConf.merge(OmegaConf.structured(ServeConfig), plain)


@serve.deployment(name="PremiseSearch")
@serve.ingress()
class PremiseSearchDeployment:
    """A replica: the service is built in the replica's process, never shipped to it."""

    def __init__(self, plain_cfg: dict) -> None:
        from prover.serve.service import SearchService
        self.service = SearchService(_config(plain_cfg))

    def __serve_build_asgi_app__(self) -> Any:
        from prover.serve.app import create_app
        return create_app(self.service)

    def __del__(self) -> None:
        service = getattr(self, "service", None)
        if service is not None:
            service.close()


def build_app(cfg: Any) -> Any:
    """The bound deployment (a Ray Serve Application) for `cfg`."""
    r = cfg.ray
    options = {"num_cpus": r.num_cpus, **({"num_gpus": r.num_gpus} if r.num_gpus else {})}
    plain = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else dict(cfg)
    return PremiseSearchDeployment.options(
        num_replicas=r.num_replicas, max_ongoing_requests=r.max_ongoing_requests,
        ray_actor_options=options).bind(plain)


def start(cfg: Any, blocking: bool = False) -> Any:
    """Start (or join) Ray, bind Serve's HTTP proxy to cfg.host:cfg.port, deploy; returns a handle."""
    start_ray(cfg.ray.address)
    serve.start(http_options={"host": cfg.host, "port": cfg.port})
    handle = serve.run(build_app(cfg), name=APP_NAME, route_prefix="/", blocking=blocking)
    log.info("Ray Serve: %s on http://%s:%d (%d replicas)", APP_NAME, cfg.host, cfg.port, cfg.ray.num_replicas)
    return handle


def stop() -> None:
    serve.delete(APP_NAME)
    serve.shutdown()
