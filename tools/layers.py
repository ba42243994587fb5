"""The import rules the suite keeps (tests/test_layers.py) and tools/count_schemas.py counts:
the pipeline order of the packages, loops between the subpackages of a package, and which code
may import a training module. Read from the source (imports inside functions too), never run."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

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


# generator.lease_train: the lean training loop of a GPU lease (benchmarks/device_generator.py).
TRAINING = ("prover.training", "retriever.training", "generator.train", "generator.lease_train")
# The command line starts training runs; the benchmarks' shared code fits the fusions it scores.
LAUNCHERS = ("prover.commands", "prover.cli", "prover.benchmarking")
# The settings modules hold each stage's training config beside its serving settings: it extends
# the one `Recipe` and nests the trainer's `TrainerConfig` (prover/training/settings.py, plain
# dataclasses, no training code).
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


# ---------------------------------------------------------------------------------------
# Tried, not shipped: options measured and dropped live in a `tried` subpackage of their package
# (generator/tried/, retriever/tried/, prover/benchmarking/tried/; their benchmarks in
# benchmarks/tried/). Shipped code imports none of it; tried code may use shipped code as any
# module of its stage may, and nothing more.

def is_tried(module: str) -> bool:
    return "tried" in module.split(".")


# The one way in: retriever/registry.py loads retriever/tried/registry.py by its module name (a
# string, not an import) the first time it is asked for a retriever name it does not ship, so
# committed results that name a tried retriever still run; tried code then registers itself.
TRIED_DOOR = ("retriever.registry", "retriever.tried.registry")


def tried_imports() -> set[tuple[str, str]]:
    """(shipped module, tried module it imports), lazy imports included, and (shipped module,
    tried module) for every string in a shipped module that names a tried module (a door like
    TRIED_DOOR, which importlib would open)."""
    mods = dict(modules())
    found = set()
    for module, path in mods.items():
        if is_tried(module):
            continue
        found |= {(module, target) for _, target in import_targets(path, set(mods)) if is_tried(target)}
        found |= {(module, node.value) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(node, ast.Constant) and node.value in mods and is_tried(node.value)}
    return found


def tried_reach() -> list[str]:
    """What a tried module imports beyond what a shipped module of its own stage may: a later
    stage, a training module (outside the launchers), or another package's tried code."""
    mods = dict(modules())
    out = []
    for module, path in mods.items():
        if not is_tried(module):
            continue
        own = stage(module)
        for line, target in import_targets(path, set(mods)):
            theirs = stage(target)
            why = ("a later stage" if theirs is not None and own is not None and theirs[0] > own[0] else
                   "a training module" if within(target, TRAINING) and not within(module, TRAINING + LAUNCHERS) else
                   "another package's tried code" if is_tried(target) and target.split(".")[0] != module.split(".")[0]
                   else None)
            if why:
                out.append(f"{module}:{line} imports {target} ({why})")
    return out


def benchmark_scripts(tried: bool) -> list[Path]:
    """The scripts under benchmarks/ that measure what ships (tried False) or options dropped."""
    root = REPO / "benchmarks" / ("tried" if tried else "")
    return sorted(root.glob("*.py"))


# Shipped benchmarks that plug a tried option in, each with why; a new one fails the test, and so
# does one of these once it is gone.
KNOWN_SCRIPT_TRIED = {
    # The generator table's `instantiate` setting (off by default) adds the rows that measured
    # generator/tried/instantiate.py, through the generator's `extra_candidates` hook.
    ("tactic_generator.py", "generator.tried.instantiate"),
}


def scripts_importing_tried() -> set[tuple[str, str]]:
    """(script, tried module) for every shipped benchmark script importing tried code."""
    known = {m for m, _ in modules()}
    return {(path.name, target) for path in benchmark_scripts(tried=False)
            for _, target in import_targets(path, known) if is_tried(target)}
