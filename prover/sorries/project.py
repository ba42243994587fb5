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

LAKEFILES = ("lakefile.lean", "lakefile.toml")


class ProjectError(ValueError):
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


def uncommitted(top: Path, files: list[Path] | None = None) -> list[str]:
    """Paths (relative to `top`) that differ from HEAD, untracked files included: every file
    of the repository when `files` is None, since LeanDojo builds the whole commit."""
    args = ["status", "--porcelain", "--untracked-files=all"]
    if files is not None:
        if not files:
            return []
        args += ["--", *map(str, files)]
    return [line[3:] for line in _git(top, *args).splitlines() if line.strip()]


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
    if not any((top / name).exists() for name in LAKEFILES):
        found = [str(p.parent) for name in LAKEFILES for p in top.glob(f"*/**/{name}")
                 if ".lake" not in p.parts]
        where = f" (found {found[0]})" if found else ""
        raise ProjectError(
            f"no lakefile.lean or lakefile.toml at the git root {top}{where}: LeanDojo clones the "
            f"repository and builds it from its root, so a Lean project in a subfolder cannot be "
            f"traced; make the project folder its own git repository")
    dirty = uncommitted(top)
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise ProjectError(f"uncommitted changes in {shown}: LeanDojo traces the commit "
                           f"({commit[:12]}), not the working tree, so commit first")
    rel = os.path.relpath((root if root.is_dir() else root.parent).resolve(), top)
    prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
    return LeanProject(top, commit, prefix, depends_on_mathlib(top))
