"""The theorems a benchmark proves: a LeanDojo split, MiniF2F, or a list file.

Every source becomes `ProofTask`s holding a `prover.data.theorem.Theorem` (url, commit, file
path, full name, position, and the traced tactics when the source has them: only ReplayEnv
uses those). MiniF2F theorems come from the miniF2F-lean4 checkout the run is on
(`env.repl.project`), read from its source once per state of the checkout
(`prover.tracing.project_theorems`, cached under `theorems.cache`); or from a theorem list
file in the same layout (`theorems.minif2f_path`, what `prover data theorems` writes), else
`minif2f/minif2f.json` in the data folder. Its `url` and `commit` name the repository LeanDojo
opens them in.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prover.data.errors import DataError
from prover.data.jsonio import iter_jsonl, load_json, resolve
from prover.data.theorem import Theorem, load_theorems, parse_theorem
from prover.env.repl_env import ReplTarget
from prover.env.source_target import FilePlan

log = logging.getLogger(__name__)

MINIF2F = "minif2f"
MINIF2F_SPLITS = ("valid", "test")


@dataclass(frozen=True)
class ProofTask:
    """One theorem to prove, and where it came from."""

    theorem: Theorem
    source: str  # leandojo, minif2f or list
    split: str | None = None
    # What the Lean REPL elaborates to open it, when the source says (MiniF2F: its header and
    # statement); None: the REPL env reads the theorem from its file in env.repl.project.
    repl: ReplTarget | None = None

    @property
    def key(self) -> str:
        """Unique within a benchmark: results files and resume go by it."""
        return f"{self.theorem.file_path}::{self.theorem.full_name}"

    @property
    def name(self) -> str:
        return self.theorem.full_name


def default_data_root() -> Path:
    """The data folder (`prover.data.location.data_dir`)."""
    from prover.data.location import data_dir
    return data_dir()


def load_minif2f(path: str | Path, split: str | None = None) -> list[ProofTask]:
    """MiniF2F theorems (both splits, or `valid` / `test`), to be opened in miniF2F-lean4."""
    if split is not None and split not in MINIF2F_SPLITS:
        raise ValueError(f"MiniF2F split must be one of {MINIF2F_SPLITS}, not {split!r}")
    src = str(resolve(path))
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("theorems"), list):
        raise DataError(src, "expected an object with url, commit and theorems")
    for key in ("url", "commit"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise DataError(src, "missing the miniF2F-lean4 repository's field", field_name=key)
    tasks = []
    for i, t in enumerate(data["theorems"]):
        if split is not None and t.get("split") != split:
            continue
        thm = _theorem_from_ref({**t, "url": data["url"], "commit": data["commit"]}, src, i)
        target = (ReplTarget(thm.full_name, header_commands(t.get("header") or ""), t["statement"])
                  if t.get("statement") else None)
        tasks.append(ProofTask(thm, MINIF2F, t.get("split"), target))
    return tasks


def header_commands(header: str) -> tuple[str, ...]:
    """A header as the commands the REPL elaborates in turn, as a LeanDojo record's
    (`prover.env.source_target`): the import lines first, elaborated once per REPL for every
    theorem with the same imports, then the rest."""
    if not header.strip():
        return ()
    return FilePlan.of(header).header(len(header))


def load_minif2f_project(project: str | Path, split: str | None, cache: str | Path) -> list[ProofTask]:
    """MiniF2F's theorems from a miniF2F-lean4 checkout (those of MiniF2F/Valid and MiniF2F/Test),
    read from its source, or from `cache` when the checkout has not changed since."""
    from prover.tracing.project_theorems import cached_theorem_list
    tasks = [t for t in load_minif2f(cached_theorem_list(project, cache), split) if t.split]
    if not tasks:
        raise DataError(str(project), "no theorem in MiniF2F/Valid or MiniF2F/Test: --theorems minif2f "
                        "needs env.repl.project to be a miniF2F-lean4 checkout")
    return tasks


def minif2f_list(minif2f_path: str | None) -> Path:
    """The MiniF2F theorem list file: the one given, else `minif2f/minif2f.json` of the data folder."""
    return Path(minif2f_path) if minif2f_path else default_data_root() / "minif2f" / "minif2f.json"


def minif2f_toolchain(path: str | Path | None = None) -> str | None:
    """The Lean toolchain MiniF2F's records pin (its `lean_toolchain` field); None when no
    path is given and the data folder holds no list."""
    path = minif2f_list(str(path) if path else None)
    if not path.exists() and not path.with_name(path.name + ".gz").exists():
        return None
    data = load_json(path)
    return data.get("lean_toolchain") if isinstance(data, dict) else None


def _theorem_from_ref(obj: Any, src: str, index: int) -> Theorem:
    """A theorem known by reference only (no traced tactics)."""
    if not isinstance(obj, dict):
        raise DataError(src, f"expected an object, got {type(obj).__name__}", index)
    for key in ("url", "commit", "file_path", "full_name"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise DataError(src, "missing or empty", index, key)
    start = obj.get("start") or [1, 1]
    record = {"traced_tactics": [], **obj, "start": start, "end": obj.get("end") or start}
    return parse_theorem(record, src, index, None)


def load_list(path: str | Path) -> list[ProofTask]:
    """A `.jsonl` theorem list: one {url, commit, file_path, full_name[, start, end,
    traced_tactics]} per line."""
    src = str(resolve(path))
    return [ProofTask(_theorem_from_ref(obj, src, lineno), "list")
            for lineno, obj in iter_jsonl(path)]


def load_source(source: str, split: str | None = None, minif2f_path: str | None = None,
                project: str | None = None, cache: str | Path = "runs/theorems") -> list[ProofTask]:
    """The theorems of `source`; for MiniF2F: the list file `minif2f_path` when given, else
    those of the checkout `project`, else the data folder's list."""
    if source == MINIF2F:
        if not minif2f_path and project:
            return load_minif2f_project(project, split, cache)
        path = minif2f_list(minif2f_path)
        if not minif2f_path and not path.exists() and not path.with_name(path.name + ".gz").exists():
            raise DataError(str(path), "not found: --theorems minif2f reads the theorems of a miniF2F-lean4 "
                            "checkout, env.repl.project=PATH/TO/miniF2F-lean4 (or theorems.minif2f_path=FILE "
                            "written by prover data theorems)")
        return load_minif2f(path, split)
    from prover.data.demo import DEMO, demo_root
    path = demo_root() if source == DEMO else Path(source)  # "demo": the bundled demo library
    if path.is_dir():
        if not split:
            raise ValueError(f"{source} is a dataset folder: say which split (e.g. theorems.split=random/test)")
        from prover.data.dataset import Dataset
        return [ProofTask(t, "leandojo", split) for t in Dataset(path).theorems(split)]
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        return load_list(path)
    if path.name.endswith((".json", ".json.gz")):
        if _head(path).lstrip().startswith("{"):  # an object, not a split's array: MiniF2F's layout
            return load_minif2f(path, split)
        return [ProofTask(t, "leandojo", split) for t in load_theorems(path)]
    raise ValueError(f"--theorems {source!r}: expected minif2f, a dataset folder, a LeanDojo split "
                     f"file (.json/.json.gz) or a theorem list (.jsonl)")


