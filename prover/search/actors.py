"""Ray actors: one retriever and one or more generators shared by N search workers.

- `RetrieverActor` holds any retriever (built from a spec in the actor's process) and serves
  premises; `GeneratorActor` holds a tactic generator. Both are async actors: each request
  awaits a `DynamicBatcher`, so concurrent requests from many workers run as one batch. Both
  can be given GPUs (`num_gpus`), and Ray restarts them if they die (`actor_restarts`).
- `ProverWorker` runs one search at a time in environments it opens itself. Its premise and
  tactic sources call the shared actors (`ActorPremises`, `ActorTactics`); with
  `shared_retriever: false` it builds its own retriever copy instead (the comparison
  benchmarks/search.py measures).

`connect` starts a local Ray by default and joins a cluster when given an address (or when
`RAY_ADDRESS` is set, as in a job started by `ray job submit`), with the same code either way.
"""
from __future__ import annotations

import logging
import math
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ray

from prover.data.premise import Premise
from prover.env.base import ENV_REPL
from prover.search.async_batcher import DynamicBatcher
from prover.search.best_first import SearchConfig, best_first_search
from prover.search.components import describe, premise_source, require_env, tactic_source
from prover.search.results import make_record
from prover.search.settings import EnvSettings, GeneratorSettings
from prover.search.sources import ModelCallTimeout, Suggested
from prover.search.theorems import ProofTask
from prover.utils.batching import BatchingConfig
from prover.utils.ray_cluster import resolve_address, start_ray
from retriever.settings import RetrieverConfig

log = logging.getLogger(__name__)

def _rss_mib() -> float:
    import psutil
    return psutil.Process().memory_info().rss / 2**20


def _process_info() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "rss_mib": round(_rss_mib(), 1)}


def _batcher(fn: Any, cfg: BatchingConfig) -> DynamicBatcher:
    return DynamicBatcher(fn, cfg.max_batch_size, cfg.max_wait_ms / 1000.0)


@ray.remote
class RetrieverActor:
    """Premises for states, batched across all callers."""

    def __init__(self, choice: RetrieverConfig, batching: BatchingConfig) -> None:
        self.source = premise_source(choice)
        self.name = choice.name
        self.batcher = _batcher(self._batch, batching)

    def _batch(self, items: list[tuple[str, Any]]) -> list[list[Premise]]:
        states, contexts = zip(*items)
        return self.source.retrieve(list(states), list(contexts))

    async def retrieve(self, states: Sequence[str], contexts: Sequence[Any]) -> list[list[Premise]]:
        return await self.batcher.submit(list(zip(states, contexts)))

    async def stats(self) -> dict:
        return {**self.batcher.stats(), **_process_info(), "name": self.name,
                "contexts_dropped": getattr(self.source, "contexts_dropped", 0)}


@ray.remote
class GeneratorActor:
    """Tactics for (state, premises) requests, batched across all callers."""

    def __init__(self, settings: GeneratorSettings | Any, batching: BatchingConfig) -> None:
        self.source = tactic_source(settings)
        self.name = describe(settings)
        self.batcher = _batcher(self.source.suggest, batching)

    async def suggest(self, requests: Sequence[tuple[str, Sequence[Premise]]]) -> list[list[Suggested]]:
        return await self.batcher.submit(list(requests))

    async def inputs(self, requests: Sequence[tuple[str, Sequence[Premise]]]) -> list[str] | None:
        """The exact text the model reads for each request (None: a source that cannot say)."""
        texts = getattr(self.source, "input_texts", None)
        return texts(list(requests)) if texts is not None else None

    async def stats(self) -> dict:
        return {**self.batcher.stats(), **_process_info(), "name": self.name}


