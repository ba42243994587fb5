"""`prover data corpus PROJECT --out DIR`: a LeanDojo-format `corpus.jsonl` of a Lake project.

Every source file of the project and of its `.lake/packages` (`prover.data.lake_project`) is
scanned (`prover.data.lean_decls`, `prover.data.lean_premises`) and written in import order
(each file after the files it imports), each premise with full name, code, start, end and kind
(plus `def_pos`/`def_end_pos`, `args`, `goal`, and `doc`, the doc comment, when it has one),
each file with its module docstrings (`module_docs`, `/-! ... -/`, when it has any: the aliases
informal search reads from them, `prover.data.module_docs`). `metadata.json` says what was read and what not:
per package files and premises, premises by kind, `uncertain` (what the source cannot settle,
counted) and `problems` (a package without sources, a file that cannot be read: one warning
line each, and the rest of the corpus is still written).

`project_corpus(project, cache)` is what `prover benchmark` and `prove-sorries` call when no
`--corpus` is given: the corpus is built once per project state (`LakeProject.key`: the Lake
manifest, the toolchain, the project's own files) and reused after.
"""
from __future__ import annotations

import graphlib
import logging
import resource
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from prover.data.corpus_lean_check import RunCommand, lean_check
from prover.data.jsonio import write_json, write_jsonl
from prover.data.lake_project import LakeProject, SourceFile, read_project
from prover.data.lean_decls import LeanFile
from prover.data.lean_premises import file_premises
from prover.data.lean_text import _block_comment_end, _string_end
from prover.data.module_docs import module_docs

log = logging.getLogger(__name__)

BUILDER_VERSION = 4  # bump when the rows change: cached corpora are rebuilt (2: `doc`; 3: Lean core, reassoc, simps fields; 4: `module_docs`)
LEAN_CORE = ("Init", "Lean", "Std", "Lake")  # modules of the toolchain, not of any package


def file_problem(text: str, code: str) -> tuple[str, int] | None:
    """Why a file cannot be read with certainty, and the line where that starts: an
    unterminated block comment or string (the rest of the file would be taken for a comment),
    or None. Only the tail after the last code character can hold one."""
    i, n = len(code.rstrip()), len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/-", i):
            j = _block_comment_end(text, i)
            if j >= n and not _closes(text[i:]):
                line = text.count("\n", 0, i) + 1
                return f"unterminated comment from line {line}", line
            i = j
        elif text[i] == '"':
            j = _string_end(text, i + 1)
            if j >= n and (n - i < 2 or text[-1] != '"'):
                line = text.count("\n", 0, i) + 1
                return f"unterminated string from line {line}", line
            i = j
        else:
            i += 1
    return None


