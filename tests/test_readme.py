"""The README a newcomer reads: short, and every command, config and page it names exists."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from prover.cli import main
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def readme_commands() -> list[list[str]]:
    """Each `prover ...` command of the README's bash blocks, continuation lines joined, as
    the words before its first option or argument: the subcommand path a user types."""
    commands = []
    for block in bash_blocks(README):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#", 1)[0]
            for part in re.split(r"&&|;", line):
                words = shlex.split(part)
                words = [w for w in words if "=" not in w or w.startswith("-")]  # drop VAR=value
                if words[:1] != ["prover"]:
                    continue
                path = []
                for w in words[1:]:
                    if w.startswith("-") or "/" in w or w.isupper() or "=" in w or "." in w:
                        break
                    path.append(w)
                commands.append(path)
    return commands


def test_readme_is_short():
    assert len(README.splitlines()) <= 300


def test_readme_names_every_stage_command():
    named = {" ".join(c) for c in readme_commands()}
    for stage in ("demo", "data stats", "data corpus", "retriever pretrain", "retriever train-cfr",
                  "retriever train-fusion", "retriever index", "generator train", "benchmark",
                  "prove-sorries", "serve"):
        assert stage in named, stage


@pytest.mark.parametrize("command", sorted({" ".join(c) for c in readme_commands()}))
def test_each_readme_command_answers_help(command, capsys):
    with pytest.raises(SystemExit) as done:
        main([*command.split(), "--help"])
    assert done.value.code == 0
    assert "usage: prover" in capsys.readouterr().out


def test_every_config_and_page_the_readme_names_exists():
    configs = set(re.findall(r"configs/[\w/.-]+\.yaml", README))
    pages = set(re.findall(r"\]\(([\w/.-]+\.md)\)", README))
    assert configs and pages
    for rel in sorted(configs | pages):
        assert (REPO / rel).is_file(), rel


def test_docs_pages_link_to_files_that_exist():
    for page in sorted((REPO / "docs").glob("*.md")):
        for rel in re.findall(r"\]\(([\w/.-]+\.md)\)", page.read_text()):
            assert (page.parent / rel).resolve().is_file() or (REPO / rel).is_file(), (page.name, rel)


# Every command line of the README, by what tests it: "run" lines run below as written, in a
# clean folder; the others name the test that covers them, or why no test can run them here.
# A new README line fails `test_every_readme_line_is_run_or_covered` until it is placed here.
RUN = "run"
README_LINES = {
    "pip install torch==2.13.0 -e . && prover demo":
        "tests/test_cli.py::test_demo_trains_retrieves_and_searches_on_the_demo_library (prover demo)",
    "pip install torch==2.13.0 -e '.[dev]' && python -m pytest -q": "the suite itself (.ci/run)",
    "prover data stats  --data demo": RUN,
    "prover data split  --data demo --strategy ri --out runs/splits": RUN,
    "prover data corpus PATH/TO/LakeProject --out runs/corpora/project":
        "a Lake project of the user's; tests/test_project_corpus.py",
    "prover data trace  PATH/TO/LakeProject --backend repl --out data/project": "needs Lean",
    "prover retriever pretrain     --config configs/retriever/cpu.yaml": "recipe",
    "prover retriever train-cfr    --config configs/retriever/cpu.yaml": "recipe",
    "prover retriever index        --config configs/retriever/cpu.yaml": "recipe",
    "prover retriever train-fusion --config configs/retriever/cpu.yaml": "recipe",
    "prover retriever train-car    --config configs/retriever/cpu-car.yaml":
        "long training (CAR, not shipped); tests/test_retriever_pipeline.py trains tiny CAR",
    "prover retriever eval --retriever bm25 --config configs/retrieval/bm25.yaml": RUN,
    "prover generator build-data --config configs/generator/cpu.yaml": "long (all of mathlib-src's pairs)",
    "OMP_NUM_THREADS=1 prover generator train --config configs/generator/cpu.yaml": "long training",
    "prover generator suggest --model runs/demo/generator/generator/model --state runs/demo/state.txt": RUN,
    "prover benchmark --theorems minif2f --env repl --retriever fusion --generator MODEL "
    "--retriever-models configs/retriever/cpu.yaml env.repl.project=PATH/TO/miniF2F-lean4": "needs Lean",
    "prover prove-sorries PROJECT --env repl --generator MODEL --write": "needs Lean",
    "prover serve --config configs/serve/demo.yaml":
        "tests/test_cli.py::test_the_readme_first_serve_line_starts_from_what_the_demo_left",
    "prover serve --config configs/serve/cpu.yaml":
        "long training; tests/test_readme_recipe.py serves its fusion at tiny sizes",
    'prover search "addition is commutative" --k 5': RUN,
    # The section for a user with Lean: Lean, the network and a cluster are not here.
    "export PROVER_DATA=~/prover-data": "a shell line; tests/test_data_location.py reads PROVER_DATA",
    "git clone https://github.com/yangky11/miniF2F-lean4 && cd miniF2F-lean4 && lake exe cache get && "
    "lake build && cd ..": "needs the network and Lean",
    "prover data theorems miniF2F-lean4 --sorries --out runs/minif2f.json":
        "tests/test_project_theorems.py (the committed miniF2F-lean4 fixture)",
    "prover data corpus miniF2F-lean4 --out runs/corpora/miniF2F-lean4": "tests/test_minif2f_project_corpus.py",
    'prover data download leandojo-benchmark-4 --out "$PROVER_DATA/leandojo-benchmark-4"':
        "the network; tests/test_data_download.py serves the same layout on 127.0.0.1",
    'prover retriever pretrain --config configs/retriever/cpu.yaml data.root="$PROVER_DATA/leandojo-benchmark-4"':
        "long training on LeanDojo Benchmark 4",
    "prover benchmark --config configs/search/reprover.yaml --theorems minif2f --split test --env repl "
    "--retriever none,bm25,fusion,reprover --retriever-models configs/retriever/cpu.yaml "
    "--generator kaiyuy/leandojo-lean4-retriever-tacgen-byt5-small "
    "env.repl.project=miniF2F-lean4 retriever.training_data=\"$PROVER_DATA/leandojo-benchmark-4\" "
    "'retriever.model_overrides=[reprover.checkpoint=kaiyuy/leandojo-lean4-retriever-byt5-small]'":
        "needs Lean; tests/test_reprover_rehearsal.py runs it on the REPL stand-in with a tiny T5",
    "ray job submit --address http://HEAD:8265 -- prover benchmark --config configs/search/reprover.yaml "
    "--theorems minif2f --split test --env repl "
    "--retriever none,bm25,fusion,reprover --retriever-models configs/retriever/cpu.yaml "
    "--generator kaiyuy/leandojo-lean4-retriever-tacgen-byt5-small env.repl.project=/mnt/shared/miniF2F-lean4 "
    "retriever.training_data=/mnt/shared/prover-data/leandojo-benchmark-4 "
    "'retriever.model_overrides=[reprover.checkpoint=kaiyuy/leandojo-lean4-retriever-byt5-small]'":
        "needs Lean and a Ray cluster",
}
RECIPE = "long training; tests/test_readme_recipe.py runs these lines as written at tiny sizes"


def readme_lines() -> list[str]:
    """Each command line of the README's bash blocks: continuations joined, comments dropped."""
    lines = []
    for block in bash_blocks(README):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+", " ", line.split("#", 1)[0]).strip()
            if line:
                lines.append(line)
    return lines