def _bounded_get(ref: Any, timeout_s: float | None, what: str) -> Any:
    """The answer of one actor call, waited on for at most `timeout_s` (the search's time budget):
    the search checks its clock between calls, and this is the check inside one. A call that
    outlives it is cancelled and raised as ModelCallTimeout, which ends the theorem as a timeout."""
    try:
        return ray.get(ref, timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        ray.cancel(ref)
        raise ModelCallTimeout(f"{what} took over {timeout_s} s") from None


class ActorPremises:
    """PremiseSource backed by a RetrieverActor; each call waits at most `timeout_s`."""

    def __init__(self, actor: Any, timeout_s: float | None = None) -> None:
        self.actor = actor
        self.timeout_s = timeout_s

    def retrieve(self, states: Sequence[str], contexts: Sequence[Any]) -> list[list[Premise]]:
        return _bounded_get(self.actor.retrieve.remote(list(states), list(contexts)), self.timeout_s, "retrieval")


class ActorTactics:
    """TacticSource backed by a GeneratorActor; each call waits at most `timeout_s`."""

    def __init__(self, actor: Any, timeout_s: float | None = None) -> None:
        self.actor = actor
        self.timeout_s = timeout_s
        self.first: tuple[str, Sequence[Premise]] | None = None  # this theorem's first request

    def suggest(self, requests: Sequence[tuple[str, Sequence[Premise]]]) -> list[list[Suggested]]:
        if self.first is None and requests:
            self.first = requests[0]
        return _bounded_get(self.actor.suggest.remote(list(requests)), self.timeout_s, "generation")

    def first_input(self) -> str | None:
        """The exact text the generator read for this theorem's first state (`-v` shows it)."""
        if self.first is None:
            return None
        try:
            texts = _bounded_get(self.actor.inputs.remote([self.first]), self.timeout_s, "generator input")
        except (ModelCallTimeout, ray.exceptions.RayError) as e:
            log.debug("no generator input recorded: %s", e)
            return None
        return texts[0] if texts else None


@ray.remote
class ProverWorker:
    """Runs searches one theorem at a time, each in an environment of its own."""

    def __init__(self, worker_id: str, env: EnvSettings, search: SearchConfig, retriever_name: str,
                 premises: Any, tactics: Any) -> None:
        """`premises`: a RetrieverActor handle, or the retriever choice to build a private copy from;
        `tactics`: a GeneratorActor handle."""
        require_env(env.name)  # on a cluster, the node running the worker must have Lean
        self.worker_id = worker_id
        self.env = env
        self.search = search
        self.retriever_name = retriever_name
        self.premises = (premise_source(premises) if isinstance(premises, RetrieverConfig)
                         else ActorPremises(premises, search.timeout_s))
        self.tactics = ActorTactics(tactics, search.timeout_s)
        # One Lean REPL per worker, kept across theorems: a header (Mathlib's imports) is
        # elaborated once per worker and reused by environment id.
        self.session = env.session()
        self.expansions = 0
        self.theorems = 0

    def prove(self, task: ProofTask, attempt: int) -> dict:
        env = self.env.make(task.theorem, task.repl, self.session)
        self.tactics.first = None
        result = best_first_search(env, self.premises, self.tactics, self.search, context=_context(task))
        self.expansions += result.expansions
        self.theorems += 1
        record = make_record(task, result, self.retriever_name, attempt, self.worker_id)
        first = self.tactics.first_input()
        if first is not None:
            record["first_input"] = first
        return record

    def info(self) -> dict:
        out = {**_process_info(), "worker": self.worker_id, "expansions": self.expansions,
               "theorems": self.theorems}
        if self.session is not None:
            out.update(repl_restarts=self.session.restarts, repl_memory_restarts=self.session.memory_restarts,
                       repl_mib=round(self.session.memory_mb(), 1))
        return out


def _context(task: ProofTask) -> Any:
    """Where the theorem may take premises from: a MiniF2F theorem, opened after its header,
    from the modules the header imports; a theorem of a file, from before it in that file."""
    from retriever.base import TheoremContext
    if task.repl is not None and task.repl.header:
        from prover.search.project_premises import header_context
        ctx = header_context(task.repl.header)
        if ctx is not None:
            return ctx
    t = task.theorem
    return TheoremContext(t.file_path, t.start)


# -- connecting ------------------------------------------------------------------------------

def connect(cfg: Any) -> bool:
    """Start or join Ray as `cfg` (a RayConfig) says. Returns whether we started it (and so
    should shut it down); an already initialized Ray is used as it is."""
    return start_ray(cfg.address, cfg.local_num_cpus, cfg.object_store_mb, cfg.temp_dir)


class RaySession:
    """Connects on first need (a rerun with nothing left to prove starts no Ray) and shuts down
    on close only a Ray it started."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        self.started = False

    def ensure(self) -> None:
        if not ray.is_initialized():
            self.started = connect(self.cfg) or self.started

    def close(self) -> None:
        if self.started and ray.is_initialized():
            ray.shutdown()
        self.started = False


def gpu_share(requested: float | None, consumers: int) -> float:
    """GPUs for one of `consumers` model actors: as requested, or an equal share of one GPU
    when the cluster has any (Ray accepts fractions below 1)."""
    if requested is not None:
        return float(requested)
    total = ray.cluster_resources().get("GPU", 0.0)
    if total <= 0:
        return 0.0
    share = total / consumers
    return 1.0 if share >= 1 else math.floor(share * 100) / 100


@dataclass
class Fleet:
    """The actors of one benchmark run."""

    retriever: Any | None
    generators: list[Any]
    workers: list[Any]

    def all_actors(self) -> list[Any]:
        return ([self.retriever] if self.retriever is not None else []) + self.generators + self.workers

    def stats(self) -> dict:
        """Batching and memory of every actor still alive (dead ones are left out)."""
        out: dict[str, Any] = {"retriever": None, "generators": [], "workers": []}
        if self.retriever is not None:
            out["retriever"] = _quiet_get(self.retriever.stats.remote())
        out["generators"] = [s for s in (_quiet_get(g.stats.remote()) for g in self.generators) if s]
        out["workers"] = [s for s in (_quiet_get(w.info.remote()) for w in self.workers) if s]
        return out

    def shutdown(self) -> None:
        for actor in self.all_actors():
            try:
                ray.kill(actor, no_restart=True)
            except Exception as e:  # already dead
                log.debug("ray.kill: %s", e)


def _quiet_get(ref: Any, timeout: float = 30.0) -> Any:
    try:
        return ray.get(ref, timeout=timeout)
    except Exception as e:
        log.debug("actor did not answer: %s", e)
        return None


def _settled_local_resources(wait_s: float = 10.0) -> dict:
    """What a local cluster has free once the actors of a run that just ended are gone: Ray frees
    their CPUs asynchronously, so a second run in one session waits up to `wait_s` for what is
    free to reach the totals before it is planned (else it would be refused on a passing count)."""
    import time
    total = ray.cluster_resources().get("CPU", 0.0)
    deadline = time.monotonic() + wait_s
    free = ray.available_resources()
    while free.get("CPU", 0.0) < total and time.monotonic() < deadline:
        time.sleep(0.2)
        free = ray.available_resources()
    return free


def start_fleet(cfg: Any, retriever_spec: Any, generator_spec: Any, env: EnvSettings,
                search: SearchConfig, batching: BatchingConfig, run: str, tasks: int = 0,
                max_workers: int | None = None) -> Fleet:
    """Start the model actors and the ProverWorkers (`cfg` is a RayConfig), sized to what the
    cluster has (prover/search/placement.py; a request that cannot fit is refused in one line
    before any actor starts); waits, with a progress line and `cfg.start_timeout_s`, until every
    actor is up, so a model that fails to load fails here."""
    from prover.search.placement import plan
    from prover.utils.ray_cluster import wait_ready
    uses_retriever = retriever_spec.name != "none"
    shared = uses_retriever and cfg.shared_retriever
    remote = resolve_address(cfg.address) != "local"
    # A local cluster is ours: what is free now is what the run gets. A cluster may be busy with
    # other jobs for a while; its totals say what can ever be placed (the wait below is bounded).
    resources = ray.cluster_resources() if remote else _settled_local_resources()
    placed = plan(cfg, shared_retriever=shared, tasks=tasks, cpus=resources.get("CPU", 0.0),
                  gpus=resources.get("GPU", 0.0), max_workers=max_workers,
                  where="the cluster" if remote else "the local Ray cluster")
    log.info("%s", placed.note)
    common = dict(max_concurrency=cfg.max_concurrency, max_restarts=cfg.actor_restarts,
                  max_task_retries=cfg.actor_restarts)
    retriever = None
    if shared:
        retriever = RetrieverActor.options(num_cpus=placed.retriever_cpus, num_gpus=placed.retriever_gpus,
                                           **common).remote(retriever_spec, batching)
    generators = [GeneratorActor.options(num_cpus=placed.generator_cpus, num_gpus=placed.generator_gpus,
                                         **common).remote(generator_spec, batching)
                  for _ in range(cfg.num_generators)]
    premises = retriever if retriever is not None else retriever_spec
    # On a cluster a REPL worker asks Ray for its REPL's memory, so no node gets more of them
    # than fit (a REPL that imported Mathlib holds several GiB). A local run was checked against
    # the machine's memory before it started; there Ray's own memory resource (a share of what
    # is free) could leave a worker waiting forever.
    memory = int(env.repl.memory_gb * 2**30) if env.name == ENV_REPL and remote else None
    workers = [ProverWorker.options(num_cpus=placed.worker_cpus, max_restarts=0, memory=memory).remote(
        f"{run}/worker-{i}", env, search, retriever_spec.name, premises, generators[i % len(generators)])
        for i in range(placed.num_workers)]
    fleet = Fleet(retriever, generators, workers)
    try:  # a model that does not load, or an env that cannot run, fails here and says why
        wait_ready([a.__ray_ready__.remote() for a in fleet.all_actors()], cfg.start_timeout_s,
                   "search actors (retriever, generators, workers)", "ray.start_timeout_s",
                   hint="" if not remote else "; a cluster busy with other jobs places them when it frees")
    except BaseException:
        fleet.shutdown()
        raise
    return fleet
