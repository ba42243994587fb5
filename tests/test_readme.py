"""The README a newcomer reads: short, and every command, config and page it names exists."""
from __future__ import annotations

import re
import shlex

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
