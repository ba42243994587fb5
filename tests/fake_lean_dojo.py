"""TEST DOUBLE for the parts of lean-dojo 4.20.0 that need Lean, git clones or the network.

Installed over the real `lean_dojo` module's names (`install`), it keeps real lean-dojo's
behaviour where our code depends on it (read from lean_dojo/interaction/dojo.py,
data_extraction/lean.py, trace.py, utils.py):
- `LeanGitRepo(path, commit)` of a local repository expands a short hash or a ref to the full
  commit (lean.py `_to_commit_hash`) and raises ValueError for a path that is no repository;
- `get_traced_repo_path` traces on a cache miss, refuses to trace inside Ray (utils.py:71
  `assert not ray.is_initialized()`) and refuses a commit that is not HEAD (trace.py `_trace`
  asserts `repo.exists()`, which compares with HEAD for a local repo);
- `Dojo.__enter__` traces on a cache miss the same way, raises `DojoInitError` for a theorem
  it cannot locate, and its `__exit__` after a failed `__enter__` raises AttributeError (no
  `proc`), as the real one does;
- tactics are answered from traced proofs (state_before, tactic -> state_after) with real
  `TacticState` / `ProofFinished` / `LeanError` objects;
- `check_proof(thm, proof)` traces like Dojo, records what it was asked and answers True
  unless told to reject that theorem.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import lean_dojo

from prover.env.base import normalize_ws


def _git(cwd, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


@dataclass
class FakeLean:
    # full name -> [(state_before, tactic, state_after)], as LeanDojo traced them.
    proofs: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    reject_checks: set[str] = field(default_factory=set)
    cache: dict[tuple[str, str], Path] = field(default_factory=dict)  # (url, commit) -> traced
    traces: list[tuple[str, str, bool]] = field(default_factory=list)  # (url, commit, build_deps)
    opened: list[tuple[str, str, str, str, bool]] = field(default_factory=list)  # url, commit, path, name, deps
    checks: list[tuple[str, str, str]] = field(default_factory=list)  # (file, name, proof)
    events: list[str] = field(default_factory=list)  # "trace URL", "enter NAME", in order

    @classmethod
    def from_theorems(cls, theorems) -> FakeLean:
        return cls({t.full_name: [(x.state_before, x.tactic, x.state_after) for x in t.traced_tactics]
                    for t in theorems})

    # -- lean_dojo.LeanGitRepo ---------------------------------------------------------------

    def repo_class(self):
        class LeanGitRepo:
            def __init__(self, url: str, commit: str) -> None:
                if not Path(url).is_dir():
                    raise ValueError(f"{url} is not a valid URL")
                try:
                    full = _git(url, "rev-parse", "--verify", f"{commit}^{{commit}}")
                except subprocess.CalledProcessError as e:
                    raise ValueError(f"Error converting ref to commit hash: {e}") from None
                self.url, self.commit = str(Path(url).resolve()), full
                self.is_lean4 = False

            @property
            def name(self) -> str:
                return Path(self.url).name

            def exists(self) -> bool:  # a local repo: the commit must be HEAD (lean.py exists())
                return _git(self.url, "rev-parse", "HEAD") == self.commit

        return LeanGitRepo

    # -- lean_dojo.get_traced_repo_path ------------------------------------------------------

    def get_traced_repo_path(self, repo, build_deps: bool = True) -> Path:
        key = (repo.url, repo.commit)
        if key in self.cache:
            return self.cache[key]
        import ray
        assert not ray.is_initialized()  # utils.py:71, when tracing starts its own Ray pool
        assert repo.exists(), f"The {repo.url} does not exist. Please check the URL `{repo.url}/tree/{repo.commit}`."
        self.traces.append((repo.url, repo.commit, build_deps))
        self.events.append(f"trace {repo.url}")
        self.cache[key] = Path(repo.url)
        return self.cache[key]

    # -- lean_dojo.check_proof ---------------------------------------------------------------

    def check_proof(self, thm, proof: str) -> bool:
        self.get_traced_repo_path(thm.repo)
        self.checks.append((str(thm.file_path), thm.full_name, proof))
        return thm.full_name not in self.reject_checks

    # -- lean_dojo.Dojo ----------------------------------------------------------------------

    def dojo_class(self):
        lean = self

        class Dojo:
            def __init__(self, entry, timeout=600, additional_imports=(), build_deps=True):
                self.entry, self.timeout, self.build_deps = entry, timeout, build_deps
                self.repo, self.file_path = entry.repo, entry.file_path

            def __enter__(self):
                lean.events.append(f"enter {self.entry.full_name}")
                lean.get_traced_repo_path(self.repo, self.build_deps)
                e = self.entry
                lean.opened.append((e.repo.url, e.repo.commit, str(e.file_path), e.full_name,
                                    self.build_deps))
                steps = lean.proofs.get(e.full_name)
                if not steps:
                    raise lean_dojo.DojoInitError(
                        f"Failed to locate the theorem with `{e.full_name}` as its fully qualified name.")
                self.proc = SimpleNamespace(timeout=self.timeout)
                self.steps = steps
                self.states = [steps[0][0]]
                return self, lean_dojo.TacticState(steps[0][0], 0)

            def __exit__(self, *exc):
                self.proc.timeout  # AttributeError after a failed __enter__, as the real one

            def run_tac(self, state, tactic):
                for before, tac, after in self.steps:
                    if normalize_ws(before) == normalize_ws(state.pp) and \
                            normalize_ws(tac) == normalize_ws(tactic):
                        if after == "no goals":
                            return lean_dojo.ProofFinished(len(self.states))
                        self.states.append(after)
                        return lean_dojo.TacticState(after, len(self.states) - 1)
                return lean_dojo.LeanError(f"unknown tactic {tactic!r}")

        return Dojo

    def install(self, monkeypatch) -> FakeLean:
        monkeypatch.setattr(lean_dojo, "LeanGitRepo", self.repo_class())
        monkeypatch.setattr(lean_dojo, "Dojo", self.dojo_class())
        monkeypatch.setattr(lean_dojo, "get_traced_repo_path", self.get_traced_repo_path)
        monkeypatch.setattr(lean_dojo, "check_proof", self.check_proof)
        return self
