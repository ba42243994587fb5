"""Where datasets live: one data folder, and the commands that fill it.

The data folder is `$PROVER_DATA` when set, else the per-user data folder `platformdirs`
gives (`~/.local/share/lean-premise-prover` on Linux). Configs name datasets relative to it
(`${data:mathlib-src}`, an OmegaConf resolver registered by `prover.config`), so no config
names a path of one machine. A dataset missing from it is said in one line with the command
that writes it there (`missing_hint`).
"""
from __future__ import annotations

import os
from pathlib import Path

APP = "lean-premise-prover"
ENV = "PROVER_DATA"

# How each dataset a shipped config names gets into the data folder (DIR: the data folder).
FILLED_BY = {
    "leandojo-benchmark-4": "prover data download leandojo-benchmark-4 --out {dir}/leandojo-benchmark-4",
    "minif2f": "prover data theorems PATH/TO/miniF2F-lean4 --out {dir}/minif2f/minif2f.json",
    "mathlib-src": "prover data extract PATH/TO/mathlib4 --out {dir}/mathlib-src",
}


def data_dir() -> Path:
    """`$PROVER_DATA`, else the per-user data folder (which may not exist yet)."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_path
    return user_data_path(APP, appauthor=False)


def data_path(name: str) -> str:
    """`name` (a dataset folder or file, relative) inside the data folder: the `${data:NAME}`
    of configs."""
    return str(data_dir() / name)


def missing_hint(path: str | Path) -> str | None:
    """For a path inside the data folder that does not exist: what fills it (one clause), or
    None for a path elsewhere."""
    root = data_dir()
    try:
        rel = Path(path).expanduser().absolute().relative_to(root.expanduser().absolute())
    except ValueError:
        return None
    if not rel.parts:
        return None
    command = FILLED_BY.get(rel.parts[0])
    where = f"the data folder is {root} (${ENV}, else the per-user folder)"
    return f"{where}; {command.format(dir=root)} writes it" if command else f"{where}; set {ENV} to the folder that holds it"


__all__ = ["data_dir", "data_path", "missing_hint", "FILLED_BY", "APP", "ENV"]