def _closes(comment: str) -> bool:
    depth, j = 0, 0
    while j < len(comment):
        if comment.startswith("/-", j):
            depth, j = depth + 1, j + 2
        elif comment.startswith("-/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return True
        else:
            j += 1
    return False


def _order(files: dict[str, list[str]]) -> list[str]:
    """Paths with every file after the files it imports (ties by path); a cycle (Lean forbids
    them, a broken checkout may hold one) falls back to path order for its files."""
    graph = graphlib.TopologicalSorter()
    for path in sorted(files):
        graph.add(path, *sorted(files[path]))
    try:
        graph.prepare()
    except graphlib.CycleError as e:
        log.warning("import cycle among %d files, e.g. %s: they are written in path order",
                    len(e.args[1]) - 1, e.args[1][0])
        return sorted(files)
    out = []
    while graph.is_active():
        ready = sorted(graph.get_ready())
        out += ready
        graph.done(*ready)
    return out


def build_rows(project: LakeProject, progress: bool = True,
               say: Callable[[str], None] = log.warning) -> tuple[list[dict], dict, dict[str, SourceFile]]:
    """The corpus rows of `project` in import order, the metadata counts, and the source file
    of each corpus path."""
    from prover.utils.progress import progress_bar
    by_module: dict[str, SourceFile] = {}
    duplicates = 0
    first_duplicate = None
    for f in project.files:
        if f.module in by_module:
            duplicates += 1
            first_duplicate = first_duplicate or (f.module, by_module[f.module].path, f.path)
            continue
        by_module[f.module] = f
    if first_duplicate:
        say(f"corpus: {duplicates} modules are declared by two files, e.g. {first_duplicate[0]} by "
            f"{first_duplicate[1]} and {first_duplicate[2]}: the first is kept")
    scanned: dict[str, LeanFile] = {}
    problems: list[dict] = []
    imports: dict[str, list[str]] = {}
    outside: Counter = Counter()
    unknown: Counter = Counter()
    with progress_bar(list(by_module.values()), desc="corpus: scan", unit="file", disable=not progress) as bar:
        for f in bar:
            try:
                text = f.disk.read_bytes().decode("utf-8")
                lf = LeanFile.scan(text, f.path)
                problem = file_problem(text, lf.code)
            except UnicodeDecodeError as e:
                lf, problem = None, (f"not valid UTF-8 at byte {e.start}", 1)
            except (OSError, RecursionError, ValueError) as e:
                lf, problem = None, (f"{type(e).__name__}: {e}", 1)
            if problem:
                say(f"corpus: {f.path} cannot be read past line {problem[1]} ({problem[0]}): "
                    f"the premises from there on are left out")
                problems.append({"path": f.path, "message": problem[0], "line": problem[1]})
            if lf is None:
                imports[f.path] = []
                continue
            scanned[f.path] = lf
            deps = []
            for m in lf.imports:
                if m in by_module:
                    deps.append(by_module[m].path)
                elif m.split(".")[0] in LEAN_CORE:
                    outside["Lean core"] += 1
                else:  # a package without sources, or a module no file declares
                    outside["unknown"] += 1
                    unknown[m] += 1
            imports[f.path] = list(dict.fromkeys(deps))
    cut = {p["path"]: p["line"] for p in problems}
    known: dict[str, str] = {}  # to_additive translations, in import order
    rows, uncertain, counts, kinds = [], Counter(), Counter(), Counter()
    per_package: dict[str, dict] = {}
    package_of = {f.path: f.package for f in by_module.values()}
    module_of = {f.path: f.module for f in by_module.values()}
    order = _order(imports)
    with progress_bar(order, desc="corpus: premises", unit="file", disable=not progress) as bar:
        for path in bar:
            premises, mdocs = [], []
            if path in scanned:  # popped: a file's text is not held once its rows are made
                lf = scanned.pop(path)
                mdocs = module_docs(lf.text)
                scan = file_premises(lf, module_of[path], known)
                premises = [r for r in scan.rows if path not in cut or r["end"][0] < cut[path]]
                uncertain.update(scan.uncertain)
                counts.update(scan.counts)
            kinds.update(r["kind"] for r in premises)
            pk = per_package.setdefault(package_of[path], {"files": 0, "premises": 0})
            pk["files"] += 1
            pk["premises"] += len(premises)
            rows.append({"path": path, "imports": imports[path], "premises": premises,
                         **({"module_docs": mdocs} if mdocs else {})})
    meta = {
        "files": len(rows), "premises": sum(len(r["premises"]) for r in rows),
        "packages": per_package, "by_kind": dict(kinds.most_common()),
        "uncertain": dict(sorted(uncertain.items())), "derived": dict(sorted(counts.items())),
        "imports_outside_corpus": dict(outside),
        "unknown_imports": dict(unknown.most_common(20)),  # the most imported, at most 20
        "problems": {"not_a_lake_project": 0 if project.is_lake else 1,
                     "packages_missing_sources": len(project.missing),
                     "files_unreadable": len(problems), "duplicate_modules": duplicates,
                     "links_not_followed": len(project.refused_links)},
        "packages_missing_sources": project.missing, "files_unreadable": problems,
        "links_not_followed": project.refused_links,
    }
    return rows, meta, {f.path: f for f in by_module.values()}


def build_corpus(project: str | Path, out: str | Path, *, progress: bool = True,
                 say: Callable[[str], None] = log.warning, run_command: RunCommand | None = None) -> dict:
    """Scan `project` (and its packages), write `out/corpus.jsonl` and `out/metadata.json`;
    returns the metadata. Bad input is said in one line each (`say`) and counted. With
    `run_command` (a Lean REPL's, `--backend repl`) the rows are checked against Lean's
    constants first (`prover.data.corpus_lean_check`)."""
    t0 = time.perf_counter()
    proj = read_project(project)
    if not proj.is_lake:
        say(f"corpus: {proj.root} is not a Lake project (no lakefile.lean or lakefile.toml): "
            f"its .lean files are read as one package")
    for m in proj.missing:
        say(f"corpus: package {m['package']}: {m['message']}")
    for link in proj.refused_links:
        say(f"corpus: {link}")
    rows, meta, sources = build_rows(proj, progress, say)
    check = None
    if run_command is not None:
        check = lean_check(rows, {p: f.module for p, f in sources.items()},
                           {p: f.disk for p, f in sources.items()}, run_command)
        meta["premises"] = sum(len(r["premises"]) for r in rows)
        say(f"corpus: checked against Lean's {check['constants']:,} constants: {check['missed_added']} "
            f"added, {check['invented_removed']} removed, {check['def_pos_fixed']} name positions fixed")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "corpus.jsonl", rows)
    toolchain = proj.root / "lean-toolchain"
    meta = {"project": str(proj.root), "backend": "source" if check is None else "repl", "key": proj.key(),
            "builder_version": BUILDER_VERSION,
            "lean_toolchain": toolchain.read_text().strip() if toolchain.is_file() else None,
            **meta, "seconds": round(time.perf_counter() - t0, 2),
            "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    if check is not None:
        meta["lean_check"] = check
    write_json(out / "metadata.json", meta)
    log.info("corpus of %s: %d files, %d premises -> %s", proj.root, meta["files"], meta["premises"], out)
    return meta


def project_corpus(project: str | Path, cache: str | Path, *, progress: bool = True) -> Path:
    """The corpus folder of `project` under `cache`, built if this project state has none yet
    (keyed by the Lake manifest, the toolchain and the project's own files)."""
    proj = read_project(project)
    folder = Path(cache) / f"{proj.name}-{proj.key()}-v{BUILDER_VERSION}"
    if (folder / "corpus.jsonl").is_file() and (folder / "metadata.json").is_file():
        log.info("corpus of %s: reusing %s", proj.root, folder)
        return folder
    log.warning("building the premise corpus of %s into %s (once per project state)", proj.root, folder)
    build_corpus(proj.root, folder, progress=progress)
    return folder
