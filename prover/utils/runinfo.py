"""What a results file records about the run: code version, machine, library versions."""
from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path


def git_commit(repo: str | Path | None = None) -> str:
    """HEAD of the checkout this code runs from, "-dirty" if code or configs changed.
    $PROVER_GIT_COMMIT, when set, wins: whoever ships a copy elsewhere (a Ray job's working_dir,
    a GPU machine) names the commit it came from, since the copy's own git state, if any, is not
    the source's. A copy without either reports "unknown"."""
    if os.environ.get("PROVER_GIT_COMMIT"):
        return os.environ["PROVER_GIT_COMMIT"]
    repo = repo or Path(__file__).resolve().parents[2]
    if not (Path(repo) / ".git").exists():
        return "unknown"
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                             text=True, timeout=10)
        commit = out.stdout.strip() or "unknown"
        # Results files are what a run writes; only a change to code or configs makes it "dirty".
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":!benchmarks/results"], cwd=repo,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict:
    info = {
        "host": platform.node(), "platform": platform.platform(), "python": platform.python_version(),
        "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
    }
    try:
        import psutil
        info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        pass
    for pkg in ("torch", "transformers", "faiss-cpu", "bm25s", "ray"):
        try:
            info[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    try:
        import torch
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return info


def peak_rss_gib() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
