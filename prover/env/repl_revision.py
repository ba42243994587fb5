"""Which Lean REPL runs, and whether its kernel replay is one we read to go through the kernel.

The verifier's kernel replay is the REPL's `pickleTo` then `unpickleEnvFrom`. What unpickling
does depends on the REPL's revision: at the pinned ones it replays every constant through
Lean's kernel (`Environment.replay`); the upstream REPL from v4.30.0-rc1, and lean-interact's
fork on those toolchains, call `Environment.replayToElabEnv`, which does not check them. So at
start the session reads the REPL checkout's revision (its git commit, or the commit
lean-interact records in `.last_synced_commit` when it copies a checkout; its tag where git
has one; its `lean-toolchain`) and looks it up in `repl_revisions.json` beside this file
(each row read from that commit's REPL/Snapshots.lean; `tools/repl_revisions.py` regenerates
it). A revision the table does not hold, or holds as `bypass`, gets no kernel replay: a proof
checked there is `unverified`, in one line naming the revision.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).with_name("repl_revisions.json")


class KernelReplayUnavailable(RuntimeError):
    """The kernel replay cannot be trusted on this REPL (a revision not known to run it)."""


@dataclass(frozen=True)
class ReplRevision:
    commit: str | None  # None: not readable
    tag: str | None
    toolchain: str | None
    path: str

    def describe(self) -> str:
        bits = [self.tag or "", (self.commit or "unknown commit")[:12], self.toolchain or "unknown toolchain"]
        return f"the REPL at {self.path} ({', '.join(b for b in bits if b)})"


@lru_cache(maxsize=1)
def table() -> dict[str, dict]:
    """The rows of repl_revisions.json by commit."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    return {row["commit"]: row for row in data["revisions"]}


def _git(folder: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def read_revision(repl_path: str | Path) -> ReplRevision:
    """The revision of the REPL checkout at `repl_path` (see the module docstring)."""
    folder = Path(repl_path).expanduser()
    commit = _git(folder, "rev-parse", "HEAD") if (folder / ".git").exists() else None
    tag = _git(folder, "describe", "--tags", "--exact-match") if commit else None
    synced = folder / ".last_synced_commit"
    if commit is None and synced.is_file():
        commit = synced.read_text(encoding="utf-8").strip() or None
    toolchain_file = folder / "lean-toolchain"
    toolchain = toolchain_file.read_text(encoding="utf-8").strip() if toolchain_file.is_file() else None
    return ReplRevision(commit, tag, toolchain, str(folder))


def kernel_problem(rev: ReplRevision) -> str | None:
    """Why the kernel replay of this REPL is not one we rely on, in one line; None when its
    unpickling replays through the kernel (a row of the table, at the same toolchain)."""
    row = table().get(rev.commit or "")
    if row is None:
        return (f"{rev.describe()} is not a revision whose unpickleEnvFrom is known to replay through "
                f"the kernel (prover/env/repl_revisions.json): no kernel replay, so no proof counts; "
                f"use a listed revision (env.repl.repl_rev, e.g. v1.3.18) or see README, \"What proved means\"")
    if rev.toolchain and row["toolchain"] != rev.toolchain:
        return (f"{rev.describe()}: its lean-toolchain is not {row['toolchain']}, the one the table read "
                f"at that commit")
    if row["unpickle"] != "kernel":
        return (f"{rev.describe()} unpickles through Environment.replayToElabEnv, which does not type "
                f"check the constants ({row['file']} at {row['commit'][:12]}: {row['read']}): no kernel "
                f"replay, so no proof counts")
    return None
