"""Where a generator model comes from: a local folder, or a hub id checked once, quickly.

Light on purpose (no torch, no transformers): `prover generator suggest` checks its --model here
before the model code loads, so a wrong path is answered in a second (issue 61).
"""
from __future__ import annotations

import re
from pathlib import Path

from prover.data.errors import UserInputError

TRAIN_HINT = ("a generator model is made by `prover generator train --config <generator YAML>`, "
              "which saves it in <run_dir>/generator/model")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def check_model_source(path: str | Path) -> bool:
    """True when `path` is a local model folder, False when it may be a hub id; a UserInputError
    when it is neither: a missing path-looking folder, a file, or a folder without config.json.

    Only a name shaped like `owner/name` (or `name`) that is not on disk is left to the hub, so
    a mistyped local path is reported as missing, not as Hugging Face's repo-id complaint."""
    text = str(path)
    p = Path(text).expanduser()
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise UserInputError(f"generator model folder {text} holds no saved model (no config.json); "
                                 f"{TRAIN_HINT}")
        return True
    if p.exists():
        raise UserInputError(f"generator model {text} is a file, not a model folder; {TRAIN_HINT}")
    if text.startswith((".", "~")) or ".." in text or not _HUB_ID.fullmatch(text):
        raise UserInputError(f"generator model folder {text} does not exist; {TRAIN_HINT}")
    check_hub_model(text)
    return False


def check_hub_model(repo_id: str, timeout_s: float = 5.0) -> None:
    """A hub id that is not on disk: in the local hub cache, or answered by the hub within
    `timeout_s`, once. Otherwise one UserInputError at once: transformers' own loader retries an
    unreachable hub for half a minute before it says the same (issue 61)."""
    import os
    from huggingface_hub import try_to_load_from_cache
    if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
        return
    where = (f"generator model {repo_id}: no such local folder, and no hub model in the local cache")
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise UserInputError(f"{where} (HF_HUB_OFFLINE is set); {TRAIN_HINT}")
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError
    try:
        HfApi().model_info(repo_id, timeout=timeout_s)
    except RepositoryNotFoundError:
        raise UserInputError(f"{where} or on the hub; {TRAIN_HINT}") from None
    except Exception as e:  # unreachable: DNS, refused, timed out, a proxy's error page
        cause = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UserInputError(f"{where}, and the hub did not answer in {timeout_s:g} s ({cause[:120]}); "
                             f"{TRAIN_HINT}") from None
