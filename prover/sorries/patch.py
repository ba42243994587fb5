"""Replace a found `sorry` by a proof, touching no other byte of the file.

The replacement depends on where the sorry sits (`FoundSorry.context`):
- a tactic of a tactic block (`by sorry`, `· sorry`, a `sorry` line): the tactics, one per
  line, each aligned to the sorry's column (Lean's rule for a tactic sequence);
- after `;` or `<;>`: the tactic itself, or `(t1⏎ t2)` for several;
- the whole value of a `:=`: `by t1⏎   t2`;
- a term inside a term (`exact sorry`, `⟨sorry, h⟩`): `(by t1⏎    t2)`.
A tactic that spans lines keeps its own relative indentation, shifted to the block's column.
"""
from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from prover.env.proof_text import tactic_block
from prover.sorries.find import TACTIC_BLOCK, TACTIC_INLINE, TERM, TERM_NESTED, FoundSorry

SORRY = b"sorry"


class StaleSorryError(ValueError):
    """The file no longer has `sorry` where the scan found it."""


@dataclass(frozen=True)
class SorryPatch:
    sorry: FoundSorry
    replacement: str


def render_replacement(found: FoundSorry, tactics: Sequence[str]) -> str:
    """The text that takes the place of the `sorry` token."""
    if not tactics:
        raise ValueError(f"no tactics to replace the sorry of {found.label}")
    col, nl = found.column, found.newline
    if found.context == TACTIC_BLOCK:
        return tactic_block(tactics, col, nl)
    if found.context == TACTIC_INLINE:
        body = tactic_block(tactics, col + 1, nl)
        return body if len(tactics) == 1 and "\n" not in body else f"({body})"
    if found.context == TERM:
        return "by " + tactic_block(tactics, col + 3, nl)
    if found.context == TERM_NESTED:
        return "(by " + tactic_block(tactics, col + 4, nl) + ")"
    raise ValueError(f"unknown sorry context {found.context!r}")


def make_patch(found: FoundSorry, tactics: Sequence[str]) -> SorryPatch:
    return SorryPatch(found, render_replacement(found, tactics))


def apply_patches(source: bytes, patches: Sequence[SorryPatch]) -> bytes:
    """`source` with each patch's sorry replaced; all patches are for this one file. Applied
    from the end of the file backwards, so the spans found by the scan stay valid."""
    ordered = sorted(patches, key=lambda p: p.sorry.start, reverse=True)
    out = source
    last_start = len(source) + 1
    for p in ordered:
        s = p.sorry
        if s.end > last_start:
            raise ValueError(f"two patches for the same sorry at {s.file}:{s.line}:{s.column}")
        if source[s.start:s.end] != SORRY:
            raise StaleSorryError(f"{s.file}:{s.line}:{s.column}: expected `sorry`, found "
                                  f"{source[s.start:s.end]!r} (the file changed since the scan)")
        out = out[:s.start] + p.replacement.encode("utf-8") + out[s.end:]
        last_start = s.start
    return out


def unified_diff(original: bytes, patched: bytes, path: str) -> str:
    """A `git apply`/`patch -p1` compatible diff of one file."""
    a = original.decode("utf-8").splitlines(keepends=True)
    b = patched.decode("utf-8").splitlines(keepends=True)
    out = []
    for line in difflib.unified_diff(a, b, f"a/{path}", f"b/{path}"):
        if line.startswith(("---", "+++")):
            line = line.rstrip("\n") + "\n"
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _by_file(patches: Sequence[SorryPatch]) -> dict[str, list[SorryPatch]]:
    groups: dict[str, list[SorryPatch]] = {}
    for p in patches:
        groups.setdefault(p.sorry.file, []).append(p)
    return groups


def diff_patches(root: str | Path, patches: Sequence[SorryPatch]) -> str:
    """One diff for all patches, file by file, against the files under `root`."""
    parts = []
    for file, group in sorted(_by_file(patches).items()):
        original = (Path(root) / file).read_bytes()
        parts.append(unified_diff(original, apply_patches(original, group), file))
    return "".join(parts)


def write_patched(root: str | Path, patches: Sequence[SorryPatch],
                  out_root: str | Path | None = None) -> list[Path]:
    """Write each patched file to `out_root/<file>` (default: over the original, atomically).
    Returns the paths written."""
    written = []
    for file, group in sorted(_by_file(patches).items()):
        original = (Path(root) / file).read_bytes()
        patched = apply_patches(original, group)
        dest = Path(out_root or root) / file
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".tmp")
        tmp.write_bytes(patched)
        os.replace(tmp, dest)
        written.append(dest)
    return written
