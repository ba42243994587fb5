"""A Lake project on disk: its own source files and those of the packages in `.lake/packages`.

Paths follow LeanDojo's corpus convention: the project's files relative to its root
(`Mathlib/Data/Nat/Basic.lean`), a dependency's as `.lake/packages/<name>/<path>`
(`lake-packages/` for Lake before v4.3). A file's module is its path from its package root.
Only library sources are listed: top-level folders starting with a lower-case letter (`test`,
`scripts`, `docs`) hold no modules a library imports, and build output, hidden folders and
the Lake configuration are skipped.

Lean core (`Init`, `Std`, `Lean`) is read from the toolchain's own sources when they are there,
as LeanDojo's corpus holds them: `lean --print-prefix` run in the project (elan then picks the
project's toolchain), then its `src/lean`, the layout elan installs. Its files get LeanDojo's
paths, `.lake/packages/lean4/src/lean/Init/Prelude.lean`, as package `lean4`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

LAKEFILES = ("lakefile.lean", "lakefile.toml")
MANIFEST = "lake-manifest.json"
_PACKAGE_DIRS = (".lake/packages", "lake-packages")
_SKIP_DIRS = frozenset((".lake", "lake-packages", "build", "_target"))
CORE_PACKAGE = "lean4"
CORE_PREFIX = ".lake/packages/lean4/src/lean/"  # LeanDojo's path of the toolchain's sources
CORE_ROOTS = ("Init", "Std", "Lean")  # the toolchain's library modules a project imports


class NotALakeProject(ValueError):
    """The folder has no .lean file at all: there is nothing to build a corpus from."""


@dataclass(frozen=True)
class SourceFile:
    path: str  # the corpus path (LeanDojo's convention)
    module: str  # the Lean module name an `import` names
    disk: Path
    package: str


@dataclass
class LakeProject:
    root: Path
    name: str
    is_lake: bool  # has a lakefile
    files: list[SourceFile] = field(default_factory=list)
    packages: dict[str, int] = field(default_factory=dict)  # package -> its .lean files
    missing: list[dict] = field(default_factory=list)  # {package, message}: listed, no sources
    manifest_text: str = ""
    refused_links: list[str] = field(default_factory=list)  # linked folders not followed, and why
    core_source: Path | None = None  # the toolchain's src/lean, when read

    def key(self) -> str:
        """What the corpus of this project depends on, as a short hash: the Lake manifest (the
        dependencies' commits), the toolchain, and the project's own files (path, size, mtime)."""
        h = hashlib.sha1(self.manifest_text.encode())
        h.update(f"core:{self.core_source}".encode())
        toolchain = self.root / "lean-toolchain"
        if toolchain.is_file():
            h.update(toolchain.read_bytes())
        for f in self.files:
            if f.package == self.name:
                st = f.disk.stat()
                h.update(f"{f.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return h.hexdigest()[:16]


def _source_files(root: Path, refused: list[str] | None = None) -> list[Path]:
    """The library sources under `root`, sorted. A linked folder (a `Mathlib` that is a
    symlink) is followed, once: a folder reached twice is read the first time only, and a link
    back to a folder above it (a loop) is refused, said in `refused`."""
    out = []
    seen = {root.resolve()}
    for folder, dirs, files in os.walk(root, followlinks=True):
        top = Path(folder) == root
        kept = []
        for d in sorted(dirs):
            if d in _SKIP_DIRS or d.startswith(".") or (top and d[:1].islower()):
                continue
            path = Path(folder) / d
            real = path.resolve()
            if real in seen:
                if path.is_symlink() and refused is not None:
                    above = any(real == q.resolve() for q in path.parents)
                    refused.append(f"{path} -> {real}: " + ("a link to a folder above it (a loop), not followed"
                                                            if above else "already read through another path"))
                continue
            seen.add(real)
            kept.append(d)
        dirs[:] = kept
        out += [Path(folder) / f for f in files if f.endswith(".lean") and not (top and f.startswith("lakefile"))]
    return sorted(out)


def _files_of(root: Path, package: str, prefix: str, refused: list[str] | None = None) -> list[SourceFile]:
    out = []
    for p in _source_files(root, refused):
        rel = p.relative_to(root).as_posix()
        out.append(SourceFile(prefix + rel, rel.removesuffix(".lean").replace("/", "."), p, package))
    return out


def _manifest_packages(root: Path) -> tuple[str, list[dict]]:
    path = root / MANIFEST
    if not path.is_file():
        return "", []
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        log.warning("%s is not valid JSON: packages are taken from the package folders only", path)
        return text, []
    pkgs = data.get("packages", []) if isinstance(data, dict) else []
    return text, [p for p in pkgs if isinstance(p, dict) and p.get("name")]


def toolchain_source(root: Path) -> Path | None:
    """The toolchain's `src/lean` (`lean --print-prefix` run in `root`), or None: no `lean` on
    PATH, or a toolchain installed without its sources."""
    lean = shutil.which("lean")
    if lean is None:
        return None
    try:
        done = subprocess.run([lean, "--print-prefix"], cwd=root, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("lean --print-prefix failed (%s): Lean core is left out of the corpus", e)
        return None
    src = Path(done.stdout.strip()) / "src" / "lean"
    if done.returncode != 0 or not any((src / r).is_dir() for r in CORE_ROOTS):
        log.warning("the toolchain at %s has no sources in src/lean: Lean core is left out of the corpus",
                    done.stdout.strip() or "?")
        return None
    return src


def core_files(src: Path) -> list[SourceFile]:
    """The toolchain's Init, Std and Lean modules under `src` (its src/lean), with LeanDojo's paths."""
    out = []
    for top in CORE_ROOTS:
        files = [src / f"{top}.lean"] if (src / f"{top}.lean").is_file() else []
        files += _source_files(src / top) if (src / top).is_dir() else []
        for p in files:
            rel = p.relative_to(src).as_posix()
            out.append(SourceFile(CORE_PREFIX + rel, rel.removesuffix(".lean").replace("/", "."), p, CORE_PACKAGE))
    return out


def read_own_files(root: str | Path) -> LakeProject:
    """The project at `root` with its own files only (not its packages'): what its theorems
    are read from. Raises NotALakeProject when it holds no .lean file."""
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise NotALakeProject(f"{root}: not a folder")
    project = LakeProject(root, root.name, any((root / f).is_file() for f in LAKEFILES),
                          manifest_text=_manifest_packages(root)[0])
    project.files = _files_of(root, root.name, "", project.refused_links)
    project.packages[root.name] = len(project.files)
    if not project.files:
        raise NotALakeProject(f"{root}: no .lean source files in it")
    return project


def read_project(root: str | Path, core: bool = True) -> LakeProject:
    """The project at `root` and its packages, and with `core` Lean core from the toolchain's
    sources when present (module docstring). A folder without a lakefile is read as one package
    (a warning; `is_lake` False); one without any .lean file raises NotALakeProject."""
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise NotALakeProject(f"{root}: not a folder")
    is_lake = any((root / f).is_file() for f in LAKEFILES)
    manifest_text, listed = _manifest_packages(root)
    project = LakeProject(root, root.name, is_lake, manifest_text=manifest_text)
    own = _files_of(root, root.name, "", project.refused_links)
    project.files += own
    project.packages[root.name] = len(own)
    seen_dirs: set[Path] = set()
    for entry in listed:
        name = str(entry["name"])
        if entry.get("type") == "path" and entry.get("dir"):
            disk, prefix = (root / entry["dir"]).resolve(), None
        else:
            disk, prefix = None, None
            for base in _PACKAGE_DIRS:
                if (root / base / name).is_dir():
                    disk, prefix = root / base / name, f"{base}/{name}/"
                    break
        if disk is None or not disk.is_dir():
            project.missing.append({"package": name, "message": "in lake-manifest.json but not in "
                                    ".lake/packages (run lake update or lake exe cache get)"})
            continue
        seen_dirs.add(disk.resolve())
        prefix = prefix or f"{_PACKAGE_DIRS[0]}/{name}/"
        files = _files_of(disk, name, prefix, project.refused_links)
        if not files:
            project.missing.append({"package": name, "message": f"{disk} holds no .lean source file"})
            continue
        project.files += files
        project.packages[name] = len(files)
    for base in _PACKAGE_DIRS:  # packages on disk that the manifest does not list (or no manifest)
        folder = root / base
        if not folder.is_dir():
            continue
        for d in sorted(folder.iterdir()):
            if d.is_dir() and d.resolve() not in seen_dirs and not d.name.startswith("."):
                files = _files_of(d, d.name, f"{base}/{d.name}/", project.refused_links)
                if files:
                    project.files += files
                    project.packages[d.name] = len(files)
                else:
                    project.missing.append({"package": d.name, "message": f"{d} holds no .lean source file"})
    if not project.files:
        raise NotALakeProject(f"{root}: no .lean source files in it or in .lake/packages")
    src = toolchain_source(root) if core and CORE_PACKAGE not in project.packages else None
    if src is not None:
        files = core_files(src)
        if files:
            project.files += files
            project.packages[CORE_PACKAGE] = len(files)
            project.core_source = src
    return project
