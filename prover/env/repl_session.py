"""One Lean REPL process, started and driven through lean-interact, for all the theorems a worker proves.

What we use of lean-interact 0.11.6 (read from its `server.py` and `config.py`):
- `LeanREPLConfig(project=LocalProject(dir), ...)` clones lean-interact's REPL fork and builds
  it with `lake build` once (under a file lock); `local_repl_path=` with `build_repl=False`
  uses a REPL already built instead. Build it once in the driver (`prepare`), never in each
  worker: workers get the built checkout's path.
- `LeanServer(config)` starts `lake env <repl>/.lake/build/bin/repl` in the project folder.
  `run_dict(request, timeout=...)` writes one JSON request and reads the answer up to the
  blank line. On a timeout it kills the process and raises `TimeoutError`; when the process
  closed its output it raises `ConnectionAbortedError`; on a dead process `ChildProcessError`;
  on output that is not JSON `json.JSONDecodeError`.
We call `run_dict`, not `run`: `run` validates answers with the fork's pydantic models, which
require `proofStatus`, and the upstream REPL before 2025 (e.g. at Lean v4.10.0-rc1, LeanDojo
Benchmark 4's toolchain) does not send it. `prover.env.repl_env` reads both dialects.

A restart loses every environment and proof state id. `generation` counts restarts, so the
envs built on this session know when their ids are stale and rebuild their states.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prover.env.repl_revision import (
    KernelReplayUnavailable,
    ReplRevision,
    kernel_problem,
    read_revision,
)

log = logging.getLogger(__name__)

GIB = 2**30


@dataclass
class ReplConfig:
    # The Lean project the REPL runs in (its folder: lean-toolchain, lakefile, built packages).
    # MiniF2F: a checkout of miniF2F-lean4; LeanDojo Benchmark 4: the traced Mathlib checkout.
    project: str | None = None
    # A built REPL checkout (has .lake/build/bin/repl) for the project's toolchain. null: lean-
    # interact fetches its REPL for that toolchain and builds it once (`prepare`, in the driver).
    repl_path: str | None = None
    # lean-interact's REPL revision (its fork's release; null: lean-interact's default, v1.3.19 in
    # 0.11.6, which we have not read). v1.3.18 is the release whose unpickling we read to replay
    # through the kernel up to toolchain v4.29 (prover/env/repl_revisions.json); the session
    # checks the revision it runs at start either way (prover.env.repl_revision).
    repl_rev: str | None = "v1.3.18"
    lake: str = "lake"
    timeout: float = 60.0  # seconds per tactic; past it the REPL is killed and restarted
    # Seconds to elaborate a header (importing Mathlib takes minutes the first time) or a file.
    startup_timeout: float = 600.0
    check_timeout: float = 300.0  # seconds for the full-theorem check of a candidate proof
    max_restarts: int = 1  # restarts per failing call before the theorem is given up
    # Memory one REPL holds: about 1 GiB bare, several GiB once Mathlib is imported. Used to
    # refuse a run whose workers cannot fit on the machine, and as each worker's Ray memory.
    memory_gb: float = 8.0
    # A REPL whose memory (its process tree's resident set) passes this is restarted between
    # two requests, and what the theorem needs (header environments, its proof states) is
    # rebuilt on demand. The REPL never frees an environment or a proof state, so without it
    # a worker grows for the whole run. null: memory_gb.
    max_memory_gb: float | None = None
    # lean-interact applies this as RLIMIT_AS, an address-space limit: Mathlib's .olean files
    # are memory-mapped (several GiB at LeanDojo's commit, more since) and Lean reserves
    # address space it never touches, so any limit low enough to bound real memory makes
    # `import Mathlib` fail. Default null (no limit): memory is bounded by max_memory_gb's
    # restarts instead. Set it only as a last guard, well above the mapped library.
    memory_hard_limit_mb: int | None = None
    # Each tactic runs under `set_option maxHeartbeats N in`, so Lean itself stops a runaway
    # tactic with an error and the REPL lives (MiniF2F's header sets maxHeartbeats 0, which
    # leaves only the wall-clock `timeout`, which kills the REPL). Twice Lean's default of
    # 200000; 0: no wrapping. Which limit a Lean version applies in the REPL's tactic mode is
    # not checked here without Lean (REPL issue #69: Lean's default there, before lean4#8646).
    max_heartbeats: int = 400000
    # Whether a proof may depend on Lean.ofReduceBool / Lean.trustCompiler (`native_decide`):
    # they trust the compiler, not the kernel. Every verdict records the setting in force.
    allow_native_decide: bool = False
    # Whether a proof's check ends with Lean's kernel replaying every constant it added
    # (pickle, then unpickle into a fresh import: `prover.env.verify`). It costs one import of
    # the header's modules per proof found, not per tactic. Off (or on a REPL revision not known
    # to replay through the kernel), no proof counts: each is `unverified`...
    kernel_replay: bool = True
    # ...unless this is set: proofs then count with no kernel replay behind them, and every
    # verdict, summary row and prove-sorries report says "NO kernel replay".
    accept_proofs_without_kernel_replay: bool = False
    # How a theorem's root goal is opened: `:= by sorry` or `:= sorry` (both give its goal).
    root: str = "by sorry"

    def __post_init__(self) -> None:
        if self.root not in ("by sorry", "sorry"):
            raise ValueError(f"env.repl.root must be 'by sorry' or 'sorry', not {self.root!r}")
        for key in ("timeout", "startup_timeout", "check_timeout", "memory_gb"):
            if getattr(self, key) <= 0:
                raise ValueError(f"env.repl.{key} must be positive, not {getattr(self, key)}")
        if self.max_memory_gb is not None and self.max_memory_gb <= 0:
            raise ValueError(f"env.repl.max_memory_gb must be positive or null, not {self.max_memory_gb}")
        if self.max_heartbeats < 0:
            raise ValueError(f"env.repl.max_heartbeats must be 0 (off) or positive, not {self.max_heartbeats}")
        if self.memory_hard_limit_mb is not None and self.memory_hard_limit_mb < 1024 * self.memory_limit_gb:
            raise ValueError(f"env.repl.memory_hard_limit_mb ({self.memory_hard_limit_mb}) is an address-space "
                             f"limit below the restart bound ({self.memory_limit_gb:g} GiB): Lean would fail "
                             f"before it restarts; raise it or set it to null")

    @property
    def memory_limit_gb(self) -> float:
        """The resident memory past which the REPL is restarted."""
        return self.max_memory_gb if self.max_memory_gb is not None else self.memory_gb


class ReplUnavailable(RuntimeError):
    """The REPL cannot be started here (no lake, no project, a build that failed)."""


class ReplTimeout(RuntimeError):
    """The REPL did not answer in time; lean-interact killed it."""


class ReplDied(RuntimeError):
    """The REPL process exited (a crash, or killed for memory) or answered something unreadable."""


def _lean_interact() -> Any:
    try:
        import lean_interact
    except ImportError as e:  # pragma: no cover - a declared dependency
        raise ReplUnavailable(f"lean-interact is not installed: {e}") from e
    return lean_interact


def lean_interact_config(cfg: ReplConfig, build: bool) -> Any:
    """The `LeanREPLConfig` for `cfg`. `build`: fetch and build the REPL if needed (the driver,
    once); False: use `cfg.repl_path` as it is (the workers)."""
    li = _lean_interact()
    if not cfg.project:
        raise ReplUnavailable("--env repl needs the Lean project to run in: set env.repl.project "
                              "to its folder (MiniF2F: a miniF2F-lean4 checkout, built)")
    project_dir = Path(cfg.project).expanduser()
    if not (project_dir / "lean-toolchain").is_file():
        raise ReplUnavailable(f"{project_dir} has no lean-toolchain file: env.repl.project must be a "
                              f"Lean project folder")
    project = li.LocalProject(directory=str(project_dir), lake_path=cfg.lake, auto_build=False)
    kwargs: dict[str, Any] = dict(project=project, lake_path=cfg.lake,
                                  memory_hard_limit_mb=cfg.memory_hard_limit_mb,
                                  enable_incremental_optimization=False, enable_parallel_elaboration=False)
    if cfg.repl_path:
        kwargs.update(local_repl_path=str(Path(cfg.repl_path).expanduser()), build_repl=build)
    elif not build:
        raise ReplUnavailable("no built REPL: prepare it in the driver first (env.repl.repl_path)")
    elif cfg.repl_rev:
        kwargs["repl_rev"] = cfg.repl_rev
    try:
        return li.LeanREPLConfig(**kwargs)
    except (OSError, RuntimeError, ValueError) as e:
        raise ReplUnavailable(f"cannot set up the Lean REPL for {project_dir}: "
                              f"{' '.join(str(e).split())[:500]}") from e


def prepare(cfg: ReplConfig) -> ReplConfig:
    """Fetch and build the REPL once (the driver's job), returning settings whose `repl_path`
    is the built checkout, for workers to start it without building."""
    li_cfg = lean_interact_config(cfg, build=True)
    problem = kernel_problem(read_revision(li_cfg.cache_repl_dir))
    if problem:  # said once at the start of a run; each proof's verdict repeats it
        log.warning("repl: %s", problem)
    return replace(cfg, repl_path=li_cfg.cache_repl_dir)


def build_lock_path() -> Path:
    """The node-wide lock file that orders REPL builds (one per user's cache)."""
    folder = Path("~/.cache/lean-premise-prover").expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "repl-build.lock"


def on_this_node(cfg: ReplConfig) -> ReplConfig:
    """`cfg` with a REPL checkout present on this machine. The driver builds the REPL once
    (`prepare`); a Ray worker on another node of a cluster does not see that folder, so it
    fetches and builds its own there, once per node: the workers of a node take one file lock
    in turn, the first builds, and the others find its build (recorded beside the lock) and
    start from it. lean-interact's own locks cover its cache folders, not a `lake build` that
    several workers would start at once."""
    if cfg.repl_path and Path(cfg.repl_path).expanduser().is_dir():
        return cfg
    from filelock import FileLock
    lock = build_lock_path()
    built = lock.with_suffix(".built.json")
    with FileLock(str(lock), timeout=cfg.startup_timeout * 4):
        done = json.loads(built.read_text()) if built.exists() else {}
        key = f"{Path(cfg.project or '').expanduser()}|{cfg.repl_rev}"
        if done.get(key) and Path(done[key]).is_dir():
            return replace(cfg, repl_path=done[key])
        log.warning("repl: %s is not on this node; building the REPL here", cfg.repl_path)
        ready = prepare(replace(cfg, repl_path=None))
        built.write_text(json.dumps({**done, key: ready.repl_path}))
        return ready


class ReplSession:
    """A Lean REPL process and the headers elaborated in it (each once, reused by env id)."""

    def __init__(self, cfg: ReplConfig) -> None:
        self.cfg = cfg
        self.generation = 0  # restarts so far: ids handed out before one are gone
        self.restarts = 0
        self.memory_restarts = 0  # of which for passing cfg.memory_limit_gb
        self._server: Any = None
        self._headers: dict[tuple[str, ...], int] = {}
        self._files: dict[tuple[str, str], dict] = {}  # (path, content hash) -> its answer
        self.revision: ReplRevision | None = None  # read at start (prover.env.repl_revision)
        self.kernel_problem: str | None = None  # why its kernel replay is not relied on, or None

    # -- process ---------------------------------------------------------------------------

    def start(self) -> None:
        li = _lean_interact()
        config = lean_interact_config(self.cfg, build=False)
        if self.revision is None:
            self.read_revision(config.cache_repl_dir)
        try:
            self._server = li.LeanServer(config)
        except (OSError, ChildProcessError) as e:
            raise ReplDied(f"the Lean REPL did not start: {' '.join(str(e).split())[:300]}") from e

    def read_revision(self, repl_dir: str) -> None:
        """Read the REPL's revision and whether its kernel replay is one we rely on (once)."""
        self.revision = read_revision(repl_dir)
        self.kernel_problem = kernel_problem(self.revision)
        if self.kernel_problem:
            log.warning("repl: %s", self.kernel_problem)
        else:
            log.info("repl: %s replays through the kernel", self.revision.describe())

    def close(self) -> None:
        server, self._server = self._server, None
        self._headers.clear()
        self._files.clear()
        if server is not None:
            server.kill()

    def restart(self) -> None:
        self.close()
        self.generation += 1
        self.restarts += 1
        self.start()

    def alive(self) -> bool:
        return self._server is not None and self._server.is_alive()

    def memory_mb(self) -> float:
        return self._server.get_memory_usage() if self._server is not None else 0.0

    def restart_if_over_memory(self) -> bool:
        """Restart a REPL past `cfg.memory_limit_gb` (call it where no request is in flight).
        What lean-interact's AutoLeanServer does in `run`, which we cannot call (its pydantic
        answers need the fork's `proofStatus`): after the restart every id is gone, and, as
        its ReplaySessionCache, what is needed is rebuilt by replaying it, on demand: headers
        by `header_env`, proof states by `ReplEnv` (unpickling an environment would not be
        cheaper: it imports its modules again)."""
        if self._server is None:
            return False
        used = self.memory_mb()
        if used <= self.cfg.memory_limit_gb * 1024:
            return False
        log.warning("repl: %.0f MiB past env.repl.max_memory_gb (%g GiB); restarting the REPL",
                    used, self.cfg.memory_limit_gb)
        self.memory_restarts += 1
        self.restart()
        return True

    # -- requests --------------------------------------------------------------------------

    def request(self, request: dict, timeout: float) -> dict:
        """One raw request and its answer. Raises ReplTimeout or ReplDied; either way the
        process is gone and the next request starts a new one (a new generation)."""
        if self._server is None:
            self.start()
        elif not self._server.is_alive():
            self.restart()
        try:
            return self._server.run_dict(request, timeout=timeout)
        except TimeoutError as e:
            self._dead()
            raise ReplTimeout(f"no answer within {timeout:g}s") from e
        except (ConnectionAbortedError, ChildProcessError, BrokenPipeError, json.JSONDecodeError,
                MemoryError, OSError) as e:
            self._dead()
            first = next((ln for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
            raise ReplDied(f"{type(e).__name__}: {first.strip()}"[:300]) from e

    def _dead(self) -> None:
        """The process is killed or exited: forget it and its ids."""
        if self._server is not None:
            try:
                self._server.kill()
            except Exception as e:  # already gone
                log.debug("repl: kill after failure: %s", e)
        self._server = None
        self._headers.clear()
        self._files.clear()
        self.generation += 1
        self.restarts += 1

    def command(self, cmd: str, env: int | None = None, timeout: float | None = None, **options: Any) -> dict:
        request: dict[str, Any] = {"cmd": cmd, **options}
        if env is not None:
            request["env"] = env
        return self.request(request, timeout or self.cfg.startup_timeout)

    def replay_in_kernel(self, env: int, timeout: float | None = None) -> tuple[str, int | None]:
        """Lean's kernel replays every constant of environment `env` (those added since its
        imports) into a fresh import of its modules: ("", the new environment's id) when it
        accepted them all, else (why not, None). The REPL's `pickleTo` writes the constants to
        an .olean; `unpickleEnvFrom` imports the modules again and adds each constant through
        `Lean.Environment.replay`, which sends it to the kernel with no options set (so
        `debug.skipKernelTC` cannot apply). At the pinned toolchains both REPL dialects do so
        (REPL/Snapshots.lean, `unpickle`); a kernel exception there is not caught, so the REPL
        process ends, and this says so. The new environment holds the replayed constants and
        none of the extension entries (macros, attributes) the original had added."""
        import tempfile
        if self.revision is None:
            self.read_revision(lean_interact_config(self.cfg, build=False).cache_repl_dir)
        if self.kernel_problem:
            raise KernelReplayUnavailable(self.kernel_problem)
        limit = timeout or self.cfg.check_timeout
        with tempfile.TemporaryDirectory(prefix="prover-kernel-") as folder:
            olean = str(Path(folder) / "check.olean")
            try:
                written = self.request({"pickleTo": olean, "env": env}, limit)
                if error_messages(written):
                    return f"the environment could not be pickled for the kernel replay: {error_messages(written)[0]}", None
                answer = self.request({"unpickleEnvFrom": olean}, limit)
            except (ReplDied, ReplTimeout) as e:
                return f"the kernel replay did not finish (a kernel exception ends the REPL): {e}", None
        errors = error_messages(answer)
        if errors or "env" not in answer:
            return f"the kernel replay failed: {errors[0] if errors else answer}", None
        return "", answer["env"]

    def step(self, proof_state: int, tactic: str, timeout: float | None = None) -> dict:
        return self.request({"tactic": tactic, "proofState": proof_state}, timeout or self.cfg.timeout)

    def file(self, path: str | Path, env: int | None = None, all_tactics: bool = False) -> dict:
        request: dict[str, Any] = {"path": str(path)}
        if all_tactics:
            request["allTactics"] = True
        if env is not None:
            request["env"] = env
        return self.request(request, self.cfg.startup_timeout)

    def file_sorries(self, path: str | Path) -> dict:
        """A project file's FileCommand answer, elaborated once per REPL process while the
        file is unchanged: every sorry of the file opens on its proof state from that one answer."""
        key = (str(path), hashlib.sha256(Path(path).read_bytes()).hexdigest())
        if key not in self._files:
            self._files[key] = self.file(path)
        return self._files[key]

    def header_env(self, header: tuple[str, ...]) -> int | None:
        """The environment id of `header` (commands, each run in the environment of the one
        before) elaborated in this process. Each prefix of it is elaborated once per process
        and reused: theorems whose headers share their first commands (the imports) share
        that work. None for an empty header (commands then run in a fresh environment).
        Raises HeaderError when Lean reports an error in it."""
        env: int | None = None
        for i, chunk in enumerate(header):
            key = header[:i + 1]
            if key not in self._headers:
                answer = self.command(chunk, env=env)
                errors = error_messages(answer)
                if "env" not in answer or errors:
                    raise HeaderError(f"the header does not elaborate: {errors[0] if errors else answer}")
                self._headers[key] = answer["env"]
            env = self._headers[key]
        return env


class HeaderError(RuntimeError):
    """Lean rejected a theorem's header (imports, options, opens)."""


def error_messages(answer: dict) -> list[str]:
    """Lean's errors in an answer: a REPL-level `message`, and messages of severity error."""
    out = [answer["message"]] if "message" in answer else []
    out += [m.get("data", "") for m in answer.get("messages", []) if m.get("severity") == "error"]
    return [" ".join(str(x).split())[:500] for x in out]


SORRY_WARNING = "declaration uses 'sorry'"  # Lean's warning, placed at the declaration's name


def uses_sorry(answer: dict) -> bool:
    """Whether Lean warned that a declaration of this answer uses `sorry`."""
    return any(m.get("severity") == "warning" and SORRY_WARNING in str(m.get("data", ""))
               for m in answer.get("messages", []))


class InsufficientMemory(RuntimeError):
    """The REPLs a run would start cannot fit in this machine's memory."""


def memory_workers(cfg: ReplConfig, available_gib: float | None = None) -> int:
    """How many REPL workers this machine's memory holds (at least one)."""
    if available_gib is None:
        import psutil
        available_gib = psutil.virtual_memory().total / GIB
    return max(1, int(available_gib // cfg.memory_gb))


def memory_check(workers: int, cfg: ReplConfig, available_gib: float | None = None) -> None:
    """Refuse a run whose REPLs cannot fit in this machine's memory, in one line naming both."""
    if available_gib is None:
        import psutil
        available_gib = psutil.virtual_memory().total / GIB
    need = workers * cfg.memory_gb
    if need > available_gib:
        raise InsufficientMemory(f"{workers} workers each hold a Lean REPL of about {cfg.memory_gb:g} GiB "
                          f"(env.repl.memory_gb): {need:g} GiB needed, this machine has "
                          f"{available_gib:.1f} GiB; lower ray.num_workers to "
                          f"{max(1, int(available_gib // cfg.memory_gb))} or fewer")



@contextmanager
def open_file_runner(project: str | Path, cfg: ReplConfig | None = None) -> Iterator[Callable[[Path], dict]]:
    """`run_file(path)`: a FileCommand with `allTactics` in a REPL started in `project` (the
    REPL is built once first), for tracing a project without lean-dojo. Between two files a
    REPL past `memory_limit_gb` is restarted (it keeps every file's environment otherwise)."""
    session = ReplSession(prepare(replace(cfg or ReplConfig(), project=str(project))))

    def run_file(path: Path) -> dict:
        session.restart_if_over_memory()
        return session.file(path, all_tactics=True)

    try:
        yield run_file
    finally:
        session.close()
