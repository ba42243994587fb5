"""How many search workers, and how many CPUs and GPUs each actor asks Ray for: sized from what
the cluster has, before any actor is created (issue 61).

Ray places an actor only when a node has every resource it asks for; an actor that fits nowhere
waits forever, silently. So the fleet is planned here against the resources Ray reports, and a
request that cannot fit is refused in one line naming the setting to change, within seconds.

- A setting left unset (null) is sized to fit: model actors (the shared retriever, the
  generators) and workers ask for one CPU each when the cluster has room for all of them and at
  least one worker, else an equal share of what there is; the number of workers is what the
  remaining CPUs hold (one CPU each), at most one per theorem to prove, and at most what the
  machine's memory holds for REPL workers on a local cluster.
- A setting the user gave is honoured as given when it fits, and refused when it does not.
- GPUs: a request the cluster cannot meet is refused; unset, the model actors share one GPU when
  there is one (`gpu_share`), else none.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from prover.config import ConfigError

# Smallest CPU share worth asking for: below it an actor would be starved, not placed.
MIN_SHARE = 0.05


class PlacementError(ConfigError):
    """The fleet asked for cannot be placed on this cluster (one line, naming the setting)."""


@dataclass(frozen=True)
class Placement:
    num_workers: int
    worker_cpus: float
    retriever_cpus: float  # 0 when no shared retriever actor runs
    generator_cpus: float
    retriever_gpus: float
    generator_gpus: float
    note: str  # one line: what was asked for and what it fit into

    def cpus(self, num_generators: int) -> float:
        return self.num_workers * self.worker_cpus + self.retriever_cpus + num_generators * self.generator_cpus


def _floor(x: float) -> float:
    return math.floor(x * 100 + 1e-9) / 100


def _fmt(x: float) -> str:
    return f"{x:g}"


def plan(cfg: Any, *, shared_retriever: bool, tasks: int, cpus: float, gpus: float = 0.0,
         max_workers: int | None = None, where: str = "Ray") -> Placement:
    """The fleet for RayConfig `cfg` on a cluster with `cpus`/`gpus` to give, proving `tasks`
    theorems. `max_workers` caps unset num_workers (memory); `where` names the cluster in errors."""
    if cfg.num_generators <= 0:
        raise PlacementError(f"ray.num_generators must be positive, got {cfg.num_generators}")
    if cfg.num_workers is not None and cfg.num_workers <= 0:
        raise PlacementError(f"ray.num_workers must be positive (or null: as many as fit), got {cfg.num_workers}")
    for key in ("worker_cpus", "retriever_cpus", "generator_cpus"):
        value = getattr(cfg, key)
        if value is not None and value < 0:
            raise PlacementError(f"ray.{key} must be 0 or more (or null: sized to fit), got {value}")
    gens = cfg.num_generators
    retr = 1 if shared_retriever else 0
    gpu = _plan_gpus(cfg, retr, gpus, where)

    def fill(auto: float, n: int) -> tuple[float, float, float]:
        w = cfg.worker_cpus if cfg.worker_cpus is not None else auto
        r = (cfg.retriever_cpus if cfg.retriever_cpus is not None else auto) if retr else 0.0
        g = cfg.generator_cpus if cfg.generator_cpus is not None else auto
        return w, r, g

    def need(n: int, w: float, r: float, g: float) -> float:
        return n * w + r + gens * g

    cap = max(1, min(tasks or 1, max_workers or 10**6))
    # First: every unset CPU value one whole CPU, and as many workers as the rest holds.
    w, r, g = fill(1.0, 1)
    if cfg.num_workers is not None:
        n = cfg.num_workers
    else:
        n = int((cpus - r - gens * g) // w) if w > 0 else cap
        n = max(1, min(n, cap))
    if need(n, w, r, g) <= cpus + 1e-9:
        return Placement(n, w, r, g, *gpu, note=_note(n, w, r, g, gens, cpus, where))
    # Else: the unset values share what the set ones leave.
    auto_units = ((n if cfg.worker_cpus is None else 0) + (retr if cfg.retriever_cpus is None else 0)
                  + (gens if cfg.generator_cpus is None else 0))
    fixed = need(n, *fill(0.0, n))
    if auto_units:
        share = min(1.0, _floor((cpus - fixed) / auto_units))
        if share >= MIN_SHARE:
            w, r, g = fill(share, n)
            return Placement(n, w, r, g, *gpu, note=_note(n, w, r, g, gens, cpus, where))
    raise PlacementError(_refusal(cfg, n, *fill(MIN_SHARE if auto_units else 0.0, n), gens, retr, cpus, where))


def _plan_gpus(cfg: Any, retr: int, gpus: float, where: str) -> tuple[float, float]:
    asked = (cfg.retriever_gpus or 0.0) * retr + (cfg.generator_gpus or 0.0) * cfg.num_generators
    if asked > gpus + 1e-9:
        keys = [k for k in ("retriever_gpus", "generator_gpus") if (getattr(cfg, k) or 0) > 0]
        raise PlacementError(
            f"the search asks for {_fmt(asked)} GPU ({', '.join(f'ray.{k}={_fmt(getattr(cfg, k))}' for k in keys)}) "
            f"but {where} has {_fmt(gpus)} free: set {' and '.join(f'ray.{k}=null' for k in keys)} "
            f"(a share of a GPU when there is one, else none)")
    consumers = cfg.num_generators + retr
    share = 0.0
    if gpus > 0:
        share = 1.0 if gpus / consumers >= 1 else math.floor(gpus / consumers * 100) / 100
    r = (cfg.retriever_gpus if cfg.retriever_gpus is not None else share) if retr else 0.0
    g = cfg.generator_gpus if cfg.generator_gpus is not None else share
    return float(r), float(g)


def _note(n: int, w: float, r: float, g: float, gens: int, cpus: float, where: str) -> str:
    parts = [f"{n} worker{'s' * (n != 1)} x {_fmt(w)} CPU"]
    if r:
        parts.append(f"retriever {_fmt(r)}")
    parts.append(f"{gens} generator{'s' * (gens != 1)} x {_fmt(g)}")
    return f"ray: {', '.join(parts)} (of {_fmt(cpus)} CPUs {where} has free)"


def _refusal(cfg: Any, n: int, w: float, r: float, g: float, gens: int, retr: int, cpus: float,
             where: str) -> str:
    asked = n * w + r + gens * g

    def each(key: str, value: float) -> str:  # an unset value at its smallest share
        return _fmt(value) if getattr(cfg, key) is not None else f"at least {_fmt(value)}"
    parts = [f"{n} worker{'s' * (n != 1)} x {each('worker_cpus', w)}"]
    if retr:
        parts.append(f"retriever {each('retriever_cpus', r)}")
    parts.append(f"{gens} generator{'s' * (gens != 1)} x {each('generator_cpus', g)}")
    fixes = []
    if cfg.num_workers is not None:
        fit = int((cpus - r - gens * g) // w) if w > 0 else 0
        fixes.append(f"ray.num_workers (--workers) to {fit} or fewer" if fit >= 1 else "ray.num_workers (--workers)")
    for key in ("worker_cpus", "retriever_cpus", "generator_cpus"):
        if getattr(cfg, key) is not None and (key != "retriever_cpus" or retr):
            fixes.append(f"ray.{key}")
    if cfg.num_generators > 1:
        fixes.append("ray.num_generators")
    fix = (f"lower {', '.join(fixes)}, or set them to null to fit the machine" if fixes
           else "give Ray more CPUs (ray.local_num_cpus, or a larger cluster)")
    return (f"the search asks Ray for {_fmt(asked)} CPUs ({', '.join(parts)}) but {where} has "
            f"{_fmt(cpus)} CPU{'s' * (cpus != 1)} free: {fix}")


def local_cpus(cfg: Any) -> float | None:
    """The CPUs a new local Ray cluster of `cfg` will have (ray.local_num_cpus, else what Ray
    detects: the machine's, within its cgroup), or None when the run joins a cluster."""
    import os
    if (cfg.address or os.environ.get("RAY_ADDRESS") or "local") != "local":
        return None
    if cfg.local_num_cpus is not None:
        return float(cfg.local_num_cpus)
    try:
        from ray._private.utils import get_num_cpus
        return float(get_num_cpus())
    except Exception:  # Ray's private helper moved: the machine's count
        return float(os.cpu_count() or 1)


def precheck(cfg: Any, retrievers: list[str]) -> None:
    """Refuse, before anything loads or Ray starts, a request a new local cluster cannot place
    (the same plan runs again on what Ray reports once it is up)."""
    cpus = local_cpus(cfg)
    if cpus is None:
        return
    shared = cfg.shared_retriever and any(r != "none" for r in retrievers)
    plan(cfg, shared_retriever=shared, tasks=1, cpus=cpus, gpus=float("inf"),
         where="the local Ray cluster")


__all__ = ["Placement", "PlacementError", "plan", "precheck", "local_cpus", "MIN_SHARE"]
