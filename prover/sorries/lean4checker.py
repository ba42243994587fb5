"""lean4checker on a patched file before it is written: the kernel replaying its compiled module.

Where a `lean4checker` executable is on PATH (leanprover/lean4checker, built for the project's
toolchain), prove-sorries runs it on each file it is about to patch, after the REPL's verdict:
the patched file is compiled by the project's own Lean (`lake env lean -o M.olean M.lean`, in a
temporary folder, under a module name of its own so nothing of the project is overwritten),
and `lean4checker --fresh M` replays every constant of that module, imported ones included,
into a fresh environment through the kernel, in a process of its own (no REPL state, no
meta-code of the check survives into it). `--fresh` is what the README of lean4checker offers
now; its first versions took only the module (`Usage: lake exe lean4checker
Mathlib.Data.Nat.Basic` for anything else, Main.lean at 10492a5), and then the module is
checked from its imports (the file's own constants only). A file that fails is not patched.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

EXECUTABLE = "lean4checker"


def available() -> str | None:
    """The lean4checker on PATH, or None."""
    return shutil.which(EXECUTABLE)


@dataclass
class Lean4Checker:
    """Runs lean4checker on patched files in `project`; `checked` records each file and result."""

    project: Path
    lake: str = "lake"
    timeout: float = 1800.0
    checked: list[dict] = field(default_factory=list)

    def __call__(self, file: str, patched: bytes) -> str | None:
        """None when lean4checker accepts the patched `file` (relative to the project), else why not."""
        module = "ProverLean4Checker" + hashlib.sha256(patched).hexdigest()[:12]
        with tempfile.TemporaryDirectory(prefix="prover-lean4checker-") as folder:
            src, lib = Path(folder) / f"{module}.lean", Path(folder) / "lib"
            lib.mkdir()
            src.write_bytes(patched)
            problem = self._run([self.lake, "env", "lean", "-o", str(lib / f"{module}.olean"), str(src)],
                                "compiling the patched file")
            mode = None
            if problem is None:
                mode, problem = "--fresh", self._check(lib, module, fresh=True)
                if problem is not None and "Usage:" in problem:  # a lean4checker without --fresh
                    mode, problem = "from its imports", self._check(lib, module, fresh=False)
        self.checked.append({"file": file, "mode": mode, "ok": problem is None, "problem": problem})
        return problem

    def _check(self, lib: Path, module: str, fresh: bool) -> str | None:
        # `lake env` sets the project's LEAN_PATH; the temporary module's folder goes first.
        script = 'LEAN_PATH="$0${LEAN_PATH:+:$LEAN_PATH}" exec "$1" ${2:+"$2"} "$3"'
        return self._run([self.lake, "env", "sh", "-c", script, str(lib), available() or EXECUTABLE,
                          "--fresh" if fresh else "", module], "lean4checker")

    def _run(self, cmd: list[str], what: str) -> str | None:
        try:
            out = subprocess.run(cmd, cwd=self.project, capture_output=True, text=True, timeout=self.timeout, check=False,
                                 env={**os.environ})
        except subprocess.TimeoutExpired:
            return f"{what} did not finish within {self.timeout:g}s"
        except OSError as e:
            return f"{what} could not start: {e}"
        if out.returncode == 0:
            return None
        text = " ".join((out.stderr or out.stdout or "").split())
        return f"{what} failed (exit {out.returncode}): {text[:300]}"

    def note(self) -> str:
        """One line for the report: which files lean4checker checked, and how each fared."""
        if not self.checked:
            return "lean4checker: no file to check"
        parts = [f"{c['file']} ({'accepted' if c['ok'] else 'rejected'}"
                 + (f", {c['mode']}" if c["mode"] else "") + ")" for c in self.checked]
        return "lean4checker checked " + "; ".join(parts)
