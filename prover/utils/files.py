"""Writing a folder so that a kill mid-write never leaves half of it: used by training
checkpoints and by models that save themselves."""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path


def save_dir_atomically(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Run `write(tmp)` into a temp folder, then swap it in for `path`: a kill mid-save
    keeps the previous folder whole instead of leaving half a model."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write(tmp)
    old = path.with_name(path.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        os.replace(path, old)
    os.replace(tmp, path)
    shutil.rmtree(old, ignore_errors=True)
    return path
