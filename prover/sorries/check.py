"""Re-check each proof found in Lean as a whole, with `lean_dojo.check_proof`.

Dojo ran the tactics one at a time, under `set_option maxHeartbeats 0` (dojo.py:398): a proof it
accepted may still fail in the file (heartbeats, a linter made an error, elaboration order).
`check_proof` compiles the theorem with the proof in place of the original one (dojo.py:108). A
proof it rejects is not patched in; one that could not be re-checked says so in the report.
Before it, the verifier's text check (`prover.env.verify.tactic_text_problem`) refuses proof
text that could leave its `by` block. With the REPL, `recheck_files_in_repl` takes the one
verdict on each file with its proofs in place (text, the file, sorries per declaration,
`#print axioms`, the kernel replay).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prover.env.leandojo_env import describe_error
from prover.search.best_first import ERROR, PROVED
from prover.env.proof_text import standalone_proof
from prover.env.text_check import tactic_text_problem
from prover.env.verdict import SOURCE_LEANDOJO, Evidence, decide

log = logging.getLogger(__name__)

CHECKED, REJECTED, UNCHECKED = "checked", "rejected", "unchecked"


def recheck_proofs(attempts: Sequence[Any], check: Callable[[Any, str], bool],
                   theorem_of: Callable[[Any], Any]) -> dict[str, int]:
    """Re-check each proved attempt: `check(theorem, proof_text)` is `lean_dojo.check_proof`,
    `theorem_of(found_sorry)` the lean_dojo Theorem. Sets each attempt's `check` (and turns a
    rejected or unchecked proof into an error: only a checked one is patched); returns how many
    were checked, rejected and unchecked."""
    counts = {CHECKED: 0, REJECTED: 0, UNCHECKED: 0}
    for a in attempts:
        if a.status != PROVED or not a.proof:
            continue
        problem = tactic_text_problem(a.proof)
        if problem is not None:  # the one text check (prover.env.text_check), before Lean sees it
            _reject(a, f"{problem}: not patched", counts)
            continue
        try:
            ok = bool(check(theorem_of(a.sorry), standalone_proof(a.proof)))
        except Exception as e:  # lean-dojo's own and others: a proof not re-checked is not written
            a.check = f"{UNCHECKED}: lean_dojo.check_proof raised {describe_error(e)}"
            a.status, a.reason = ERROR, f"the proof could not be re-checked ({a.check}): not patched"
            counts[UNCHECKED] += 1
            log.warning("%s: could not re-check the proof: %s", a.sorry.label, a.check)
            continue
        # The one verdict on what Lean said: the file compiled with the proof in place, or not.
        rejected = () if ok else ("lean_dojo.check_proof rejected the proof in the file (Dojo had "
                                  "accepted it tactic by tactic): not patched",)
        verdict = decide(Evidence(SOURCE_LEANDOJO, text_checked=True, errors=rejected, sorries_left=0),
                         a.sorry.name)
        if verdict.ok:
            a.check = CHECKED
            counts[CHECKED] += 1
        else:
            a.check = REJECTED
            a.status, a.reason = ERROR, verdict.reason
            counts[REJECTED] += 1
            log.warning("%s: %s", a.sorry.label, a.reason)
    return counts


def recheck_files_in_repl(attempts: Sequence[Any], root: Path, run_file: Callable[[Path], dict],
                          command: Callable[..., dict] | None = None, allow_native_decide: bool = False,
                          replay: Callable[[int], tuple[str, int | None]] | None = None, kernel_replay: bool = True,
                          accept_without_kernel: bool = False,
                          lean4checker: Callable[[str, bytes], str | None] | None = None) -> dict[str, int]:
    """Before a patch is written, the one verdict on each file with its proofs in place
    (`prover.env.verify.check_file`): each proof's text passes the text check; the file
    elaborates with no error; each patched declaration has no sorry of its own (Lean's
    warning inside its span, `sorryAx` in its axioms) and standard axioms only (`command`
    asks `#print axioms` in the file's environment); and the file's environment passes the
    kernel replay (`replay`). Without `command` (or `replay`, unless `kernel_replay` is off)
    nothing can be shown proved, so nothing is patched: without the replay a proof is
    `unverified` unless `accept_without_kernel`). The file as it is (its sorries in place) is
    elaborated once, so the constants the proofs added are told from the file's own. When the file with every proof fails,
    proofs are added one at a time and each one that breaks it is left out. Then, with
    `lean4checker(file, patched)` (`prover.sorries.lean4checker`: None when it accepts), the file
    with the kept proofs is checked by it, and a file it rejects is not patched at all. Sets
    each proved attempt's `check`; returns the counts."""
    from prover.env.verify import check_file
    from prover.sorries.patch import apply_patches, make_patch
    counts = {CHECKED: 0, REJECTED: 0, UNCHECKED: 0}
    by_file: dict[str, list[Any]] = {}
    for a in attempts:
        if a.status != PROVED or not a.proof:
            continue
        problem = tactic_text_problem(a.proof)
        if problem is not None:  # never sent to Lean
            _reject(a, f"{problem}: not patched", counts)
            continue
        by_file.setdefault(a.sorry.file, []).append(a)
    for file, group in sorted(by_file.items()):
        path = root / file
        source = path.read_bytes()
        why: dict[int, str] = {}
        original = run_file(path) if command is not None else None

        def proved(chosen: list[Any]) -> bool:
            patched = apply_patches(source, [make_patch(a.sorry, a.proof) for a in chosen])
            verdict = check_file(run_file, command, replay, path, patched, [a.sorry.name for a in chosen],
                                 [a.proof for a in chosen], allow_native_decide, kernel_replay,
                                 original=original, accept_without_kernel=accept_without_kernel)
            for a in chosen:
                why[id(a)] = f"{verdict.status.value}: {verdict.reason}" if not verdict.ok else \
                    (verdict.guarantee or "")
            return verdict.ok

        kept: list[Any] = list(group) if proved(group) else [a for a in group if proved([a])]
        if kept and lean4checker is not None:
            problem = lean4checker(file, apply_patches(source, [make_patch(a.sorry, a.proof) for a in kept]))
            if problem is not None:
                for a in kept:
                    why[id(a)] = f"lean4checker: {problem}"
                kept = []
        for a in group:
            if a in kept:
                a.check = CHECKED if not accept_without_kernel or "NO kernel" not in why[id(a)] else \
                    f"{CHECKED} with {why[id(a)]}"
                counts[CHECKED] += 1
            else:
                _reject(a, f"the file with this proof in place does not pass the check ({why[id(a)]}): "
                           f"not patched", counts)
    return counts


def _reject(attempt: Any, reason: str, counts: dict[str, int]) -> None:
    attempt.check, attempt.status, attempt.reason = REJECTED, ERROR, reason
    counts[REJECTED] += 1
    log.warning("%s: %s", attempt.sorry.label, reason)
