"""`prover data corpus PROJECT --out DIR`: the premise corpus of a Lake project and its packages."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prover.data.corpus_lean_check import RunCommand
from prover.env.repl_session import ReplConfig


@dataclass
class CorpusCommandConfig:
    repl: ReplConfig = field(default_factory=ReplConfig)  # --backend repl: the REPL's settings
    progress: bool = True


# Here, in the command layer, not in prover.data: starting a REPL is the environments' business,
# and data comes before them in the pipeline (tests/test_layers.py).
class LeanUnavailable(RuntimeError):
    """--backend repl without a Lean toolchain (lake) on this machine."""


@contextmanager
def open_command_runner(project: Path, cfg: Any = None) -> Iterator[RunCommand]:
    """`run_command(cmd)` in a Lean REPL started in `project` (built once first);
    `cfg`: a `ReplConfig` (None: its defaults)."""
    from prover.env import leandojo_env
    from prover.env.repl_session import ReplSession, prepare
    if not leandojo_env.lean_toolchain_available(need_lean=False):
        raise LeanUnavailable("--backend repl asks Lean for its constants, and no Lean toolchain (lake, "
                              "or elan) was found on this machine; --backend source needs none")
    session = ReplSession(prepare(replace(cfg or ReplConfig(), project=str(project))))
    try:
        yield lambda cmd: session.command(cmd)
    finally:
        session.close()


def run_corpus(project: str, out: str, backend: str = "source", overrides: list[str] | None = None) -> int:
    from omegaconf import OmegaConf
    from prover.config import load_config
    from prover.data.lake_project import NotALakeProject
    from prover.data.project_corpus import build_corpus
    cfg = load_config(CorpusCommandConfig, None, list(overrides or []))

    def say(line: str) -> None:
        from tqdm import tqdm
        tqdm.write(f"warning: {line}", file=sys.stderr)  # on a line of its own, not inside a bar

    try:
        root = Path(project).expanduser().resolve()
        runner = (open_command_runner(root, OmegaConf.to_object(cfg.repl)) if backend == "repl"
                  else nullcontext(None))
        with runner as run_command:
            meta = build_corpus(root, out, progress=cfg.progress, say=say, run_command=run_command)
    except (NotALakeProject, LeanUnavailable) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    problems = sum(meta["problems"].values())
    uncertain = sum(meta["uncertain"].values())
    print(f"{meta['project']}: {meta['files']:,} files, {meta['premises']:,} premises "
          f"({len(meta['packages'])} packages), {uncertain:,} names not read with certainty, "
          f"{problems} problems (metadata.json) -> {out}")
    return 0
