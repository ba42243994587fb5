"""Checks before lean-dojo starts hours of work: each failure is one line about the user's input.

What lean-dojo 4.20.0 needs, read from its source:
- git 2.25 or newer (constants.py `check_git_version`, an assertion at import);
- for a local repository: the commit is HEAD (lean.py `exists()` compares it with HEAD, and
  `_trace` asserts it), the tree is committed (it clones the commit), and the lakefile is at
  the git root (it runs `lake build` there);
- the network: it asks the GitHub API even for local repositories (lean.py, utils.py
  `url_exists`; `GITHUB_ACCESS_TOKEN` lifts the rate limit) and looks for a traced copy in its
  remote cache first (cache.py; `DISABLE_REMOTE_CACHE` turns that off for offline machines).
"""
from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

MIN_GIT = (2, 25, 0)
LAKEFILES = ("lakefile.lean", "lakefile.toml")


class PreflightError(ValueError):
    """lean-dojo would fail on this input, after long work; the message says what to do."""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.rstrip("\n")


def check_git_version(output: str | None = None) -> str:
    """`output` is `git --version`'s (run when None). Returns the version."""
    if output is None:
        try:
            output = subprocess.run(["git", "--version"], capture_output=True, text=True,
                                    check=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            raise PreflightError(f"git is not available ({e}): lean-dojo needs git "
                                 f"{'.'.join(map(str, MIN_GIT))} or newer") from None
    m = re.search(r"git version (\d+)\.(\d+)\.(\d+)", output)
    if not m:
        raise PreflightError(f"cannot read the git version from {output.strip()!r}")
    version = tuple(int(x) for x in m.groups())
    if version < MIN_GIT:
        raise PreflightError(f"git {'.'.join(m.groups())} is too old: lean-dojo needs git "
                             f"{'.'.join(map(str, MIN_GIT))} or newer")
    return ".".join(m.groups())


def uncommitted(top: Path, files: list[Path] | None = None) -> list[str]:
    """Paths (relative to `top`) that differ from HEAD, untracked files included: every file
    of the repository when `files` is None, since lean-dojo builds the whole commit."""
    args = ["status", "--porcelain", "--untracked-files=all"]
    if files is not None:
        if not files:
            return []
        args += ["--", *map(str, files)]
    return [line[3:] for line in _git(top, *args).splitlines() if line.strip()]


def require_committed(top: Path, commit: str) -> None:
    """Nothing in the repository differs from the commit lean-dojo will clone and build."""
    dirty = uncommitted(top)
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise PreflightError(f"uncommitted changes in {shown}: lean-dojo traces the commit "
                             f"({commit[:12]}), not the working tree; commit first")


def require_lakefile_at_root(top: Path) -> None:
    """lean-dojo clones the repository and runs `lake build` at its root."""
    if any((top / name).exists() for name in LAKEFILES):
        return
    found = [str(p.parent) for name in LAKEFILES for p in top.glob(f"*/**/{name}") if ".lake" not in p.parts]
    where = f" (found {found[0]})" if found else ""
    raise PreflightError(f"no lakefile.lean or lakefile.toml at the git root {top}{where}: lean-dojo "
                         f"builds the repository from its root with lake, so a Lean project in a "
                         f"subfolder cannot be traced; make the project folder its own git repository")


def check_local_repo(path: Path, commit: str) -> str:
    """A local repository lean-dojo can trace at `commit`; returns the full commit hash."""
    try:
        top = Path(_git(path, "rev-parse", "--show-toplevel")).resolve()
    except (OSError, subprocess.CalledProcessError):
        raise PreflightError(f"{path} is not a git repository: lean-dojo traces a commit") from None
    if top != path.resolve():
        raise PreflightError(f"{path} is a subfolder of the git repository {top}: lean-dojo "
                             f"traces a repository from its root")
    require_lakefile_at_root(top)
    try:
        full = _git(top, "rev-parse", "--verify", f"{commit}^{{commit}}")
    except subprocess.CalledProcessError:
        raise PreflightError(f"commit {commit} is not in {top}") from None
    head = _git(top, "rev-parse", "HEAD")
    if full != head:
        raise PreflightError(f"commit {commit} is not HEAD ({head[:12]}) of {top}: lean-dojo traces a "
                             f"local repository only at its checked-out commit; `git checkout "
                             f"{commit}` first")
    require_committed(top, head)
    return full


def network_notes(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per network or cache setting lean-dojo will act on."""
    env = os.environ if environ is None else environ
    notes = []
    if env.get("GITHUB_ACCESS_TOKEN"):
        notes.append("GITHUB_ACCESS_TOKEN is set: lean-dojo's GitHub API calls are authenticated")
    else:
        notes.append("GITHUB_ACCESS_TOKEN is not set: lean-dojo calls the GitHub API even for a local "
                     "repository, unauthenticated (60 requests an hour); set it to a GitHub token")
    if "DISABLE_REMOTE_CACHE" in env:
        notes.append("DISABLE_REMOTE_CACHE is set: lean-dojo traces here, without its remote cache")
    else:
        notes.append("DISABLE_REMOTE_CACHE is not set: lean-dojo first looks for a traced copy in its "
                     "remote cache (network); set DISABLE_REMOTE_CACHE=1 on a machine offline")
    return notes


def preflight(local_repo: Path | None = None, commit: str | None = None,
              environ: Mapping[str, str] | None = None) -> list[str]:
    """Run every check (PreflightError on the first that fails); returns the lines to show."""
    lines = [f"git {check_git_version()}: ok"]
    if local_repo is not None and commit is not None:
        full = check_local_repo(local_repo, commit)
        lines.append(f"{local_repo} at {full[:12]}: HEAD, committed, lakefile at the root")
    return lines + network_notes(environ)
