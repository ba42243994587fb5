"""Packages depend one way, in pipeline order: no module imports from a later stage.

data (and the shared utilities and config loading) -> the retriever, the generator and the
proof environments -> tracing and proof search -> sorry proving and the service -> the command
line. A lazy import inside a function counts too: it is still an arrow in the picture."""
from __future__ import annotations

import ast

from tests.conftest import REPO
from tools.layers import (KNOWN_LOOPS, KNOWN_SCRIPT_TRIED, KNOWN_TRAINING_IMPORTS, LAUNCHERS, TRAINING, TRIED_DOOR,
                          benchmark_scripts, child, import_targets, is_tried, modules, scripts_importing_tried, stage,
                          subpackage_loops, training_imports, tried_imports, tried_reach, within)

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
    """What a process that searches or serves actually loads, having asked the registry for every
    shipped retriever: no training module (but the TrainerConfig schema, above) and none of the
    options tried and not shipped (generator/tried/, retriever/tried/)."""
    import json
    import subprocess
    import sys

    loaded = ("prover.search.best_first", "prover.search.components", "prover.serve.service",
              "prover.serve.loading", "prover.serve.generation", "prover.sorries", "retriever.registry",
              "retriever.models.cfr", "retriever.models.car", "retriever.models.reprover", "generator.model")
    code = (f"import json, sys\nimport {', '.join(loaded)}\n"
            "from retriever.registry import REGISTRY, is_registered\n"
            "assert all(is_registered(n) for n in list(REGISTRY))\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    modules_loaded = json.loads(out.stdout.strip().splitlines()[-1])
    unwanted = TRAINING + ("generator.tried", "retriever.tried")
    allowed = {"prover.training", "prover.training.settings"}  # the package and its TrainerConfig
    assert [m for m in modules_loaded if within(m, unwanted) and m not in allowed] == []


# ---------------------------------------------------------------------------------------
# Tried code lives apart

def test_shipped_code_imports_no_tried_code():
    """Options tried and not shipped sit in a `tried` subpackage (generator/tried/,
    retriever/tried/, prover/benchmarking/tried/): no shipped module imports one, even lazily,
    so the shipped path is whole without them. The tried generator options plug into the
    generator's hooks from a benchmark; the tried retrievers are registered into the registry,
    which opens one door to them by name (TRIED_DOOR), for a name it does not ship."""
    tried = [m for m, _ in modules() if is_tried(m)]
    assert {"generator.tried.instantiate", "generator.tried.rerank", "retriever.tried.registry",
            "retriever.tried.dense_neighbors", "prover.benchmarking.tried.fusion_halves",
            "prover.benchmarking.tried.fusion_refits"} <= set(tried)
    assert tried_imports() == {TRIED_DOOR}


def test_tried_code_reaches_no_further_than_shipped_code_of_its_stage():
    """Tried code imports what a shipped module of its stage may (earlier stages, no training
    module outside the launchers) and no other package's tried code."""
    assert all(stage(m) is not None for m, _ in modules() if is_tried(m))
    assert tried_reach() == []


def test_shipped_benchmarks_import_no_tried_code_but_the_known_plugs():
    assert benchmark_scripts(tried=True) and benchmark_scripts(tried=False)
    found = scripts_importing_tried()
    assert found - KNOWN_SCRIPT_TRIED == set()
    assert KNOWN_SCRIPT_TRIED - found == set()  # gone: drop it from the list


def test_every_retriever_a_committed_result_names_still_resolves():
    """`--retriever NAME` builds every row a results file or a comparison config names, the
    tried ones through the registry's door; the shipped names come first."""
    import json
    import subprocess
    import sys

    labels = {"none", "bm25 (name)", "bm25 (name + code)", "informal-no-expansion",  # rows, not names
              "informal (no query conventions)",  # informal_search's row: `informal`, query_conventions=false
              # benchmarks/informal_dense.py's rows (issue 63): settings of `informal`, not names
              "bm25 (words + doc + aliases)", "informal (last round)", "informal + aliases", "dense",
              *(f"fusion{a} w={w}" for a in ("", " + aliases") for w in ("0.5", "1", "2")),
              # benchmarks/informal_dense_latency.py's: the chosen setting by its dense index
              "fusion + aliases w=0.5, exact scan", "lexical alone",
              *(f"fusion + aliases w=0.5, HNSW ef={e}" for e in (256, 512, 1024, 2048))}
    names: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("retriever", "retrievers"):
                    listed = [value] if isinstance(value, str) else value if isinstance(value, list) else []
                    names.update(v for v in listed if isinstance(v, str))
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in sorted((REPO / "benchmarks" / "results").glob("*.json")):
        walk(json.loads(path.read_text()))
    names -= labels
    assert {"fusion", "bm25+usage", "cfr-conventional+car-only", "fusion+car"} <= names
    code = ("import json, sys\nfrom retriever.registry import REGISTRY, is_registered, registered_names\n"
            "shipped = list(REGISTRY)\n"
            f"missing = [n for n in {sorted(names)!r} if not is_registered(n)]\n"
            "print(json.dumps([missing, shipped, registered_names(), 'retriever.tried.registry' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    missing, shipped, every, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert missing == [] and loaded
    assert every[:len(shipped)] == shipped and "neighbors-cfr" in every[len(shipped):]
    assert not any(n in shipped for n in ("bm25+usage", "fusion+car", "neighbors-cfr", "cfr+car-only"))


def test_the_tried_check_sees_a_lazy_import(tmp_path):
    assert is_tried("generator.tried.rerank") and not is_tried("generator.model")
    source = tmp_path / "model.py"
    source.write_text("def f():\n    from generator.tried.rerank import CandidateRanker\n")
    assert [t for _, t in import_targets(source, set()) if is_tried(t)] == ["generator.tried.rerank"]


def test_the_tried_check_sees_the_registrys_door_by_name():
    """The door is a string, not an import: the check reads it from the registry's source."""
    from retriever.registry import TRIED_REGISTRY
    assert ("retriever.registry", TRIED_REGISTRY) == TRIED_DOOR

