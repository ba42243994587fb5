"""Which torch device a run or a loaded model uses: shared by training, search and the service,
so the serving path needs no training module for it."""
from __future__ import annotations

import torch


def pick_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)
