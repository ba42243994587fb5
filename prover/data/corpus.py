"""The premise corpus (`corpus.jsonl`): premises per file, the import graph, accessibility.

A premise is accessible to a theorem when its file is in the theorem file's transitive
import closure, or it ends before the theorem starts in the same file (ReProver's rule).
Premises are stored file by file in corpus order, so a file is a contiguous index range
and accessibility is a boolean mask over the premise array.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prover.data.errors import DataError, SkipLog
from prover.data.jsonio import iter_jsonl, resolve
from prover.data.premise import Pos, Premise, split_signature

log = logging.getLogger(__name__)

_PREMISE_FIELDS = ("full_name", "code", "start", "end")
_PACKAGES = (".lake/packages/", "lake-packages/")  # Lake's dependency folders, new and old


def module_name(path: str) -> str:
    """The Lean module a corpus file declares: `Mathlib/Data/Nat/Basic.lean` is
    `Mathlib.Data.Nat.Basic`, and a dependency's `.lake/packages/<pkg>/Aesop/Nanos.lean` is
    `Aesop.Nanos` (what an `import` line names)."""
    for root in _PACKAGES:
        if path.startswith(root):
            path = path[len(root):].split("/", 1)[-1]
            break
    return path.removesuffix(".lean").replace("/", ".")


def _pos(value: object, path: str, record: str, field_name: str) -> Pos:
    if (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        return int(value[0]), int(value[1])
    raise DataError(path, f"expected [line, column], got {value!r:.60}", record, field_name)


def parse_premise(obj: object, file_path: str, src: str, record: str) -> Premise:
    if not isinstance(obj, dict):
        raise DataError(src, f"premise is {type(obj).__name__}, expected an object", record)
    for key in _PREMISE_FIELDS:
        if key not in obj:
            raise DataError(src, "missing field", record, key)
    if not isinstance(obj["full_name"], str) or not obj["full_name"]:
        raise DataError(src, "expected a non-empty string", record, "full_name")
    code = obj["code"] if isinstance(obj["code"], str) else ""
    if isinstance(obj.get("args"), list) and isinstance(obj.get("goal"), str):
        args, goal = tuple(str(a) for a in obj["args"]), obj["goal"]
    else:  # real LeanDojo corpora carry only `code`
        args, goal = split_signature(code)
    return Premise(
        full_name=obj["full_name"], path=file_path,
        start=_pos(obj["start"], src, record, "start"), end=_pos(obj["end"], src, record, "end"),
        kind=str(obj.get("kind", "")), code=code, args=args, goal=goal,
        doc=obj["doc"] if isinstance(obj.get("doc"), str) else "",
        derived_from=obj["derived_from"] if isinstance(obj.get("derived_from"), str) else "",
    )


def _file_entry(obj: object, src: str, rec: str,
                seen: dict[str, int]) -> tuple[str, list[str], list]:
    """Check one corpus line: (path, imports, raw premises)."""
    if not isinstance(obj, dict):
        raise DataError(src, f"expected an object, got {type(obj).__name__}", rec)
    for key in ("path", "premises"):
        if key not in obj:
            raise DataError(src, "missing field", rec, key)
    fpath = obj["path"]
    if not isinstance(fpath, str) or not fpath:
        raise DataError(src, f"expected a non-empty string, got {fpath!r:.60}", rec, "path")
    if fpath in seen:
        raise DataError(src, f"file {fpath} already listed at line {seen[fpath]}", rec, "path")
    if not isinstance(obj["premises"], list):
        raise DataError(src, f"expected a list, got {type(obj['premises']).__name__}", rec,
                        "premises")
    imports = obj.get("imports", [])
    if not isinstance(imports, list) or not all(isinstance(i, str) for i in imports):
        raise DataError(src, "expected a list of file paths", rec, "imports")
    return fpath, list(imports), obj["premises"]


@dataclass
class Corpus:
    premises: list[Premise]
    files: list[str]
    imports: list[list[int]]
    file_ranges: list[tuple[int, int]]
    unknown_imports: int = 0

    def __post_init__(self) -> None:
        self.file_index = {p: i for i, p in enumerate(self.files)}
        self.premise_file = np.empty(len(self.premises), dtype=np.int32)
        for f, (lo, hi) in enumerate(self.file_ranges):
            self.premise_file[lo:hi] = f
        ends = np.array([p.end for p in self.premises], dtype=np.int64).reshape(-1, 2)
        self._end_key = ends[:, 0] * 100_000 + ends[:, 1]
        self.by_name: dict[str, list[int]] = {}
        for i, p in enumerate(self.premises):
            self.by_name.setdefault(p.full_name, []).append(i)
        self._closure: dict[int, np.ndarray] = {}
        self._modules: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.premises)

    @classmethod
    def load(cls, path: str | Path, skips: SkipLog | None = None) -> Corpus:
        """Read `corpus.jsonl[.gz]`. Without `skips` the first problem raises a DataError naming
        the file, the line (and premise) and the field; with it, a bad premise or a bad file
        line (malformed, not UTF-8, no path, a path seen before) is counted and dropped."""
        src = str(resolve(path))
        premises: list[Premise] = []
        files: list[str] = []
        raw_imports: list[list[str]] = []
        ranges: list[tuple[int, int]] = []
        seen: dict[str, int] = {}
        for lineno, obj in iter_jsonl(path, skips):
            rec = f"line {lineno}"
            try:
                fpath, imports, items = _file_entry(obj, src, rec, seen)
            except DataError as e:
                if skips is None:
                    raise
                skips.add("bad corpus line", str(e))
                continue
            seen[fpath] = lineno
            lo = len(premises)
            for j, p in enumerate(items):
                try:
                    premises.append(parse_premise(p, fpath, src, f"{rec} premise {j}"))
                except DataError as e:
                    if skips is None:
                        raise
                    skips.add("bad premise", str(e))
            files.append(fpath)
            raw_imports.append(imports)
            ranges.append((lo, len(premises)))
        index = {p: i for i, p in enumerate(files)}
        imports = [[index[i] for i in imps if i in index] for imps in raw_imports]
        unknown = sum(len(r) for r in raw_imports) - sum(len(i) for i in imports)
        corpus = cls(premises, files, imports, ranges, unknown_imports=unknown)
        log.debug("corpus %s: %d files, %d premises (%d imports outside the corpus)",
                  src, len(files), len(premises), unknown)
        return corpus

    def premises_of(self, path: str) -> list[Premise]:
        lo, hi = self.file_ranges[self.file_index[path]]
        return self.premises[lo:hi]

    def locate(self, full_name: str, def_path: str | None = None) -> int | None:
        """Index of the premise called `full_name`, preferring the one defined in `def_path`
        (a few names are declared in more than one file)."""
        hits = self.by_name.get(full_name)
        if not hits:
            return None
        if def_path is not None and len(hits) > 1:
            for i in hits:
                if self.premises[i].path == def_path:
                    return i
        return hits[0]

    def module_of(self, index: int) -> str:
        return self.files[self.premise_file[index]]

    def closure_mask(self, file_idx: int) -> np.ndarray:
        """Files transitively imported by `file_idx` (itself excluded), as a boolean mask.

        Lean forbids import cycles, but a corpus file may still hold one; files of a cycle
        then see each other (and everything any of them imports) instead of hanging."""
        if file_idx not in self._closure:
            self._compute_closures(file_idx)
        return self._closure[file_idx]

    def _compute_closures(self, root: int) -> None:
        """Closures of every file reachable from `root`, by Tarjan's strongly connected
        components (iterative: Mathlib's import chains are deeper than Python's recursion
        limit). Components complete in reverse topological order, so the closures of the
        files a component imports are known when it completes."""
        n = len(self.files)
        order: dict[int, int] = {}
        low: dict[int, int] = {}
        on_stack: set[int] = set()
        comp_stack: list[int] = []
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            f, k = work.pop()
            if k == 0:
                order[f] = low[f] = len(order)
                comp_stack.append(f)
                on_stack.add(f)
            imports = self.imports[f]
            while k < len(imports):
                g = imports[k]
                k += 1
                if g in self._closure:
                    continue
                if g not in order:
                    work.append((f, k))
                    work.append((g, 0))
                    break
                if g in on_stack:
                    low[f] = min(low[f], order[g])
            else:
                if low[f] == order[f]:
                    members = []
                    while True:
                        g = comp_stack.pop()
                        on_stack.discard(g)
                        members.append(g)
                        if g == f:
                            break
                    mask = np.zeros(n, dtype=bool)
                    for m in members:
                        for g in self.imports[m]:
                            mask[g] = True
                            if g in self._closure:
                                mask |= self._closure[g]
                    if len(members) > 1:
                        log.warning("import cycle among %d files, e.g. %s", len(members),
                                    self.files[f])
                    for m in members:
                        own = mask.copy()
                        own[m] = False
                        self._closure[m] = own
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[f])

    def find_file(self, name: str) -> int | None:
        """The index of the file `name` means: a corpus path, a Lean module name
        (`Mathlib.Data.Nat.Basic`), or a path on a user's disk that ends in a module's path
        (`/home/me/mathlib4/Mathlib/Data/Nat/Basic.lean`, the longest such ending wins)."""
        if name in self.file_index:
            return self.file_index[name]
        if self._modules is None:  # built on first use: most callers never ask by module
            self._modules = {}
            for i, path in enumerate(self.files):
                self._modules.setdefault(module_name(path), i)
        text = name.strip().removesuffix(".lean")
        parts = [p for p in text.replace("\\", "/").replace("/", ".").split(".") if p]
        for start in range(len(parts)):
            hit = self._modules.get(".".join(parts[start:]))
            if hit is not None:
                return hit
        return None

    def imports_mask(self, paths: Sequence[str]) -> np.ndarray:
        """Premises a file outside the corpus may use when it imports the files `paths`: all of
        theirs, and those of everything they import."""
        seen = np.zeros(len(self.files), dtype=bool)
        for path in paths:
            f = self.file_index.get(path)
            if f is None:
                raise KeyError(f"file {path!r} is not in the corpus")
            seen |= self.closure_mask(f)
            seen[f] = True
        return seen[self.premise_file]

    def accessible_mask(self, path: str, pos: Pos) -> np.ndarray:
        """Premises a theorem at `pos` in `path` may use."""
        f = self.file_index.get(path)
        if f is None:
            raise KeyError(f"file {path!r} is not in the corpus")
        mask = self.closure_mask(f)[self.premise_file]
        lo, hi = self.file_ranges[f]
        mask[lo:hi] = self._end_key[lo:hi] <= pos[0] * 100_000 + pos[1]
        return mask
