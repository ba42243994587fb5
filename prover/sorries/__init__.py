"""Proving the `sorry`s of a Lean project: find them in the source, patch in proofs."""
from prover.sorries.find import FoundSorry, find_in_text, find_sorries, lean_files
from prover.sorries.patch import (SorryPatch, StaleSorryError, apply_patches, diff_patches,
                                  make_patch, render_replacement, unified_diff, write_patched)

__all__ = [
    "FoundSorry", "SorryPatch", "StaleSorryError", "apply_patches", "diff_patches",
    "find_in_text", "find_sorries", "lean_files", "make_patch", "render_replacement",
    "unified_diff", "write_patched",
]
