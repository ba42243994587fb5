"""`prover data trace REPO COMMIT`: a LeanDojo Benchmark 4 dataset from any Lean 4 repository.

`lean_dojo.trace(LeanGitRepo(url, commit))` builds the repository with Lean and extracts every
file's AST, premises and traced tactics (cached under lean-dojo's cache folder). This module
then writes the dataset the rest of the pipeline reads, as LeanDojo's own benchmark script
does: `corpus.jsonl` (per file, in import order: its imports and premise definitions) and
`random/{train,val,test}.json` (every traced theorem with its tactics, dependencies' files
under `.lake/packages/<name>/`, Lean-core theorems left out), plus `metadata.json`. Records of
the repository's own theorems carry the URL and commit the user gave, not lean-dojo's cache path.

lean-dojo starts a local Ray of its own to trace files in parallel. It must not run inside a
process driving our Ray cluster: tracing refuses to start where Ray is already initialized
(run `prover data trace` as its own command, not from a benchmark job).
"""
from __future__ import annotations

import logging
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from prover.data.jsonio import write_json, write_jsonl
from prover.data.splits import make_split, write_split
from prover.data.theorem import DEFAULT_MAX_STATE_CHARS, Theorem, parse_theorem
from prover.env import leandojo_env
from prover.env.preflight import preflight

log = logging.getLogger(__name__)

PACKAGES_DIR = ".lake/packages"  # lean_dojo.constants.LEAN4_PACKAGES_DIR
_GITHUB = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+?(?:\.git)?/?$")
_SHORTHAND = re.compile(r"^[\w.-]+/[\w.-]+$")
_HEX = re.compile(r"^[0-9a-f]{7,40}$")
_REF = re.compile(r"^[\w./-]+$")


class TraceArgumentError(ValueError):
    pass


class TraceUnavailableError(RuntimeError):
    """Tracing cannot run in this process or on this machine."""


def check_repo(repo: str) -> str:
    """A GitHub URL (`owner/name` is short for one) or a local git repository, as LeanGitRepo takes it."""
    repo = repo.strip()
    local = Path(repo).expanduser()
    if local.exists():
        if not (local / ".git").exists():
            raise TraceArgumentError(f"{repo} is a local path but not a git repository (no .git): "
                                     f"LeanDojo traces a commit")
        return str(local.resolve())
    if _GITHUB.match(repo):
        return repo.rstrip("/").removesuffix(".git")
    if _SHORTHAND.match(repo) and not repo.startswith("."):
        return f"https://github.com/{repo}"
    raise TraceArgumentError(f"REPO {repo!r}: expected https://github.com/OWNER/NAME, OWNER/NAME, or a "
                             f"local git repository")


def check_commit(commit: str) -> str:
    commit = commit.strip()
    if _HEX.match(commit):
        return commit
    if commit and _REF.match(commit) and ".." not in commit:
        log.warning("COMMIT %r is a branch or tag: LeanDojo resolves it to a commit now, which later "
                    "runs may not reproduce; prefer the commit hash", commit)
        return commit
    raise TraceArgumentError(f"COMMIT {commit!r}: expected a commit hash (7 to 40 hex digits) or a tag")


def check_out(out: str | Path) -> Path:
    path = Path(out)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise TraceArgumentError(f"--out {path} exists and is not empty: choose a new folder")
    return path


def check_no_ray() -> None:
    """lean-dojo's own Ray must not meet a Ray this process already drives."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        raise TraceUnavailableError("Ray is already initialized in this process, and lean-dojo starts "
                                    "a Ray of its own to trace: run `prover data trace` as a separate "
                                    "command")


# -- export ---------------------------------------------------------------------------------

def _file_path(traced_repo: Any, thm: Any) -> str:
    """The theorem's file relative to the traced repository (dependencies under .lake/packages)."""
    if thm.repo == traced_repo.repo:
        return str(thm.theorem.file_path)
    for name, dep in traced_repo.dependencies.items():
        if dep == thm.repo:
            return f"{PACKAGES_DIR}/{name}/{thm.theorem.file_path}"
    raise ValueError(f"theorem {thm.theorem.full_name} is from {thm.repo}, which is neither the traced "
                     f"repository nor one of its dependencies")


SKIP_LEAN4 = "Lean-core theorems"
SKIP_LONG_STATE = f"tactics with a state over {DEFAULT_MAX_STATE_CHARS:,} characters"


