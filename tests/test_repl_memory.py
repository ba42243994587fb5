"""Bounded work and memory on a real run's shape: the 348 real leandojo-real/val records.

A counting stand-in plays the REPL (it answers every command with a fresh env id, a root
goal to a `:= by sorry`, and records what it was sent; it is the source of no result): the
workers get their theorems from the dispatcher's FileQueue, open each one as `ReplEnv` does,
and the requests are counted."""
from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from prover.env.repl_env import ReplEnv
from prover.env.repl_session import ReplConfig, ReplSession
from prover.env.source_target import file_plan
from prover.env.repl_env import target_from_source
from prover.data.theorem import Theorem
from prover.search.file_queue import FileQueue
from tests.conftest import require


class _Process:
    def kill(self) -> None:
        pass


class CountingRepl(ReplSession):
    """A stand-in REPL process: fresh env ids, a root goal per theorem, requests recorded, and
    memory that grows by `mib_per_env` for every environment it holds (none is ever freed)."""

    def __init__(self, cfg: ReplConfig, mib_per_env: float = 0.0) -> None:
        super().__init__(cfg)
        self.sent: list[dict] = []
        self.held = 0
        self.mib_per_env = mib_per_env

    def start(self) -> None:
        self._server = _Process()
        self.held = 0

    def memory_mb(self) -> float:
        return self.held * self.mib_per_env

    def request(self, request: dict, timeout: float) -> dict:
        if self._server is None:
            self.start()
        self.sent.append(request)
        self.held += 1
        answer = {"env": self.held}
        if request["cmd"].endswith(":= by sorry"):
            answer["sorries"] = [{"proofState": self.held, "goal": "⊢ goal"}]
        return answer


@pytest.fixture(scope="module")
def real_tasks(data_root):
    base = require(data_root / "mathlib-src" / "leandojo-real")
    tasks = []
    for r in json.loads((base / "val.json").read_text()):
        thm = Theorem(r["url"], r["commit"], r["file_path"], r["full_name"], tuple(r["start"]), tuple(r["end"]), ())
        tasks.append(SimpleNamespace(theorem=thm))
    return base / "source", tasks


def _run(project: Path, tasks: list, workers: list[CountingRepl]) -> tuple[dict, dict]:
    """Hand tasks to the workers in turn, as the dispatcher does; returns each worker's files
    and each file's (import lines, number of declarations, characters), and the characters of
    each file's commands each worker sent."""
    queue = FileQueue((t, 1) for t in tasks)
    files: dict[int, set] = {i: set() for i in range(len(workers))}
    plans: dict[str, tuple[str, int, int]] = {}
    chars: dict[tuple[int, str], int] = {}  # (worker, file) -> characters of the file's commands sent
    i = 0
    while queue:
        task, _ = queue.pop_for(i)
        f = task.theorem.file_path
        files[i].add(f)
        before = len(workers[i].sent)
        with ReplEnv(target_from_source(task.theorem, project), workers[i]) as env:
            assert env.initial_state.text == "⊢ goal"
        plan = file_plan(project / f)
        chars[(i, f)] = chars.get((i, f), 0) + sum(
            len(r["cmd"]) for r in workers[i].sent[before:]
            if not r["cmd"].startswith("import") and not r["cmd"].endswith(":= by sorry"))
        plans[f] = (plan.imports, len(plan.declarations), len(plan.text))
        i = (i + 1) % len(workers)
    return files, plans, chars


