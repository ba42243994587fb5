"""A Lake project's theorems read from its source: name, file, position, header, statement.

What `prover data theorems` writes and what `prover benchmark --theorems minif2f` reads from
the miniF2F-lean4 checkout it runs on (`env.repl.project`), in the layout of MiniF2F's theorem
list: `{url, commit, lean_toolchain, theorems: [{split, full_name, file_path, start, end,
header, statement, sorry}]}`, so either can be given to `--theorems`.

Headers and statements are cut by the code that opens a LeanDojo record in the REPL
(`prover.env.source_target`): the header is the file's text before the theorem's command (its
attributes, modifiers and doc comment left out, since Lean needs the declaration after them),
ending in one newline; the statement is the `... in` prefixes and the declaration from its
keyword to the end of its signature. Only the project's own files are read (not
`.lake/packages`); `sorry` is filled by the caller that asks for it (`prover.sorries.find`
comes after this stage).

The list of a project is cached by `LakeProject.key` (its Lake manifest, toolchain and own
files' sizes and times), so a benchmark reads a checkout's files once per state.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path

from prover.data.errors import DataError
from prover.data.jsonio import load_json, write_json
from prover.data.lake_project import LakeProject, NotALakeProject, read_own_files
from prover.data.lean_decls import THEOREM_KINDS
from prover.env.source_target import FilePlan, command_start, statement_of
from prover.tracing.repl import project_origin

log = logging.getLogger(__name__)

BUILDER_VERSION = 1  # bump when the rows change: cached lists are rebuilt
MINIF2F_SPLIT_FOLDERS = {"Valid": "valid", "Test": "test"}  # MiniF2F/<Folder>/<name>.lean


@dataclass
class SourceTheorem:
    full_name: str
    file_path: str  # relative to the project root, with `/`
    start: list[int]  # LeanDojo's [line, column] of the keyword, both 1-based
    end: list[int]  # just past its last code character
    header: str  # the file before the theorem's command: what the REPL elaborates first
    statement: str  # `theorem NAME binders : type`, without `:=`
    split: str | None = None  # MiniF2F's valid / test, from the file's folder
    sorry: bool | None = None  # its proof holds a `sorry` (None: not asked)
    whole_sorry: bool | None = None  # its proof is just `sorry` / `by sorry`


def minif2f_split(file_path: str) -> str | None:
    """`MiniF2F/Test/aime_1983_p1.lean` -> test: the folder under the library names the split."""
    parts = file_path.split("/")
    return MINIF2F_SPLIT_FOLDERS.get(parts[1]) if len(parts) >= 3 else None


def file_theorems(text: str, file_path: str) -> list[SourceTheorem]:
    """The named theorems and lemmas of one file, in order; one whose signature has no `:=`
    (nor `|` alternative) after it cannot be opened and is left out."""
    plan = FilePlan.of(text)
    out = []
    for d in plan.declarations:
        if d.kind not in THEOREM_KINDS or not d.name:
            continue
        statement = statement_of(plan, d.start)
        if statement is None:
            continue
        cut = command_start(plan.code, d.start).cut
        header = text[:cut] + "\n" if plan.code[:cut].strip() else ""
        out.append(SourceTheorem(d.name, file_path, _position(plan, d.start), _position(plan, d.end),
                                 header, statement, minif2f_split(file_path)))
    return out


def _position(plan: FilePlan, index: int) -> list[int]:
    import bisect
    line = bisect.bisect_right(plan.line_starts, index) - 1
    return [line + 1, index - plan.line_starts[line] + 1]


def read_theorems(project: LakeProject) -> tuple[list[SourceTheorem], list[dict]]:
    """The theorems of the project's own files, and the files that could not be read
    ({file, message}: not UTF-8, or unreadable)."""
    theorems: list[SourceTheorem] = []
    problems: list[dict] = []
    for f in project.files:
        if f.package != project.name:
            continue
        try:
            text = f.disk.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            problems.append({"file": f.path, "message": f"cannot read: {e}"})
            continue
        theorems += file_theorems(text, f.path)
    return theorems, problems


def theorem_list(project: LakeProject, theorems: list[SourceTheorem], problems: list[dict]) -> dict:
    """The JSON object `prover data theorems` writes: MiniF2F's layout, plus what was read."""
    url, commit = project_origin(project.root)
    toolchain = project.root / "lean-toolchain"
    revs = _manifest_revs(project.manifest_text)
    return {"url": url, "commit": commit,
            "lean_toolchain": toolchain.read_text(encoding="utf-8").strip() if toolchain.is_file() else None,
            "mathlib_rev": revs.get("mathlib"), "package_revs": revs,
            "project": str(project.root), "project_key": project.key(), "builder_version": BUILDER_VERSION,
            "files": sum(1 for f in project.files if f.package == project.name),
            "problems": problems, "theorems": [asdict(t) for t in theorems]}


def _manifest_revs(manifest_text: str) -> dict[str, str]:
    """package -> the commit the Lake manifest pins."""
    import json
    try:
        data = json.loads(manifest_text) if manifest_text else {}
    except json.JSONDecodeError:
        return {}
    pkgs = data.get("packages", []) if isinstance(data, dict) else []
    return {p["name"]: p["rev"] for p in pkgs if isinstance(p, dict) and p.get("name") and p.get("rev")}


def cached_theorem_list(root: str | Path, cache: str | Path) -> Path:
    """The theorem list of the project at `root`, built into `cache` once per project state
    (`LakeProject.key`) and read from there after. Raises DataError when the folder holds no
    Lean source."""
    try:
        project = read_own_files(root)
    except NotALakeProject as e:
        raise DataError(str(root), f"not a Lean project: {e}") from None
    path = Path(cache) / f"{project.name}-{project.key()}.json"
    if path.is_file():
        data = load_json(path)
        if isinstance(data, dict) and data.get("builder_version") == BUILDER_VERSION:
            return path
    theorems, problems = read_theorems(project)
    for p in problems:
        log.warning("%s: %s", p["file"], p["message"])
    write_json(path, theorem_list(project, theorems, problems))
    log.info("%d theorems read from %s's source -> %s", len(theorems), project.root, path)
    return path


__all__ = ["SourceTheorem", "file_theorems", "read_theorems", "theorem_list", "cached_theorem_list",
           "minif2f_split"]