def _key(line: str) -> str:
    return re.sub(r"\s+", " ", line).strip()


def test_every_readme_line_is_run_or_covered():
    known = {_key(k): v for k, v in README_LINES.items()}
    assert sorted(readme_lines()) == sorted(known)
    for line, how in known.items():
        if how == "recipe":
            how = RECIPE
        for test in re.findall(r"tests/[\w/]+\.py", how):
            assert (REPO / test).is_file(), (line, test)


def test_readme_lines_run_as_written_in_a_clean_folder(demo_run):
    """The folder `prover demo` ran in (the repository's configs, a new HOME, no data folder and
    no `../shared`): each line marked RUN exits 0 on what the demo left and leaves what it says
    (issue 48: `data split` stopped on its defaults and left runs/splits/corpus.jsonl behind;
    issue 61: the data lines named ../shared, `generator suggest` a model and a state file no
    one had, and `search` failed without ../shared)."""
    import os
    import subprocess
    import sys
    clone, demo_env, demo = demo_run
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert not (clone.parent / "shared").exists()
    env = {**demo_env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("PROVER_DATA", None)  # the README's paths, not the suite's
    ran = [line for line, how in README_LINES.items() if how == RUN]
    assert [_key(line) for line in ran] == [l for l in readme_lines() if _key(l) in map(_key, ran)]
    out = {}
    for line in ran:
        done = subprocess.run(["bash", "-c", line], cwd=clone, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, (line, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, line
        out[line.split()[1] + " " + line.split()[2]] = done
    assert (clone / "runs" / "splits" / "ri" / "test.json").is_file()
    assert (clone / "runs" / "eval" / "bm25" / "metrics.json").is_file()
    assert "theorems         60" in out["data stats"].stdout  # the demo's library
    # Suggestions: one line each, a log-probability then a tactic.
    suggestions = out["generator suggest"].stdout.strip().splitlines()
    assert len(suggestions) == 8 and all(float(s.split()[0]) <= 0 for s in suggestions)
    # No mathlib-src in the per-user data folder: the demo's library, said in one line with the
    # command that fills the folder.
    search = out["search \"addition"]
    assert "searching the bundled demo library" in search.stderr and "prover data extract" in search.stderr
    assert search.stdout.splitlines()[0].split()[1] == "Demo.MyNat.add_comm"


# What the README says takes `--config` and `key=value` overrides (issue 48: it said every
# command did, and `data stats`, `data split`, `data trace` and `generator suggest` do not).
CONFIG_COMMANDS = ["demo", "retriever pretrain", "retriever train-cfr", "retriever index",
                   "retriever train-fusion", "retriever train-car", "retriever train-reprover",
                   "retriever eval", "generator build-data", "generator train", "generator neighbors",
                   "benchmark", "prove-sorries", "serve"]


def _help(command: str, capsys) -> str:
    with pytest.raises(SystemExit):
        main([*command.split(), "--help"])
    return capsys.readouterr().out


def test_the_commands_the_readme_says_take_a_config_do(capsys):
    text = re.sub(r"\s+", " ", README)
    assert ("The pipeline's commands (`demo`, `retriever ...`, `generator build-data`/`train`/`neighbors`, "
            "`benchmark`, `prove-sorries`, `serve`) take a YAML config (`--config`) and `key=value` overrides") in text
    assert "`-v` (debug logs) goes before or after the subcommand" in text
    for command in CONFIG_COMMANDS:
        out = _help(command, capsys)
        assert "--config" in out and "overrides" in out and "-v, --verbose" in out, command
        if command.startswith("generator"):
            assert "configs/generator/" in out and "configs/retriever/" not in out, command
    for command in ("data stats", "data split", "data trace", "generator suggest"):
        assert "--config" not in _help(command, capsys), command  # flags, as the README says
    from prover.cli import _parse
    assert _parse(["demo", "-v"]).verbose and _parse(["-v", "demo"]).verbose and not _parse(["demo"]).verbose
