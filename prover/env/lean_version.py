"""Which environment can run a Lean version: the project's `lean-toolchain` decides `--env auto`.

- lean-dojo's `Dojo` cannot run tactics on Lean v4.12 or later (lean-dojo/LeanDojo#211, open
  since 2024-10; from v4.19 the `lake env lean --memory=...` it launches is rejected too). It is
  kept for ReProver-style runs on LeanDojo Benchmark 4 (Lean v4.10.0-rc1).
- The Lean REPL through lean-interact runs Lean v4.8.0-rc1 and later (lean-interact's REPL
  tags start there), so `auto` picks it wherever it can.
"""
from __future__ import annotations

import re
from pathlib import Path

ENV_AUTO = "auto"
LEANDOJO_BROKEN_FROM = (4, 12)  # LeanDojo#211
REPL_FROM = (4, 8, -1)  # v4.8.0-rc1: a release candidate sorts before its release

_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-rc(\d+))?")


class EnvChoiceError(ValueError):
    """The requested environment cannot run this Lean version; the message says what to use."""


def parse_toolchain(text: str) -> tuple[int, int, int] | None:
    """`leanprover/lean4:v4.24.0` -> (4, 24, 0); a release candidate's patch is -1 below its
    release (v4.8.0-rc1 -> (4, 8, -1)). None for a nightly or anything unreadable."""
    m = _VERSION.search(text.strip().removeprefix("leanprover/lean4:"))
    if not m:
        return None
    major, minor, patch, rc = m.groups()
    return int(major), int(minor), (int(patch) if rc is None else int(patch) - 1)


def read_toolchain(project: str | Path | None) -> str | None:
    """The `lean-toolchain` of a project folder, stripped; None when there is none."""
    if not project:
        return None
    f = Path(project).expanduser() / "lean-toolchain"
    return f.read_text(encoding="utf-8").strip() if f.is_file() else None


def choose_env(requested: str, toolchain: str | None) -> str:
    """The environment to run: `requested` itself, or for `auto` the REPL wherever lean-interact
    supports the toolchain. Refuses lean-dojo on v4.12 or later in one line."""
    version = parse_toolchain(toolchain) if toolchain else None
    if requested == ENV_AUTO:
        if version is None:
            raise EnvChoiceError(f"--env auto needs the Lean version: no readable lean-toolchain "
                                 f"({toolchain or 'none found'}); set env.repl.project to the Lean "
                                 f"project, or say --env repl or --env leandojo")
        return "repl" if version >= REPL_FROM else "leandojo"
    if requested == "leandojo" and version is not None and version[:2] >= LEANDOJO_BROKEN_FROM:
        raise EnvChoiceError(f"--env leandojo cannot run tactics on {toolchain}: lean-dojo's Dojo is "
                             f"broken from Lean v4.12 on (lean-dojo/LeanDojo#211); use --env repl")
    if requested == "repl" and version is not None and version < REPL_FROM:
        raise EnvChoiceError(f"--env repl needs Lean v4.8.0-rc1 or later (lean-interact), not "
                             f"{toolchain}; use --env leandojo")
    return requested
