"""Packages depend one way, in pipeline order: no module imports from a later stage.

data (and the shared utilities and config loading) -> the retriever, the generator and the
proof environments -> tracing and proof search -> sorry proving and the service -> the command
line. A lazy import inside a function counts too: it is still an arrow in the picture."""
from __future__ import annotations

import ast

from tests.conftest import REPO

STAGES = [  # (package or module, stage); the longest matching prefix decides
    ("prover.utils", 0), ("prover.training", 0), ("prover.config", 0), ("prover.data", 0), ("prover.demo_data", 0),
    ("retriever", 1), ("generator", 1), ("prover.env", 1),
    ("prover.tracing", 2), ("prover.search", 2),
    ("prover.sorries", 3), ("prover.serve", 3),
    ("prover.commands", 4), ("prover.cli", 4),
]


def stage(module: str) -> tuple[int, str] | None:
    found = [(len(p), s, p) for p, s in STAGES if module == p or module.startswith(p + ".")]
    return max(found)[1:] if found else None


def modules():
    for top in ("prover", "retriever", "generator"):
        for path in sorted((REPO / top).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def test_every_module_has_a_stage():
    assert [m for m, _ in modules() if m not in ("prover",) and stage(m) is None] == []


def test_no_module_imports_from_a_later_stage():
    backwards = []
    for module, path in modules():
        own = stage(module)
        if own is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            else:
                continue
            for target in targets:
                theirs = stage(target)
                if theirs is not None and theirs[0] > own[0]:
                    backwards.append(f"{module}:{node.lineno} imports {target} ({own[1]} -> {theirs[1]})")
    assert backwards == []
