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
    ("prover.benchmarking", 4),  # the benchmarks' harness and shared code: it may measure any stage
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


# ---------------------------------------------------------------------------------------
# Inside one package: no loops between its subpackages (and top-level modules)

def child(module: str) -> str | None:
    """The subpackage or top-level module of its package that `module` sits in
    (`retriever.training.train_cfr` -> `retriever.training`); None for a package itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


def import_targets(path, known: set[str]):
    """(line, module) for every import in the file, a lazy one inside a function included;
    `from a import b` names `a.b` too when that is one of our modules."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            yield from ((node.lineno, f"{node.module}.{a.name}") for a in node.names
                        if f"{node.module}.{a.name}" in known)


# Loops known and not yet removed, each with why; a new loop fails the test, and so does one
# of these once it is gone (delete it here then).
KNOWN_LOOPS: set[frozenset[str]] = set()  # none left; a loop that must stay is listed here with why


def subpackage_loops() -> dict[frozenset, list[str]]:
    mods = dict(modules())
    arrows: dict[tuple[str, str], list[str]] = {}
    for module, path in mods.items():
        a = child(module)
        if a is None:
            continue
        for line, target in import_targets(path, set(mods)):
            b = child(target)
            if b is not None and b != a and b.split(".")[0] == a.split(".")[0]:
                arrows.setdefault((a, b), []).append(f"{module}:{line}")
    after: dict[str, set[str]] = {}
    for a, b in arrows:
        after.setdefault(a, set()).add(b)

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in after.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    loops = {}
    for node in after:
        ahead = reach(node)
        loop = frozenset({node} | {m for m in ahead if node in reach(m)})
        if len(loop) > 1:
            loops[loop] = sorted(f"{a} -> {b} ({', '.join(sorted(set(w))[:3])})"
                                 for (a, b), w in arrows.items() if a in loop and b in loop)
    return loops


def test_no_import_loops_between_the_subpackages_of_a_package():
    loops = subpackage_loops()
    new = {" <-> ".join(sorted(loop)): why for loop, why in loops.items() if loop not in KNOWN_LOOPS}
    assert new == {}
    assert [sorted(loop) for loop in KNOWN_LOOPS if loop not in loops] == []  # gone: drop it from KNOWN_LOOPS


def test_the_loop_check_sees_a_lazy_import(tmp_path):
    # retriever.registry once imported retriever.training inside functions (for cfr_config
    # and car_run_dir) while the training modules import the registry: a loop, lazy or not.
    assert child("retriever.training.train_cfr") == "retriever.training"
    assert child("retriever") is None
    source = tmp_path / "registry.py"
    source.write_text("def f():\n    from retriever.training.train_cfr import cfr_config\n")
    assert list(import_targets(source, set())) == [(2, "retriever.training.train_cfr")]


# ---------------------------------------------------------------------------------------
# Searching and serving need no training code

# generator.lease_train: the lean training loop of a GPU lease (benchmarks/device_generator.py).
TRAINING = ("prover.training", "retriever.training", "generator.train", "generator.lease_train")
# The command line starts training runs; the benchmarks' shared code fits the fusions it scores.
LAUNCHERS = ("prover.commands", "prover.cli", "prover.benchmarking")
# The settings modules hold each stage's training config beside its serving settings and nest
# the trainer's TrainerConfig (a plain dataclass) in it: one recipe schema is issue 40's item 1.
KNOWN_TRAINING_IMPORTS = {("retriever.settings", "prover.training.settings"),
                          ("generator.settings", "prover.training.settings")}


def within(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def training_imports() -> set[tuple[str, str]]:
    """(module, training module it imports) for every module outside training and the launchers."""
    mods = dict(modules())
    found = set()
    for module, path in mods.items():
        if within(module, TRAINING + LAUNCHERS):
            continue
        for line, target in import_targets(path, set(mods)):
            if within(target, TRAINING):
                found.add((module, target))
    return found


def test_non_training_code_imports_no_training_module():
    mods = dict(modules())
    # Named in issue 40; every other module outside training and the command line too.
    for m in ("prover.search.best_first", "prover.search.components", "prover.serve.service",
              "prover.sorries", "retriever.registry", "generator.model"):
        assert m in mods and not within(m, TRAINING + LAUNCHERS)
    found = training_imports()
    assert found - KNOWN_TRAINING_IMPORTS == set()
    assert KNOWN_TRAINING_IMPORTS - found == set()  # gone: drop it from the list


def test_search_and_serving_load_no_training_or_tried_code():
    """What a process that searches or serves actually loads: no training module (but the
    TrainerConfig schema, above) and none of the generator options tried and not shipped
    (generator/instantiate.py, generator/rerank.py: only a model or option that uses them)."""
    import json
    import subprocess
    import sys

    loaded = ("prover.search.best_first", "prover.search.components", "prover.serve.service",
              "prover.serve.loading", "prover.serve.generation", "prover.sorries", "retriever.registry",
              "retriever.models.cfr", "retriever.models.car", "retriever.models.reprover", "generator.model")
    code = (f"import json, sys\nimport {', '.join(loaded)}\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    modules_loaded = json.loads(out.stdout.strip().splitlines()[-1])
    unwanted = TRAINING + ("generator.instantiate", "generator.rerank")
    allowed = {"prover.training", "prover.training.settings"}  # the package and its TrainerConfig
    assert [m for m in modules_loaded if within(m, unwanted) and m not in allowed] == []
