"""Checks on a Lean project before LeanDojo spends hours tracing it (prove-sorries, --env leandojo).

LeanDojo (4.20.0) traces a whole git repository at a commit: it clones the commit, so the
lakefile must be at the repository's root and changes not committed are not seen. Each check
fails with one line about the user's project, before any long work starts.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from prover.env.preflight import LAKEFILES, PreflightError, require_committed, require_lakefile_at_root


class ProjectError(PreflightError):
    """The project cannot be opened by LeanDojo as it is; the message says why and what to do."""


@dataclass(frozen=True)
class LeanProject:
    top: Path  # the git repository's root (where the lakefile is)
    commit: str  # HEAD, 40 hex digits
    prefix: str  # the scanned folder relative to `top`, "" or ending in "/"
    uses_mathlib: bool  # Mathlib is a dependency: fetch its cache instead of compiling it


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def git_repo(path: Path) -> tuple[Path, str]:
    """(top-level folder, HEAD commit) of the git repository holding `path`."""
    where = path if path.is_dir() else path.parent
    try:
        top = _git(where, "rev-parse", "--show-toplevel").strip()
        commit = _git(where, "rev-parse", "HEAD").strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise ProjectError(f"{path} is not in a git repository with a commit: LeanDojo opens "
                           f"theorems at a commit ({e})") from None
    return Path(top), commit


def depends_on_mathlib(top: Path) -> bool:
    """Whether the project requires Mathlib (its lake manifest, else its lakefile says so)."""
    manifest = top / "lake-manifest.json"
    if manifest.exists():
        try:
            packages = json.loads(manifest.read_text(encoding="utf-8")).get("packages", [])
            return any(str(p.get("name", "")).lower() == "mathlib" for p in packages)
        except (ValueError, AttributeError):
            pass  # an unreadable manifest: fall back to the lakefile
    for name in LAKEFILES:
        f = top / name
        if f.exists() and "mathlib" in f.read_text(encoding="utf-8", errors="replace").lower():
            return True
    return False


def check_project(root: Path) -> LeanProject:
    """The repository LeanDojo will trace for the project at `root`, or a ProjectError."""
    top, commit = git_repo(root)
    top = top.resolve()
    require_lakefile_at_root(top)
    require_committed(top, commit)
    rel = os.path.relpath((root if root.is_dir() else root.parent).resolve(), top)
    prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
    return LeanProject(top, commit, prefix, depends_on_mathlib(top))
