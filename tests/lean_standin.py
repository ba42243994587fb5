"""Answers a stand-in REPL gives to the verifier's query (`prover.env.lean_query`), in the format
that query makes Lean print: one info message, the marker, then JSON of the environment's own
constants with their flags and each asked name's axioms as components. What the answer holds
is each test's choice (what Lean would say to its attack), never Lean's own output."""
from __future__ import annotations

import json

from prover.env.lean_query import MARKER


def asked(cmd: str) -> int:
    """How many names the query asks the axioms of."""
    names = cmd[cmd.index("for n in ([") + len("for n in (["):cmd.index("] : List Name)")]
    return names.count("Name.anonymous")


def query_answer(cmd: str, locals_: list, axioms: list | None, env: int = 8) -> dict:
    """Lean's answer: `locals_` ([components, flags] each), `axioms` (component lists) for every
    asked name (None: Lean does not know the name)."""
    data = {"locals": locals_, "axioms": [axioms] * asked(cmd)}
    return {"messages": [{"severity": "info", "pos": {"line": 2, "column": 0},
                          "data": MARKER + json.dumps(data, ensure_ascii=False, separators=(",", ":"))}],
            "env": env}


def split(printed: list[str]) -> list[list[str]]:
    """Printed axiom names as components where each is a plain dotted name (the test's choice)."""
    return [a.split(".") for a in printed]