def _head(path: Path, n: int = 1024) -> str:
    """The first characters of a (possibly gzipped) file."""
    import gzip
    path = resolve(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        return f.read(n).decode("utf-8", errors="replace").removeprefix("\ufeff")


def load_tasks(cfg: Any, project: str | None = None) -> list[ProofTask]:
    """The benchmark's theorems (`cfg` is a TheoremsConfig), filtered by names, then limited;
    `project`: the Lean project the run is on (env.repl.project), where MiniF2F's are read."""
    tasks = load_source(cfg.source, cfg.split, cfg.minif2f_path, project, getattr(cfg, "cache", "runs/theorems"))
    if getattr(cfg, "traced_only", False):
        kept = [t for t in tasks if t.theorem.traced_tactics]
        log.info("%d of %d theorems have traced tactics (traced_only)", len(kept), len(tasks))
        tasks = kept
    if cfg.names:
        wanted = list(cfg.names)
        by_name = {t.name: t for t in tasks}
        missing = [n for n in wanted if n not in by_name]
        if missing:
            raise ValueError(f"theorems not in {cfg.source}: {', '.join(missing[:5])}"
                             + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
        keep = set(wanted)
        tasks = [t for t in tasks if t.name in keep]
    if cfg.limit is not None:
        if cfg.limit <= 0:
            raise ValueError(f"theorems.limit must be positive, not {cfg.limit}")
        tasks = tasks[:cfg.limit]
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"theorem {dup} appears twice in {cfg.source}")
    log.info("%d theorems from %s%s", len(tasks), cfg.source, f" ({cfg.split})" if cfg.split else "")
    return tasks


def task_json(task: ProofTask) -> dict:
    t = task.theorem
    return {"theorem": t.full_name, "file_path": t.file_path, "url": t.url, "commit": t.commit,
            "source": task.source, "split": task.split, "key": task.key}


__all__ = ["ProofTask", "load_tasks", "load_source", "load_minif2f", "load_list", "task_json",
           "default_data_root", "MINIF2F"]
