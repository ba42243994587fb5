"""`prover benchmark`: prove a set of theorems in parallel on Ray and compare retrievers.

The driver loads the theorems, skips those the results file already has, starts the actors
(`prover.search.actors`) and hands theorems to idle workers. Each finished theorem is appended
to the results file at once (`prover.search.results`). A worker that dies (killed, OOM, node
lost) is dropped and its theorem goes to another worker, at most `ray.max_attempts` times in
all; the run completes on the workers left. On Ctrl-C the file already holds every finished
theorem, and a rerun resumes.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prover.data.jsonio import write_json
from prover.env.base import ENV_LEANDOJO, ENV_REPL
from prover.env.repl_session import memory_check, memory_workers, prepare
from prover.env.trace_ahead import trace_ahead
from prover.utils.batching import BatchingConfig
from prover.search.project_premises import ensure_corpus
from prover.search.components import (check_sources, env_spec, generator_spec, refuse_bare_generator,
                                      require_env, resolve_env, retriever_spec)
from prover.search.results import (RUN_INFO, ResultsFile, check_run_info, lost_record, rate_label,
                                   summarize_run, write_summary)
from prover.search.settings import EnvSettings, as_object, resume_settings, run_name
from prover.search.file_queue import FileQueue
from prover.search.theorems import ProofTask, load_tasks
from prover.utils.progress import progress_bar
from prover.utils.ray_cluster import RayWaitTimeout
from prover.utils.runinfo import git_commit, machine

log = logging.getLogger(__name__)


@dataclass
class Hooks:
    """Callbacks for tests and tools watching a run (all optional)."""

    on_result: Callable[[dict, Any], None] | None = None  # (record, dispatcher) after each append
    on_dispatch: Callable[[ProofTask, Any, int], None] | None = None  # (task, worker, attempt)
    on_fleet: Callable[[Any], None] | None = None  # (fleet) once the actors are up


class AllWorkersLost(RuntimeError):
    pass


class Dispatcher:
    """Hands theorems to idle workers and records each result as it arrives."""

    def __init__(self, fleet: Any, results: ResultsFile, env: str, retriever: str,
                 max_attempts: int, hooks: Hooks | None = None, stall_s: float | None = None) -> None:
        self.fleet = fleet
        self.results = results
        self.env = env
        self.retriever = retriever
        self.max_attempts = max(1, max_attempts)
        self.hooks = hooks or Hooks()
        self.stall_s = stall_s  # the longest wait for the next result before giving up
        self.alive = list(fleet.workers)
        self.in_flight: dict[Any, tuple[Any, ProofTask, int]] = {}  # ref -> (worker, task, attempt)
        self.workers_lost = 0
        self.retries = 0
        self.recorded = 0
        self.expansions = 0
        self.seconds = 0.0  # from the first dispatch to the last result

    def busy_workers(self) -> list[Any]:
        return [w for w, _, _ in self.in_flight.values()]

    def run(self, tasks: list[ProofTask], progress: bool = True, already_done: int = 0) -> None:
        import ray
        from ray.exceptions import RayActorError, RayTaskError
        pending = FileQueue((t, 1) for t in tasks)  # a file's theorems to one worker, in order
        idle = list(self.alive)
        proved = 0
        t0 = time.perf_counter()
        bar = progress_bar(total=len(tasks) + already_done, initial=already_done,
                           desc=f"search ({self.env}, {self.retriever})", unit="theorem", disable=not progress)
        try:
            while pending or self.in_flight:
                while idle and pending:
                    worker = idle.pop()
                    task, attempt = pending.pop_for(worker)
                    self.in_flight[worker.prove.remote(task, attempt)] = (worker, task, attempt)
                    if self.hooks.on_dispatch is not None:
                        self.hooks.on_dispatch(task, worker, attempt)
                if not self.in_flight:
                    raise AllWorkersLost(f"every worker died; {len(pending)} theorems were not attempted "
                                         f"(rerun to resume)")
                ready = self._wait(bar)
                for ref in ready:
                    worker, task, attempt = self.in_flight.pop(ref)
                    try:
                        record = ray.get(ref)
                    except RayTaskError as e:
                        # The search raised (a model actor died under it, say); the worker lives
                        # on. Caught first: the error may wrap a RayActorError of that actor.
                        idle.append(worker)
                        log.warning("search of %s failed (attempt %d): %s", task.name, attempt,
                                    _first_line(e))
                        self._retry_or_give_up(pending, task, attempt, _first_line(e))
                        continue
                    except RayActorError as e:  # the worker itself died: drop it
                        self.workers_lost += 1
                        self.alive.remove(worker)
                        log.warning("worker died while proving %s (attempt %d): %s", task.name, attempt,
                                    _first_line(e))
                        self._retry_or_give_up(pending, task, attempt, f"worker died: {_first_line(e)}")
                        continue
                    idle.append(worker)
                    self._record(record)
                    proved += record["status"] == "proved"
                    bar.update(1)
                    bar.set_postfix(refresh=False, proved=proved, workers=len(self.alive))
                    if self.hooks.on_result is not None:
                        self.hooks.on_result(record, self)
        finally:
            self.seconds += time.perf_counter() - t0
            bar.close()

    def _wait(self, bar: Any) -> list:
        """The next finished searches, waited on in slices (the bar's clock keeps moving) for at
        most `stall_s` in all: a worker stuck past every search's own limit ends the run in one
        line instead of a silent wait."""
        import ray
        t0 = time.monotonic()
        while True:
            left = None if self.stall_s is None else self.stall_s - (time.monotonic() - t0)
            if left is not None and left <= 0:
                raise RayWaitTimeout(
                    f"ray: no theorem finished in {self.stall_s:g} s ({len(self.in_flight)} in flight; each "
                    f"search stops at its own time limit): a worker or model actor is stuck; what finished "
                    f"is recorded and a rerun resumes (ray.stall_timeout_s sets this limit)")
            ready, _ = ray.wait(list(self.in_flight), num_returns=1, timeout=30.0 if left is None else min(30.0, left))
            if ready:
                return ready
            bar.refresh()

    def _record(self, record: dict) -> None:
        if record.get("first_input") is not None:  # -v: the exact bytes the generator read first
            log.debug("%s (%s): the generator's input for its first state:\n%s", record.get("theorem"),
                      self.retriever, record["first_input"])
        self.results.append(record)
        self.recorded += 1
        self.expansions += record.get("expansions", 0)

    def _retry_or_give_up(self, pending: FileQueue, task: ProofTask, attempt: int, message: str) -> None:
        if attempt < self.max_attempts:
            self.retries += 1
            pending.push_front(task, attempt + 1)  # next free worker takes it first
            return
        self._record(lost_record(task, self.env, self.retriever, attempt,
                                 f"gave up after {attempt} attempts; last: {message}"))


def stall_limit(ray_cfg: Any, search: Any) -> float | None:
    """ray.stall_timeout_s, else 3 x the search's time limit + the actors' start limit (a
    theorem's search, its environment's start and a restarted model actor all fit); 0: none."""
    if ray_cfg.stall_timeout_s is not None:
        return ray_cfg.stall_timeout_s or None
    return 3 * search.timeout_s + ray_cfg.start_timeout_s


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def run_one(cfg: Any, session: Any, hooks: Hooks | None = None, command: str = "",
            tactic_spec: Any = None) -> dict:
    """One run (one env and retriever) of the benchmark; returns its summary row. `session`
    (an actors.RaySession) connects to Ray when there is something to prove; `tactic_spec`
    replaces the generator that cfg.generator describes (tests pass a test double)."""
    from prover.search import actors
    resolve_env(cfg)
    require_env(cfg.env.name)
    search = as_object(cfg.search)
    batching: BatchingConfig = as_object(cfg.batching)
    env: EnvSettings = env_spec(cfg)
    max_workers = None  # unset num_workers: at most the REPLs this machine's memory holds
    if cfg.env.name == ENV_REPL and actors.resolve_address(cfg.ray.address) == "local":
        if cfg.ray.num_workers is not None:
            memory_check(cfg.ray.num_workers, env.repl)  # before anything is written (a cluster places workers by memory)
        else:
            max_workers = memory_workers(env.repl)
    tasks = load_tasks(cfg.theorems, cfg.env.repl.project)  # first: a missing theorems file is named as itself
    ensure_corpus(cfg)  # no --corpus: the premises of the project the run is on (built once)
    # Before run.json is written and Ray starts: the corpus parses, the models are there.
    check_sources(retriever_spec(cfg), tactic_spec or generator_spec(cfg))
    name = run_name(cfg)
    run_dir = Path(cfg.out_dir) / name
    results = ResultsFile(run_dir / "results.jsonl")
    check_run_info(run_dir, resume_settings(cfg), {
        "command": command, "git_commit": git_commit(), "machine": machine(), "theorems": len(tasks),
        "env_label": f"env: {cfg.env.name}", "rate_label": rate_label(cfg.env.name)})
    results.repair()
    done = results.finished_keys()
    todo = [t for t in tasks if t.key not in done]
    log.info("%s: %d theorems, %d already finished, %d to prove (env: %s, retriever: %s)",
             name, len(tasks), len(tasks) - len(todo), len(todo), cfg.env.name, cfg.retriever.name)
    stats: dict[str, Any] = {}
    if todo:
        if cfg.env.name == ENV_LEANDOJO:  # tracing cannot run in a Ray worker: do it first, here
            trace_ahead({(t.theorem.url, t.theorem.commit) for t in todo}, env.leandojo.build_deps,
                        progress=cfg.progress)
        if cfg.env.name == ENV_REPL:
            env = replace(env, repl=prepare(env.repl))  # the REPL is built here once, not per worker
        session.ensure()
        fleet = None
        t0 = time.perf_counter()
        try:
            # Every theorem of the benchmark is held out of the priors and the tactic neighbours.
            held_out = [t.key for t in tasks]
            fleet = actors.start_fleet(cfg.ray, retriever_spec(cfg, held_out),
                                       tactic_spec or generator_spec(cfg, held_out), env, search, batching, name,
                                       tasks=len(todo), max_workers=max_workers)
            if hooks and hooks.on_fleet:
                hooks.on_fleet(fleet)
            dispatcher = Dispatcher(fleet, results, cfg.env.name, cfg.retriever.name,
                                    cfg.ray.max_attempts, hooks, stall_s=stall_limit(cfg.ray, search))
            dispatcher.run(todo, progress=cfg.progress, already_done=len(tasks) - len(todo))
            stats = {"wall_s": round(time.perf_counter() - t0, 2), "dispatch_s": round(dispatcher.seconds, 3),
                     "expansions": dispatcher.expansions, "workers_lost": dispatcher.workers_lost,
                     "retries": dispatcher.retries, **fleet.stats()}
        finally:
            if fleet is not None:
                fleet.shutdown()
        _save_batching(run_dir, stats)
    row = summarize_run([r for r in results.records() if r["key"] in {t.key for t in tasks}], len(tasks))
    row["last_session"] = stats
    return row


def _save_batching(run_dir: Path, stats: dict) -> None:
    """Keep the last session's achieved batch sizes beside the results (run.json)."""
    path = run_dir / RUN_INFO
    info = json.loads(path.read_text())
    info["batching"] = {"retriever": stats.get("retriever"), "generators": stats.get("generators")}
    info["last_session"] = {k: stats.get(k) for k in ("wall_s", "dispatch_s", "expansions", "workers_lost",
                                                      "retries")}
    write_json(path, info)


def run_benchmark(cfg: Any, retrievers: list[str] | None = None, hooks: Hooks | None = None,
                  command: str = "", tactic_spec: Any = None, partial: dict | None = None) -> dict:
    """Run the benchmark once per retriever (default: cfg.retriever.name) into cfg.out_dir,
    then write the summary (JSON + Markdown) over every run in that folder. `partial`
    (stage -> note) names models their time budget stopped; the summary says so."""
    from omegaconf import OmegaConf
    from prover.search.actors import RaySession
    if tactic_spec is None:  # before any run.json and before Ray: a bare model gets no premises
        refuse_bare_generator(cfg, retrievers or [cfg.retriever.name])
    rows = {}
    session = RaySession(cfg.ray)
    try:
        for name in retrievers or [cfg.retriever.name]:
            run_cfg = OmegaConf.merge(cfg, {"retriever": {"name": name}})
            if retrievers and len(retrievers) > 1 and cfg.run_name:
                run_cfg.run_name = f"{cfg.run_name}-{name}"
            rows[run_name(run_cfg)] = run_one(run_cfg, session, hooks, command, tactic_spec)
    finally:
        session.close()
    summary = write_summary(cfg.out_dir, {"command": command, "git_commit": git_commit(),
                                          **({"partial": partial} if partial else {})})
    summary["this_invocation"] = rows
    return summary
