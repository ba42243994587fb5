"""Trace the repositories searches will open, in the driver, before any search starts.

`Dojo.__enter__` traces a repository on a cache miss (dojo.py:246 -> trace.py
`get_traced_repo_path`), and tracing starts lean-dojo's own Ray pool after asserting that Ray
is not initialized (utils.py:71): inside a Ray worker it always fails, and in a search it would
spend the first theorem's time. So the driver calls `get_traced_repo_path` for each repository
first, with Ray not yet started; Dojos then find the traced copy in lean-dojo's cache.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from prover.env.leandojo_env import describe_error
from prover.utils.progress import progress_bar

log = logging.getLogger(__name__)

TIME_NOTE = ("each one not yet in lean-dojo's cache is built and traced: minutes for a small "
             "project, hours for one that depends on Mathlib; later runs read the cache")


def trace_ahead(repos: Iterable[tuple[str, str]], build_deps: bool, say: Callable[[str], None] = print,
                progress: bool = True) -> dict[tuple[str, str], Path | None]:
    """Trace each (url, commit) now. A repository that fails is said in one line and left out
    (None): its theorems then fail to open, each recorded as an environment failure."""
    import lean_dojo
    todo = sorted(set(repos))
    if not todo:
        return {}
    noun = "repository" if len(todo) == 1 else "repositories"
    say(f"tracing {len(todo)} {noun} ahead, before any search: {TIME_NOTE}")
    out: dict[tuple[str, str], Path | None] = {}
    bar = progress_bar(total=len(todo), desc="trace ahead", unit="repo", disable=not progress)
    try:
        for url, commit in todo:
            t0 = time.monotonic()
            try:
                repo = lean_dojo.LeanGitRepo(url, commit)
                out[(url, commit)] = Path(lean_dojo.get_traced_repo_path(repo, build_deps))
            except Exception as e:  # lean-dojo raises asserts, CalledProcessError, URLError, ...
                out[(url, commit)] = None
                say(f"cannot trace {url} at {commit}: {describe_error(e)}; its theorems will fail to open")
            else:
                say(f"traced {url} at {commit[:12]} ({time.monotonic() - t0:.0f} s)")
            bar.update(1)
    finally:
        bar.close()
    return out
