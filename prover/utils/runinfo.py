"""What a results file records about the run: code version, machine, library versions."""
from __future__ import annotations

import os
import platform
import subprocess
from datetime import datetime, timezone
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


DIRTY_TREE_ERROR = ("error: the working tree has uncommitted changes to code or configs; "
                    "commit first, or pass --allow-dirty (rows are then marked dirty)")


def is_dirty(commit: str) -> bool:
    return commit.endswith("-dirty")


def require_clean_tree(allow_dirty: bool) -> str:
    """The commit a benchmark's rows will name; exits with a one-line error on a dirty tree
    unless `allow_dirty`, since a row from uncommitted code cannot be reproduced from its commit.
    Call it before any work, so a refused run costs nothing."""
    commit = git_commit()
    if is_dirty(commit) and not allow_dirty:
        raise SystemExit(DIRTY_TREE_ERROR)
    return commit


def row_provenance(commit: str, command: str, config: dict) -> dict:
    """What one results row records about how it was made. Each row keeps its own, so a
    resumed run (another commit, another command) leaves earlier rows' records untouched."""
    return {"git_commit": commit, "command": command, "config": config,
            "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "dirty": is_dirty(commit)}


def provenance_lines(result: dict, name_key: str) -> str:
    """Which commit and command wrote which rows, when that is not simply the file's own.
    Rows from before per-row provenance are named as such rather than credited to the last run.
    `name_key` is the field that names a row ("retriever", "condition")."""
    groups: dict[tuple[str, str] | None, list[str]] = {}
    for r in result["rows"]:
        p = r.get("provenance")
        groups.setdefault((p["git_commit"], p["command"]) if p else None, []).append(r[name_key])
    # One run wrote every row, or no row says (a file from before rows had provenance): the
    # file-level commit and command already tell it.
    if list(groups) in ([], [None], [(result["git_commit"], result["command"])]):
        return ""
    lines = []
    for key, names in groups.items():
        if key is None:
            lines.append(f"Rows written before rows recorded their own commit: {', '.join(names)}.")
        else:
            lines.append(f"Rows written at commit {key[0]}: {', '.join(names)}; command: `{key[1]}`.")
    return "\n".join(lines) + "\n"


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


def stopped_by(summary: dict) -> str:
    """How a training run ended, from its summary.json: "end" or "budget". Summaries from
    before `stopped_by` was written say it by `stopped_by_budget` or `done`."""
    if summary.get("stopped_by"):
        return summary["stopped_by"]
    if summary.get("stopped_by_budget") or summary.get("done") is False:
        return "budget"
    return "end"


def partial_note(summary: dict) -> str:
    """"" for a run that reached its planned step; else what the results say of its model."""
    if stopped_by(summary) != "budget":
        return ""
    planned = summary.get("planned_steps", summary.get("total_steps", summary.get("max_steps")))
    return f"partial: stopped by its budget at step {summary.get('steps')} of {planned or 'an unrecorded number'}"


def partial_training(summaries: dict[str, dict | None]) -> dict[str, str]:
    """stage -> its partial note, for each stage in `summaries` (stage -> summary.json, None
    when missing) that its time budget stopped before its planned step."""
    return {stage: note for stage, s in summaries.items() if s and (note := partial_note(s))}


def require_full_training(summaries: dict[str, dict | None], allow_partial: bool) -> dict[str, str]:
    """The partial stages a row is built on ({} for none); exits with a one-line error when
    there are some and not `allow_partial`, since the recipe's model is the one at its planned
    step and a budget-stopped one differs by machine. Call it before the row's work."""
    partial = partial_training(summaries)
    if partial and not allow_partial:
        what = "; ".join(f"{stage} {note}" for stage, note in partial.items())
        raise SystemExit(f"error: a partial model ({what}); rerun its training with a larger "
                         "max_minutes to reach the planned step, or pass --allow-partial (rows are then marked partial)")
    return partial


def partial_line(summary: dict, section: str) -> str:
    """The end-of-run line for a partial model ("" for a finished one); `section` is the
    config section whose max_minutes stopped it."""
    note = partial_note(summary)
    return (f"PARTIAL model ({note}): not the recipe's model; rerun the same command with a larger "
            f"{section}.max_minutes to continue to the planned step") if note else ""
