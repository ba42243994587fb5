"""Where a search comes from: the premises a user's file may use, as the benchmarks count them.

A user in the middle of a file of the corpus sends its path (and the cursor's position); a
user writing a file of their own sends what it imports. Either way only accessible premises
are ranked (`retriever.base.TheoremContext` / `ImportsContext`, the rule of ReProver and of
our benchmarks): the import closure, plus, in the file itself, what is declared before the
position. Files may be named as in the corpus (`Mathlib/Data/Nat/Basic.lean`), as Lean modules
(`Mathlib.Data.Nat.Basic`), or by a path on the user's disk ending in one.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from prover.data.corpus import Corpus
from prover.serve.errors import BadRequest
from retriever.base import Context, ImportsContext, TheoremContext

# "The whole file": a position after any declaration (accessible_mask compares end positions).
END_OF_FILE = (1_000_000_000, 0)
def example_names(corpus: Corpus, asked: str = "") -> str:
    """How to name a file of this corpus, with one of its own files (the closest to what was
    asked, else its first Mathlib file) as a path and as a module."""
    import difflib
    close = difflib.get_close_matches(asked, corpus.files, n=1, cutoff=0.8) if asked.strip() else []
    path = close[0] if close else next((f for f in corpus.files if f.startswith("Mathlib/")),
                                       corpus.files[0] if corpus.files else "")
    if not path:
        return "a corpus path or module (this corpus has no files)"
    module = re.sub(r"^\.lake/packages/[^/]+/", "", path).removesuffix(".lean").replace("/", ".")
    return f"a corpus path such as {path} or a module such as {module}"


@dataclass(frozen=True)
class ResolvedContext:
    """A request's context, checked against one corpus: what the retrievers get, and what the
    answer reports back (the names the corpus knows them by, and how many premises remain)."""

    context: Context
    accessible: int
    file_path: str | None = None
    position: tuple[int, int] | None = None
    imports: list[str] = field(default_factory=list)
    unknown_imports: list[str] = field(default_factory=list)


def resolve_context(corpus: Corpus, file_path: str | None, position: Sequence[int] | None,
                    imports: Sequence[str] | None) -> ResolvedContext | None:
    """The context of a search request, or None without one; a BadRequest (naming the field)
    for a file the corpus lacks, a position without a file, or both a file and imports."""
    if file_path is not None and imports is not None:
        raise BadRequest("give file_path (a file of the corpus, and a position in it) or imports "
                         "(the imports of a file outside the corpus), not both", "imports")
    if position is not None and file_path is None:
        raise BadRequest("position needs file_path: the file the position is in", "position")
    if file_path is not None:
        return _in_file(corpus, file_path, position)
    if imports is not None:
        return _importing(corpus, imports)
    return None


def _in_file(corpus: Corpus, name: str, position: Sequence[int] | None) -> ResolvedContext:
    f = corpus.find_file(name) if name.strip() else None
    if f is None:
        raise BadRequest(f"file {name!r} is not in the corpus ({len(corpus.files):,} files); give "
                         f"{example_names(corpus, name)}", "file_path")
    if position is not None and (len(position) != 2 or position[0] < 1 or position[1] < 0):
        raise BadRequest(f"position must be [line, column] with line >= 1 and column >= 0, not "
                         f"{list(position)}", "position")
    path = corpus.files[f]
    pos = (int(position[0]), int(position[1])) if position is not None else None
    ctx = TheoremContext(path, pos or END_OF_FILE)
    return ResolvedContext(ctx, int(ctx.accessible(corpus).sum()), file_path=path, position=pos)


def _importing(corpus: Corpus, imports: Sequence[str]) -> ResolvedContext:
    found: dict[str, None] = {}  # in order, without repeats
    unknown: list[str] = []
    for name in imports:
        f = corpus.find_file(name) if name.strip() else None
        if f is None:
            unknown.append(name)
        else:
            found[corpus.files[f]] = None
    # A module outside the corpus (Lean's own Init, Std, ...) has no premises here to allow:
    # it is reported back, not refused, unless nothing at all is left.
    if not found:
        shown = ", ".join(repr(n) for n in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        raise BadRequest(f"none of the imports is a file of the corpus ({shown or 'an empty list'}); "
                         f"give {example_names(corpus, unknown[0] if unknown else '')}", "imports")
    ctx = ImportsContext(tuple(found))
    return ResolvedContext(ctx, int(ctx.accessible(corpus).sum()), imports=list(found),
                           unknown_imports=unknown)


def context_fits(corpus: Corpus, resolved: ResolvedContext) -> bool:
    """Whether the files of a context resolved against some corpus are all in `corpus`."""
    ctx = resolved.context
    files = (ctx.file_path,) if isinstance(ctx, TheoremContext) else ctx.files
    return all(f in corpus.file_index for f in files)
