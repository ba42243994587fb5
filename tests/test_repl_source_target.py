"""Headers and statements of the 348 real leandojo-real/val records, from their real source.

`../shared/data/mathlib-src/leandojo-real/source/` holds the 300 files they come from (Mathlib
at 29dcec07, Batteries at bba0af6e, as LeanDojo traced them). Each record's header must end at
a command boundary (Lean parses it alone: no dangling doc comment, attribute, modifier or
`... in`), and its statement must end where the signature ends (the proof starts right after,
with `:=` or an equation `|`, before LeanDojo's `end`)."""
from __future__ import annotations

import json
import re

import pytest

from prover.data.lean_text import mask_non_code
from prover.env.source_target import IN_COMMANDS, MODIFIERS, command_start, file_plan, keyword_index, target_parts
from prover.env.verify import restate
from tests.conftest import require

# What may stand between a header's end and the keyword (comments are blank in masked code).
_ATTRIBUTE = re.compile(r"@\[")


def _strip_attributes(code: str) -> str:
    out, i = [], 0
    while (m := _ATTRIBUTE.search(code, i)) is not None:
        out.append(code[i:m.start()])
        depth, j = 0, m.start() + 1
        for j in range(m.start() + 1, len(code)):
            depth += code[j] in "([{" and 1 or (-1 if code[j] in ")]}" else 0)
            if depth == 0:
                break
        i = j + 1
    return "".join(out) + code[i:]


@pytest.fixture(scope="module")
def real(data_root):
    base = require(data_root / "mathlib-src" / "leandojo-real")
    return base, json.loads((base / "val.json").read_text())


def test_every_real_record_gets_a_parseable_header_and_its_own_statement(real):
    base, records = real
    assert len(records) == 348
    with_modifiers = by_equations = 0
    for r in records:
        path = base / "source" / r["file_path"]
        header, statement = target_parts(path, *r["start"], r["full_name"])
        plan = file_plan(path)
        text, code = plan.text, plan.code
        imports = "\n".join(ln for ln in code[:plan.imports_end].split("\n") if ln.startswith("import"))
        n = 1 if imports else 0  # the import lines alone, the first command (a file may have none)
        assert header[:n] == ((imports,) if imports else ())
        cut = plan.imports_end + len("".join(header[n:]))
        assert text[plan.imports_end:].startswith("".join(header[n:])), r["full_name"]
        kw = plan.keyword_of(keyword_index(plan, *r["start"]))
        # The header ends at a command boundary: what follows starts a line, at column 0 ...
        first = cut + len(code[cut:]) - len(code[cut:].lstrip())
        assert first == 0 or text[first - 1] == "\n", r["full_name"]
        # ... and up to the keyword holds only comments, attributes, modifiers and `... in`s.
        gap = _strip_attributes(code[cut:kw])
        for line in (ln for ln in gap.split("\n") if ln.strip()):
            words = line.split()
            assert set(words) <= MODIFIERS or (words[0] in IN_COMMANDS and words[-1] == "in"), (r["full_name"], line)
        with_modifiers += bool(code[cut:kw].strip() or "/--" in text[cut:kw])
        # The statement ends where the signature ends: the proof follows, before LeanDojo's end.
        end = kw + len(statement) - sum(len(text[a:b]) + 1 for a, b in command_start(code, kw).in_prefixes)
        assert text[kw:end] == statement[len(statement) - (end - kw):], r["full_name"]
        rest = code[end:].lstrip()
        assert rest.startswith((":=", "|")), (r["full_name"], rest[:30])
        lines = [0] + [m.end() for m in re.finditer("\n", text)]
        assert end < lines[r["end"][0] - 1] + r["end"][1], r["full_name"]
        by_equations += rest.startswith("|")
        # One declaration in it, which the verifier restates under a fresh name.
        restated, name = restate(statement)
        assert restated.count(name.rsplit(".", 1)[-1]) == 1 and len(restated) - len(statement) == len(name.rsplit(".", 1)[-1]) - len(r["full_name"].rsplit(".", 1)[-1])
        assert len(re.findall(r"(?m)^(?:theorem|lemma)\b|(?<=\s)(?:theorem|lemma)\s", mask_non_code(statement))) == 1
    # Measured on this data: a doc comment, attribute, modifier or `... in` before the keyword
    # (an ordinary comment, on 8 more, is harmless either way); proved by equations.
    assert (with_modifiers, by_equations) == (156, 4)
