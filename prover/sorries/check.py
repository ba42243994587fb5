"""Re-check each proof found in Lean as a whole, with `lean_dojo.check_proof`.

Dojo ran the tactics one at a time, under `set_option maxHeartbeats 0` (dojo.py:398): a proof it
accepted may still fail in the file (heartbeats, a linter made an error, elaboration order).
`check_proof` compiles the theorem with the proof in place of the original one (dojo.py:108). A
proof it rejects is not patched in; one that could not be re-checked says so in the report.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
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
