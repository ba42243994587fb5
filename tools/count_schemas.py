"""Issue 40's acceptance counts: how many shapes each settings concept has, and what wires them.

    python tools/count_schemas.py

Prints one line a count (with the classes or places behind it) and exits 1 when any target
is missed. A settings class (named *Config, *Settings, *Spec, *Recipe or *Size) is counted for a
concept by the fields it declares that no base class of it declares (one that nests another,
or inherits its fields and gives them defaults of its own, is not a new shape):

- recipe: two or more optimiser fields (lr, weight_decay, warmup_steps, grad_accum, grad_clip);
- retriever choice: `models` (the trained retrievers' config), or a k of premises (k,
  premises_k) beside the retriever's name (name, premises, or a `retriever: str` or
  `fusion: str`, as the device run's section had before issue 53);
- generation: two or more of num_tactics, num_beams, method, temperature;
- batching: max_batch_size or max_wait_ms;
- ByT5 size: two or more of d_model, d_ff, d_kv;
- search budget: max_expansions or search_timeout_s.

Tactics per expansion is one setting (`num_tactics`, or its older names num_samples): the classes
of any name that declare it are counted. A second `k` is a settings class with a `k` of its own
(declared or inherited) beside a nested settings section that has a `k`: one of the two is never
read (the generator benchmark's own k beside its retriever choice's, before issue 53).

Config wrappers are dict literals with a `retriever` or `data` key built into a config
(`OmegaConf.create({...})`) outside tests. Training imports and subpackage loops are found by
tools/layers.py, as tests/test_layers.py checks them; the training schema module
(prover.training.settings) is no training code.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("prover", "retriever", "generator", "benchmarks")

CONCEPTS: dict[str, tuple[set[str], int]] = {  # concept -> (fields that say it, how many make one)
    "recipe": ({"lr", "weight_decay", "warmup_steps", "grad_accum", "grad_clip"}, 2),
    "generation": ({"num_tactics", "num_beams", "method", "temperature"}, 2),
    "batching": ({"max_batch_size", "max_wait_ms"}, 1),
    "ByT5 size": ({"d_model", "d_ff", "d_kv"}, 2),  # the generator's, ReProver's and the sizing's
    "search budget": ({"max_expansions", "search_timeout_s"}, 1),
}
WRAPPER_KEYS = {"retriever", "data"}
SUFFIXES = ("Config", "Settings", "Spec", "Recipe", "Size")
TACTICS_PER_STATE = {"num_tactics", "num_samples", "num_sampled_tactics"}


def fields(cls: ast.ClassDef) -> dict[str, str]:
    """The annotated fields a class body defines, with their annotations as text."""
    return {n.target.id: ast.unparse(n.annotation) for n in cls.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


def is_retriever_choice(own: dict[str, str]) -> bool:
    named = {"name", "premises"} & set(own) or any(own.get(k, "").startswith("str") for k in ("retriever", "fusion"))
    return "models" in own or bool(named and {"k", "premises_k"} & set(own))


def concepts_of(own: dict[str, str]) -> list[str]:
    found = [c for c, (keys, least) in CONCEPTS.items() if len(keys & set(own)) >= least]
    return found + (["retriever choice"] if is_retriever_choice(own) else [])


def python_files():
    for top in PACKAGES:
        yield from sorted((REPO / top).rglob("*.py"))


def all_classes() -> list[tuple[Path, ast.ClassDef]]:
    return [(path, node) for path in python_files()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.ClassDef)]


def inherited_fields(by_name: dict[str, ast.ClassDef], node: ast.ClassDef) -> dict[str, str]:
    """Fields its bases (in this tree) declare: giving one a default of its own is no new shape."""
    out: dict[str, str] = {}
    for base in (by_name.get(ast.unparse(b)) for b in node.bases):
        if base is not None:
            out |= inherited_fields(by_name, base) | fields(base)
    return out


def settings_classes() -> dict[str, list[str]]:
    classes = all_classes()
    by_name = {node.name: node for _, node in classes}
    out: dict[str, list[str]] = {c: [] for c in [*CONCEPTS, "retriever choice"]}
    for path, node in classes:
        if node.name.endswith(SUFFIXES):
            base = inherited_fields(by_name, node)
            own = {k: v for k, v in fields(node).items() if k not in base}
            for concept in concepts_of(own):
                out[concept].append(f"{path.relative_to(REPO)}:{node.name}")
    return out


def tactics_per_state() -> list[str]:
    """Classes declaring a count of tactics per state of their own (inherited ones are the same setting)."""
    classes = all_classes()
    by_name = {node.name: node for _, node in classes}
    return [f"{path.relative_to(REPO)}:{node.name}.{name}" for path, node in classes
            for name in sorted(TACTICS_PER_STATE & set(fields(node)) - set(inherited_fields(by_name, node)))]


def second_k() -> list[str]:
    """Settings classes with a `k` beside a nested settings section that has one."""
    classes = all_classes()
    by_name = {node.name: node for _, node in classes}
    found = []
    for path, node in classes:
        if not node.name.endswith(SUFFIXES):
            continue
        every = inherited_fields(by_name, node) | fields(node)
        if "k" not in every:
            continue
        for name, annotation in every.items():
            nested = by_name.get(annotation.replace("| None", "").strip())
            if nested is not None and nested.name.endswith(SUFFIXES) and \
                    "k" in inherited_fields(by_name, nested) | fields(nested):
                found.append(f"{path.relative_to(REPO)}:{node.name}.k beside {name}.k")
    return found


def config_wrappers() -> list[str]:
    found = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("OmegaConf.create")
                    and node.args and isinstance(node.args[0], ast.Dict)
                    and WRAPPER_KEYS & {k.value for k in node.args[0].keys if isinstance(k, ast.Constant)}):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def counts() -> list[tuple[str, list[str], int]]:
    """(what, the places counted, the most allowed)."""
    sys.path.insert(0, str(REPO))
    from tools import layers  # the import rules (and known exceptions) tests/test_layers.py keeps
    rows = [(f"settings classes: {c}", places, 1) for c, places in settings_classes().items()]
    rows.append(("settings fields: tactics per state", tactics_per_state(), 1))
    rows.append(("settings fields: a second k beside a nested one", second_k(), 0))
    rows.append(("config-wrapper dicts", config_wrappers(), 0))
    # prover.training.settings is a schema (Recipe, TrainerConfig), not training code: the
    # stages' settings extend it and search loads it too (tests/test_layers.py allows it).
    imports = {(a, b) for a, b in layers.training_imports() if b != "prover.training.settings"}
    rows.append(("training imports from non-training code", sorted(f"{a} -> {b}" for a, b in imports), 0))
    loops = [" <-> ".join(sorted(loop)) for loop in layers.subpackage_loops() if loop not in layers.KNOWN_LOOPS]
    rows.append(("loops between subpackages", loops, 0))
    return rows


def main() -> int:
    missed = 0
    for what, places, most in counts():
        ok = len(places) <= most
        missed += not ok
        print(f"{'ok  ' if ok else 'MISS'} {what}: {len(places)} (target <= {most})"
              + "".join(f"\n       {p}" for p in places))
    print(f"{missed} target(s) missed" if missed else "every target met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