def test_imports_once_per_import_set_and_each_file_elaborated_once_per_worker(real_tasks):
    project, tasks = real_tasks
    workers = [CountingRepl(ReplConfig()) for _ in range(2)]
    files, plans, chars = _run(project, tasks, workers)
    all_files = {t.theorem.file_path for t in tasks}
    assert len(all_files) == 300
    # A file's theorems go to one worker; only the last files are shared (no worker waits).
    assert sum(len(f) for f in files.values()) <= len(all_files) + len(workers)
    for w, mine in zip(workers, files.values()):
        cmds = [r["cmd"] for r in w.sent]
        imports = [c for c in cmds if c.startswith("import")]
        assert len(imports) == len(set(imports)) <= len({plans[f][0] for f in mine} - {""})
        elaborated = [c for c in cmds if not c.startswith("import") and not c.endswith(":= by sorry")]
        assert len(elaborated) <= sum(plans[f][1] for f in mine)  # at most one command per declaration
        assert max(Counter((r["cmd"], r.get("env")) for r in w.sent).values()) == 1  # nothing twice
        assert w.restarts == 0
    # Each character of a file's commands is sent once per worker (the old headers sent the
    # file up to each theorem, once per theorem).
    assert all(n <= plans[f][2] for (_, f), n in chars.items())
    assert sum(len([c for c in w.sent if c["cmd"].endswith(":= by sorry")]) for w in workers) == 348


def test_a_repl_past_its_memory_bound_restarts_and_the_run_goes_on(real_tasks):
    project, tasks = real_tasks
    cfg = ReplConfig(max_memory_gb=200 / 1024)  # 200 MiB: the stand-in grows 1 MiB per env
    worker = CountingRepl(cfg, mib_per_env=1.0)
    _run(project, tasks[:120], [worker])
    assert worker.memory_restarts == worker.restarts >= 2
    roots = [r for r in worker.sent if r["cmd"].endswith(":= by sorry")]
    assert len(roots) == 120  # every theorem opened, restarts or not
    assert worker.memory_mb() <= 200 + 200  # bounded: restarted before the next theorem once past it


def test_file_queue_keeps_a_worker_on_its_file():
    def task(f, line):
        return SimpleNamespace(theorem=SimpleNamespace(file_path=f, start=(line, 1)))
    q = FileQueue([(task("B", 9), 1), (task("A", 5), 1), (task("A", 1), 1), (task("B", 2), 1)])
    got = [q.pop_for("w1")]
    got.append(q.pop_for("w2"))
    got.append(q.pop_for("w1"))
    got.append(q.pop_for("w2"))
    assert [(t.theorem.file_path, t.theorem.start[0]) for t, _ in got] == [("A", 1), ("B", 2), ("A", 5), ("B", 9)]
    assert not q
    q.push_front(task("A", 5), 2)
    assert q.pop_for("w3") == (got[2][0], 2)  # a retry goes to the next free worker


def test_workers_on_one_node_build_the_repl_once(monkeypatch, tmp_path):
    """Several workers that miss the driver's REPL build take one lock: one builds, the
    others wait and start from its build."""
    from prover.env import repl_session
    monkeypatch.setenv("HOME", str(tmp_path))
    builds = []

    def prepare(cfg):
        builds.append(cfg)
        time.sleep(0.3)  # a build takes a while: the others must wait, not start their own
        (tmp_path / "built").mkdir(exist_ok=True)
        return ReplConfig(project=cfg.project, repl_path=str(tmp_path / "built"))

    monkeypatch.setattr(repl_session, "prepare", prepare)
    got = []
    cfg = ReplConfig(project=str(tmp_path), repl_path=str(tmp_path / "driver-only"))
    threads = [threading.Thread(target=lambda: got.append(repl_session.on_this_node(cfg))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and [g.repl_path for g in got] == [str(tmp_path / "built")] * 3


def test_an_address_space_limit_below_the_restart_bound_is_refused():
    """memory_hard_limit_mb is RLIMIT_AS (Mathlib's mapped .oleans count against it): one
    below the resident bound the REPL restarts at would make Lean fail first."""
    assert ReplConfig().memory_hard_limit_mb is None  # the default: no address-space limit
    with pytest.raises(ValueError, match=r"^env.repl.memory_hard_limit_mb \(4096\) is an address-space limit below"):
        ReplConfig(memory_gb=8, memory_hard_limit_mb=4096)
    ReplConfig(memory_gb=8, max_memory_gb=6, memory_hard_limit_mb=65536)