def theorem_records(traced_repo: Any, origin: tuple[str, str] | None = None,
                    skipped: Counter | None = None) -> Iterable[dict]:
    """Every traced theorem as a LeanDojo Benchmark 4 record.

    `origin` is the (url, commit) the user gave: lean-dojo reloads the traced repo from its
    cache folder, so `traced_repo.repo.url` is a local cache path, and a Dojo opened from it
    would look under another cache key and trace again. Dependencies' theorems keep their own
    repo and a `.lake/packages/<name>/` path, as LeanDojo's benchmark script writes them.
    Lean-core theorems are left out (as upstream: `thm.repo.is_lean4`), and so is a tactic whose
    state our reader would refuse; both are counted in `skipped`."""
    skipped = skipped if skipped is not None else Counter()
    for thm in traced_repo.get_traced_theorems():
        if getattr(thm.repo, "is_lean4", False):
            skipped[SKIP_LEAN4] += 1
            continue
        tactics = []
        for t in thm.get_traced_tactics():
            # As LeanDojo's benchmark: no tactics run on a closed goal, no bare `·` focus.
            if t.state_before == "no goals" or "·" in t.tactic:
                continue
            if max(len(t.state_before), len(t.state_after)) > DEFAULT_MAX_STATE_CHARS:
                skipped[SKIP_LONG_STATE] += 1
                continue
            tactics.append({"tactic": t.tactic, "annotated_tactic": list(t.get_annotated_tactic()),
                            "state_before": t.state_before, "state_after": t.state_after})
        own = thm.repo == traced_repo.repo
        url, commit = origin if (own and origin) else (thm.repo.url, thm.repo.commit)
        yield {"url": url, "commit": commit, "file_path": _file_path(traced_repo, thm),
               "full_name": thm.theorem.full_name, "start": list(thm.start), "end": list(thm.end),
               "traced_tactics": tactics}


def _files_graph(traced_repo: Any) -> Any:
    """lean-dojo's file graph; traced without dependencies it has none (`traced_files_graph`
    is None), so one is built over the traced files from their imports, as lean-dojo does."""
    import networkx as nx
    if traced_repo.traced_files_graph is not None:
        return traced_repo.traced_files_graph
    graph = nx.DiGraph()
    for tf in traced_repo.traced_files:
        graph.add_node(str(tf.path), traced_file=tf)
    for tf in traced_repo.traced_files:
        for _module, dep in tf.get_direct_dependencies(traced_repo.repo):
            if graph.has_node(str(dep)):  # files not traced (dependencies) are not in the corpus
                graph.add_edge(str(tf.path), str(dep))
    return graph


def corpus_rows(traced_repo: Any) -> list[dict]:
    """Per file, imported files first: path, imports and premise definitions."""
    import networkx as nx
    graph = _files_graph(traced_repo)
    rows = []
    for node in reversed(list(nx.topological_sort(graph))):
        tf = graph.nodes[node]["traced_file"]
        rows.append({"path": str(tf.path), "imports": [str(n) for n in graph.successors(node)],
                     "premises": tf.get_premise_definitions()})
    return rows


def export_dataset(traced_repo: Any, out: Path, n_val: float = 0.02, n_test: float = 0.02,
                   seed: int = 3407, origin: tuple[str, str] | None = None) -> dict:
    """Write corpus.jsonl, random/{train,val,test}.json and metadata.json under `out`.
    `origin`: the (url, full commit) the user gave, written in the records (see theorem_records)."""
    out.mkdir(parents=True, exist_ok=True)
    rows = corpus_rows(traced_repo)
    write_jsonl(out / "corpus.jsonl", rows)
    url, commit = origin or (traced_repo.repo.url, traced_repo.repo.commit)
    src = f"traced {url}@{commit}"
    skipped: Counter = Counter()
    # Parsed back with our reader: what we write is what the pipeline will read.
    theorems: list[Theorem] = [parse_theorem(r, src, i, None)
                               for i, r in enumerate(theorem_records(traced_repo, origin, skipped))]
    for reason, n in sorted(skipped.items()):
        log.warning("trace export: left out %d %s", n, reason)
    size = (lambda v: v if 0 < v < 1 else int(v))
    split = make_split(theorems, "random", size(n_val), size(n_test), seed=seed)
    write_split(split, out / "random")
    meta = {"url": url, "commit": commit, "files": len(rows),
            "premises": sum(len(r["premises"]) for r in rows), "theorems": len(theorems),
            "tactics": sum(len(t.traced_tactics) for t in theorems), "skipped": dict(skipped),
            "splits": {"random": {k: len(v) for k, v in split.parts().items()}},
            "lean_dojo": _version("lean-dojo"), "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    write_json(out / "metadata.json", meta)
    return meta


def _version(pkg: str) -> str | None:
    from importlib import metadata
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def trace_repo(repo: str, commit: str, out: str | Path, build_deps: bool = True,
               n_val: float = 0.02, n_test: float = 0.02, seed: int = 3407,
               say: Callable[[str], None] = print) -> dict:
    """Trace `repo` at `commit` with lean-dojo and write the dataset to `out`."""
    url, commit, out_path = check_repo(repo), check_commit(commit), check_out(out)
    check_no_ray()
    if not leandojo_env.lean_toolchain_available():
        raise TraceUnavailableError("tracing builds the repository with Lean, and no Lean toolchain "
                                    "(lake and lean, or elan) was found on this machine")
    # Before importing lean-dojo (its import asserts the git version) and before hours of work.
    local = Path(url) if Path(url).is_dir() else None
    for line in preflight(local, commit):
        say(line)
    import lean_dojo
    say(f"tracing {url} at {commit} with lean-dojo {_version('lean-dojo')}: this builds the "
        f"repository and extracts every file, minutes for a small project, hours for one that "
        f"depends on Mathlib (cached under lean-dojo's cache folder for later runs)")
    repo = lean_dojo.LeanGitRepo(url, commit)  # resolves a short hash or a tag to the full commit
    traced = lean_dojo.trace(repo, build_deps=build_deps)
    return export_dataset(traced, out_path, n_val, n_test, seed, origin=(url, repo.commit))
