#!/usr/bin/env python3
"""Regenerate prover/env/repl_revisions.json: which Lean REPL revisions replay through the kernel.

The verifier's kernel replay is the REPL's `pickleTo` then `unpickleEnvFrom`; what unpickling
does is read here from each revision's own `REPL/Snapshots.lean` (both `unpickle` functions,
the command snapshot's and the proof snapshot's):

- `(← importModules ...).replay (...)` / `cmd.cmdState.env.replay (...)`: Lean's
  `Environment.replay` (src/Lean/Replay.lean), which adds each constant through the kernel
  (`addDecl`), as lean4checker does: `kernel`;
- `Lean.Environment.replayToElabEnv`: rebuilds the elaborator's environment from the constants
  without type checking them (upstream REPL from v4.30.0-rc1, commit c9cde4d, "bump toolchain
  to v4.30.0-rc1"; lean-interact's fork from its tags on that toolchain): `bypass`;
- neither: `unknown` (not written: a revision not in the table is refused anyway).

Usage (each argument a bare git directory, e.g. the `fetch` tool's mirror)::

    python tools/repl_revisions.py --upstream /path/leanprover-community+repl/repo \
        --fork /path/augustepoiroux+repl/repo [--fork-release v1.3.18] [--out prover/env/repl_revisions.json]

Rows: every tag of the upstream REPL, and every `<release>_lean-toolchain-<toolchain>` tag of
the fork, each with its commit, toolchain (`lean-toolchain` at that commit), the file and lines
read, and the route.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

FILE = "REPL/Snapshots.lean"
OUT = Path(__file__).resolve().parent.parent / "prover" / "env" / "repl_revisions.json"


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def route(source: str) -> tuple[str, list[str]]:
    """What `unpickle` does in this Snapshots.lean: (route, the lines that say it)."""
    lines = [ln.strip() for ln in source.splitlines()]
    bypass = [ln for ln in lines if "replayToElabEnv" in ln]
    kernel = [ln for ln in lines if re.search(r"\.replay \(", ln) and "replayToElabEnv" not in ln]
    if bypass:
        return "bypass", bypass
    if kernel:
        return "kernel", kernel
    return "unknown", []


def rows(repo: str, name: str, tags: list[str]) -> list[dict]:
    out = []
    for tag in tags:
        commit = git(repo, "rev-parse", f"{tag}^{{commit}}").strip()
        try:
            source = git(repo, "show", f"{commit}:{FILE}")
            toolchain = git(repo, "show", f"{commit}:lean-toolchain").strip()
        except subprocess.CalledProcessError:
            continue  # no pickling at this revision
        how, read = route(source)
        if how == "unknown":
            continue
        out.append({"repo": name, "tag": tag, "commit": commit, "toolchain": toolchain, "file": FILE,
                    "unpickle": how, "read": read[0]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--fork", required=True)
    ap.add_argument("--fork-release", action="append", default=None)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()
    releases = a.fork_release or ["v1.3.18"]
    upstream = sorted(git(a.upstream, "tag").split())
    fork = sorted(t for t in git(a.fork, "tag").split()
                  if any(t.startswith(f"{r}_lean-toolchain-") for r in releases))
    table = rows(a.upstream, "leanprover-community/repl", upstream) + rows(a.fork, "augustepoiroux/repl", fork)
    data = {
        "note": ("Lean REPL revisions whose `unpickleEnvFrom` replays the pickled constants through "
                 "Lean's kernel (`unpickle`: kernel) or rebuilds the environment without checking "
                 "them (bypass), each read from its own REPL/Snapshots.lean at the commit named; "
                 "regenerate with tools/repl_revisions.py. lean-interact's default fork release "
                 "(v1.3.19 in lean-interact 0.11.6) is not in the snapshot read, so it is not here."),
        "fork_releases": releases,
        "revisions": table,
    }
    Path(a.out).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(table)} revisions ({sum(r['unpickle'] == 'kernel' for r in table)} kernel) -> {a.out}")


if __name__ == "__main__":
    main()
