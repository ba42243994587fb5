"""Re-check each proof found in Lean as a whole, with `lean_dojo.check_proof`.

Dojo ran the tactics one at a time, under `set_option maxHeartbeats 0` (dojo.py:398): a proof it
accepted may still fail in the file (heartbeats, a linter made an error, elaboration order).
`check_proof` compiles the theorem with the proof in place of the original one (dojo.py:108). A
proof it rejects is not patched in; one that could not be re-checked says so in the report.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prover.env.leandojo_env import describe_error
from prover.search.best_first import ERROR, PROVED
from prover.env.proof_text import standalone_proof

log = logging.getLogger(__name__)

CHECKED, REJECTED, UNCHECKED = "checked", "rejected", "unchecked"


def recheck_proofs(attempts: Sequence[Any], check: Callable[[Any, str], bool],
                   theorem_of: Callable[[Any], Any]) -> dict[str, int]:
    """Re-check each proved attempt: `check(theorem, proof_text)` is `lean_dojo.check_proof`,
    `theorem_of(found_sorry)` the lean_dojo Theorem. Sets each attempt's `check` (and turns a
    rejected proof into an error); returns how many were checked, rejected and unchecked."""
    counts = {CHECKED: 0, REJECTED: 0, UNCHECKED: 0}
    for a in attempts:
        if a.status != PROVED or not a.proof:
            continue
        try:
            ok = bool(check(theorem_of(a.sorry), standalone_proof(a.proof)))
        except Exception as e:  # lean-dojo's own and others: this proof stays unverified
            a.check = f"{UNCHECKED}: lean_dojo.check_proof raised {describe_error(e)}"
            counts[UNCHECKED] += 1
            log.warning("%s: could not re-check the proof: %s", a.sorry.label, a.check)
            continue
        if ok:
            a.check = CHECKED
            counts[CHECKED] += 1
        else:
            a.check = REJECTED
            a.status = ERROR
            a.reason = ("lean_dojo.check_proof rejected the proof in the file (Dojo had accepted "
                        "it tactic by tactic): not patched")
            counts[REJECTED] += 1
            log.warning("%s: %s", a.sorry.label, a.reason)
    return counts


def recheck_files_in_repl(attempts: Sequence[Any], root: Path, run_file: Callable[[Path], dict]) -> dict[str, int]:
    """Before a patch is written: each file with all its proofs in place must elaborate with no
    error and with that many sorries fewer (`run_file` runs a FileCommand). When the file with
    every proof fails, proofs are added one at a time and each one that breaks it is left out.
    Sets each proved attempt's `check`; returns the counts."""
    from prover.env.repl_env import check_patched_file
    from prover.sorries.patch import apply_patches, make_patch
    counts = {CHECKED: 0, REJECTED: 0, UNCHECKED: 0}
    by_file: dict[str, list[Any]] = {}
    for a in attempts:
        if a.status == PROVED and a.proof:
            by_file.setdefault(a.sorry.file, []).append(a)
    for file, group in sorted(by_file.items()):
        path = root / file
        source = path.read_bytes()
        before = len(run_file(path).get("sorries", []))

        def compiles(chosen: list[Any]) -> bool:
            patched = apply_patches(source, [make_patch(a.sorry, a.proof) for a in chosen])
            return check_patched_file(run_file, path, patched, before - len(chosen)) is None

        kept: list[Any] = []
        if compiles(group):
            kept = list(group)
        else:
            for a in group:
                if compiles(kept + [a]):
                    kept.append(a)
        for a in group:
            if a in kept:
                a.check = CHECKED
                counts[CHECKED] += 1
            else:
                a.check, a.status = REJECTED, ERROR
                a.reason = "the file with this proof in place does not elaborate in the REPL: not patched"
                counts[REJECTED] += 1
    return counts
