"""`prover prove-sorries`: attempt every `sorry` proof of a Lean project and patch in the proofs.

LeanDojo opens a theorem by name and replaces its whole proof, so a sorry is attempted when it
is the whole proof (`:= sorry`, `:= by sorry`) of a named theorem or lemma. Others (a sorry
inside a longer proof, an `example`) are reported as skipped with the reason. Each proof found
becomes a patch that replaces exactly that `sorry` token (`prover.sorries.patch`): the rest of
the file stays byte for byte as it was.

In Lean, theorems are opened at the repository's current commit (LeanDojo reads commits, not
working trees), so the repository must have no uncommitted changes (prover.sorries.project
checks that, and that the lakefile is at the git root, before any work); each proof found is
re-checked in its file with `lean_dojo.check_proof` (prover.sorries.check). With `--env replay`
the proofs come from traced records (a simulator, for tests): `replay_theorems` maps each
theorem's full name to its record.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prover.data.jsonio import write_json
from prover.data.theorem import Theorem
from prover.env.base import ENV_REPL, ENV_REPLAY, ProofEnv
from prover.search.best_first import PROVED, SearchConfig, best_first_search
from prover.search.sources import PremiseSource, TacticSource
from prover.sorries.find import FoundSorry
from prover.sorries.patch import SorryPatch, diff_patches, make_patch, write_patched
from prover.utils.progress import progress_bar

log = logging.getLogger(__name__)

SKIPPED = "skipped"


@dataclass
class SorryAttempt:
    sorry: FoundSorry
    status: str  # proved, failed, error or skipped
    reason: str | None = None  # why skipped, or the error
    proof: list[str] | None = None
    search: dict | None = None  # the SearchResult, as JSON
    # A proof's re-check in the whole file (prover.sorries.check): checked, rejected,
    # "unchecked: why", or None where no re-check applies (the replay simulator, no proof).
    check: str | None = None

    def to_json(self) -> dict:
        s = self.sorry
        return {"file": s.file, "line": s.line, "column": s.column, "name": s.label, "kind": s.kind,
                "context": s.context, "whole_proof": s.whole_proof, "status": self.status,
                "reason": self.reason, "proof": self.proof, "check": self.check,
                "search": self.search}


def skip_reason(found: FoundSorry, env: str = "leandojo") -> str | None:
    """Why this sorry cannot go to the environment, or None when it can. The REPL hands out
    every sorry's own proof state (one FileCommand per file), so there every sorry can go."""
    if env == ENV_REPL:
        return None
    if found.name is None:
        return "an example has no name, and LeanDojo opens theorems by name"
    if not found.whole_proof:
        return ("part of a longer proof: LeanDojo replaces a theorem's whole proof, so only "
                "`:= sorry` and `:= by sorry` are attempted")
    return None


def sorry_theorem(found: FoundSorry, url: str, commit: str, file_prefix: str = "") -> Theorem:
    """The theorem to open for a whole-proof sorry (its position: the sorry's, 1-based column)."""
    return Theorem(url=url, commit=commit, file_path=file_prefix + found.file, full_name=found.name or "",
                   start=(found.line, found.column + 1), end=(found.line, found.column + 1),
                   traced_tactics=())


def prove_sorries(sorries: Sequence[FoundSorry], make_env: Callable[[FoundSorry], ProofEnv],
                  premises: PremiseSource, tactics: TacticSource, search: SearchConfig,
                  context: Callable[[FoundSorry], Any] | None = None,
                  progress: bool = True, env: str = "leandojo") -> list[SorryAttempt]:
    """Attempt each sorry that can be attempted in `env`, one after another."""
    out = []
    todo = [s for s in sorries if skip_reason(s, env) is None]
    bar = progress_bar(total=len(todo), desc="prove sorries", unit="theorem", disable=not progress)
    try:
        for s in sorries:
            reason = skip_reason(s, env)
            if reason is not None:
                out.append(SorryAttempt(s, SKIPPED, reason))
                continue
            result = best_first_search(make_env(s), premises, tactics, search,
                                       context=context(s) if context else None)
            out.append(SorryAttempt(s, result.status, result.error, result.proof, result.to_json()))
            bar.update(1)
            log.info("%s: %s", s.label, result.status)
    finally:
        bar.close()
    return out


def patches_of(attempts: Sequence[SorryAttempt]) -> list[SorryPatch]:
    return [make_patch(a.sorry, a.proof) for a in attempts if a.status == PROVED and a.proof]


def counts(attempts: Sequence[SorryAttempt]) -> dict[str, int]:
    c = Counter(a.status for a in attempts)
    return {k: c.get(k, 0) for k in ("proved", "failed", "error", SKIPPED)}


def write_report(root: Path, attempts: Sequence[SorryAttempt], out_dir: Path, env: str,
                 write_files: bool, check_note: str | None = None) -> dict:
    """The patch (or patched copies), report.json and report.md under `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    patches = patches_of(attempts)
    written: list[str] = []
    patch_path = out_dir / "proofs.patch"
    # A proof counted with no kernel replay behind it (the user's explicit setting) says so in
    # every file written: the patch's leading lines (before the diff, which git apply and patch
    # skip) and a note beside the patched copies.
    no_kernel = [a.sorry.label for a in attempts if a.status == "proved" and "NO kernel" in (a.check or "")]
    warning = (f"NO kernel replay behind {len(no_kernel)} of these proofs "
               f"(env.repl.accept_proofs_without_kernel_replay=true): {', '.join(no_kernel)}\n") if no_kernel else ""
    if patches:
        patch_path.write_text(warning + diff_patches(root, patches), encoding="utf-8")
        if write_files:
            written = [str(p) for p in write_patched(root, patches, out_dir / "patched")]
            if warning:
                (out_dir / "patched" / "NO-KERNEL-REPLAY.txt").write_text(warning, encoding="utf-8")
    elif patch_path.exists():
        patch_path.unlink()  # a stale patch from an earlier run must not pass for this one's
    report = {
        "root": str(root), "env": env,
        "env_label": "env: replay (simulator: proofs replay traced tactics; not Lean)" if env == ENV_REPLAY
        else f"env: {env}",
        "counts": counts(attempts), "check": check_note, "no_kernel_replay": no_kernel,
        "patch": str(patch_path) if patches else None,
        "patched_files": written, "sorries": [a.to_json() for a in attempts],
    }
    write_json(out_dir / "report.json", report)
    (out_dir / "report.md").write_text(report_markdown(report), encoding="utf-8")
    return report


def report_markdown(report: dict) -> str:
    c = report["counts"]
    lines = [f"# prove-sorries: {report['root']}", "", f"{report['env_label']}", "",
             f"proved {c['proved']}, failed {c['failed']}, errors {c['error']}, skipped {c[SKIPPED]}", "",
             *([report["check"], ""] if report.get("check") else []),
             *([f"NO kernel replay behind: {', '.join(report['no_kernel_replay'])}", ""]
               if report.get("no_kernel_replay") else []),
             "| file:line | theorem | status | proof / reason |", "|---|---|---|---|"]
    for s in report["sorries"]:
        detail = " ⏎ ".join(s["proof"]) if s["proof"] else (s["reason"] or "")
        detail = detail.replace("|", "\\|").replace("\n", " ⏎ ")
        lines.append(f"| {s['file']}:{s['line']} | {s['name']} | {s['status']} | {detail} |")
    return "\n".join(lines) + "\n"
