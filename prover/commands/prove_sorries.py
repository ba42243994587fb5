"""`prover prove-sorries PATH`: find the sorry proofs of a Lean project, attempt each, patch in proofs."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path



REAL_RUN = """\
A real run on the REPL (--env repl; what --env auto picks from Lean v4.8.0-rc1) needs:
  - elan (lake on PATH) and the project built once (`lake build`; with Mathlib, `lake exe
    cache get` first); the REPL is fetched and built once by lean-interact (or give a built one:
    env.repl.repl_path=DIR);
  - about env.repl.memory_gb (8) GiB of memory for the REPL.

Commands:
  prover prove-sorries PROJECT --env repl --generator MODEL [--write]

Time: each file is elaborated once per sorry opened (minutes for a file importing Mathlib the
first time), then each sorry gets a search of up to search.timeout_s (600 s; each tactic
env.repl.timeout, 60 s). Every sorry can be attempted (the REPL gives each its own goal). Each
proof is checked in its file at once, and before writing, each file with all its proofs in
place must elaborate with no error: a proof that breaks it is not patched.

A real run on lean-dojo (--env leandojo, Lean before v4.12 only: lean-dojo/LeanDojo#211) needs:
  - a Lean 4 toolchain (elan, or lake and lean on PATH) and git 2.25 or newer;
  - the project with its lakefile at the root of its git repository (a project in a subfolder
    is refused), and everything committed: LeanDojo traces the HEAD commit, not the files;
  - the network, or its settings: lean-dojo calls the GitHub API even for a local repository
    (set GITHUB_ACCESS_TOKEN) and looks for a traced copy in its remote cache first (set
    DISABLE_REMOTE_CACHE=1 offline).

Commands:
  git -C PROJECT status --short        # must print nothing
  prover prove-sorries PROJECT --env leandojo --generator MODEL [--write]

Time: the project is traced once, before any search (cached for later runs): minutes for a
small project, hours for one that depends on Mathlib, whose build cache is fetched with
`lake exe cache get` rather than compiled. Then each whole-proof sorry gets a search of up to
search.timeout_s (600 s; each tactic env.leandojo.timeout, 60 s), and each proof found is
re-checked in its file with lean_dojo.check_proof before it goes into the patch.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = "Find the sorry proofs of a Lean project, attempt each, and patch in the proofs."
    p.epilog = REAL_RUN
    p.add_argument("path", help="a Lean project folder (a git repository for --env leandojo) or one .lean file")
    p.add_argument("--env", choices=["auto", "repl", "leandojo", "replay"], default="auto",
                   help="auto (default: the project's lean-toolchain decides), repl (Lean through the "
                        "Lean REPL), leandojo (Lean before v4.12) or replay (a simulator fed traced "
                        "proofs: --replay-traces)")
    p.add_argument("--write", action="store_true",
                   help="also write the patched files (as new files under OUT/patched/)")
    p.add_argument("--out", default=None, help="report folder (default: runs/prove-sorries/<project>)")
    p.add_argument("--config", default=None, help="YAML config with search/generator/retriever/env "
                                                  "sections (e.g. configs/search/default.yaml)")
    p.add_argument("--generator", default=None, help="trained generator folder (…/generator/model)")
    p.add_argument("--retriever", default=None, help="none (default), bm25, cfr, cfr+car, ...")
    p.add_argument("--corpus", default=None, help="dataset folder whose corpus the retriever searches "
                   "(default: the corpus of the Lean project the run is on, built from its source once; "
                   "prover data corpus)")
    p.add_argument("--retriever-models", default=None, help="retriever training config of trained models")
    p.add_argument("--replay-traces", default=None,
                   help="--env replay: LeanDojo-format theorem records (a split .json) of the sorry theorems")
    p.add_argument("overrides", nargs="*", help="key=value config overrides (search.*, generator.*, env.*)")


def run_prove_sorries(args: argparse.Namespace) -> int:
    from prover.config import load_config
    from prover.data.theorem import load_theorems
    from prover.env.leandojo_env import LeanDojoEnv
    from prover.env.replay import ReplayEnv
    from prover.search.components import (EnvUnavailableError, env_spec, generator_spec, require_env,
                                          premise_source, retriever_spec, tactic_source)
    from prover.search.settings import SearchBenchmarkConfig, as_object
    from prover.sorries.find import find_sorries
    from prover.env.preflight import preflight
    from prover.env.trace_ahead import trace_ahead
    from prover.sorries.project import check_project
    from prover.sorries.prove import prove_sorries, skip_reason, sorry_theorem, write_report
    from prover.env.lean_version import EnvChoiceError, choose_env, read_toolchain
    from prover.env.repl_env import ReplEnv, ReplTarget
    from prover.env.repl_session import ReplSession, prepare
    from prover.sorries.patch import apply_patches, make_patch
    from prover.search.project_premises import ensure_corpus
    from retriever.base import TheoremContext

    path = Path(args.path)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    flags = {"env.name": args.env, "generator.model": args.generator, "retriever.name": args.retriever,
             "retriever.corpus": args.corpus, "retriever.models": args.retriever_models}
    overrides = [f"{k}={v}" for k, v in flags.items() if v is not None] + list(args.overrides)
    cfg = load_config(SearchBenchmarkConfig, args.config, overrides)
    root = path if path.is_dir() else path.parent
    if not cfg.env.repl.project:
        cfg.env.repl.project = str(project_folder(root))
    try:
        if cfg.env.name != "replay":  # auto, and lean-dojo refused on Lean v4.12 or later
            cfg.env.name = choose_env(cfg.env.name, read_toolchain(cfg.env.repl.project))
        require_env(cfg.env.name)
    except (EnvUnavailableError, EnvChoiceError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    sorries = find_sorries(path)
    todo = [s for s in sorries if skip_reason(s, cfg.env.name) is None]
    env = env_spec(cfg)
    lean_project = None
    session = None
    if cfg.env.name == "repl":
        session = ReplSession(prepare(env.repl))  # one REPL for the whole run

        def make_env(s):
            file = root / s.file
            source = file.read_bytes()
            return ReplEnv(ReplTarget(s.label, file=str(file.resolve()), position=(s.line, s.column), decl=s.name),
                           session,
                           patch_file=lambda tactics: apply_patches(source, [make_patch(s, tactics)]))
    elif cfg.env.name == "leandojo":
        # Before any long work: the lakefile at the git root, and every file committed (LeanDojo
        # builds the commit, and each file it may patch must be the one it proved against).
        lean_project = check_project(path)
        for line in preflight():  # git version, network and cache settings: one line each
            print(line)
        leandojo_cfg = env.leandojo
        if lean_project.uses_mathlib and leandojo_cfg.build_deps:
            # lean-dojo runs `lake exe cache get` when it does not build dependencies itself.
            print("Mathlib is a dependency: its build cache is fetched (lake exe cache get) "
                  "instead of compiling it (env.leandojo.build_deps=false)")
            leandojo_cfg = dataclasses.replace(leandojo_cfg, build_deps=False)

        def make_env(s):
            return LeanDojoEnv(sorry_theorem(s, str(lean_project.top), lean_project.commit,
                                             lean_project.prefix), leandojo_cfg)
    else:
        if not args.replay_traces:
            raise ValueError("--env replay needs --replay-traces: the traced proofs the simulator replays")
        traced = {t.full_name: t for t in load_theorems(args.replay_traces)}

        def make_env(s):
            # A theorem without a record opens no env: it is reported as an error.
            return ReplayEnv(traced.get(s.name) or sorry_theorem(s, "", ""), env.replay)

    if lean_project is not None and todo:
        # Before any search: on a cache miss a Dojo would trace (hours) inside the first search.
        trace_ahead([(str(lean_project.top), lean_project.commit)], leandojo_cfg.build_deps,
                    progress=cfg.progress)
    if todo:  # no --corpus: the corpus of the project itself, built from its source (once per state)
        ensure_corpus(cfg, cfg.env.repl.project)
    # The project corpus's paths are relative to the project; the sorries' to `root`.
    prefix = _prefix_in_project(root, cfg.env.repl.project)
    premises = premise_source(retriever_spec(cfg)) if todo else None
    tactics = tactic_source(generator_spec(cfg)) if todo else None
    attempts = prove_sorries(sorries, make_env, premises, tactics, as_object(cfg.search),
                             context=lambda s: TheoremContext(prefix + s.file, (s.line, s.column + 1)),
                             progress=cfg.progress, env=cfg.env.name)
    if session is not None:
        check_note = recheck_in_repl(attempts, root, session)
        session.close()
    elif lean_project is not None:
        check_note = recheck_in_lean(attempts, lean_project)
    else:
        check_note = "proofs not re-checked in Lean: the replay env is a simulator"
    out = Path(args.out or Path("runs/prove-sorries") / root.resolve().name)
    report = write_report(root, attempts, out, cfg.env.name, args.write, check_note)
    c = report["counts"]
    print(f"{report['env_label']}\n{len(sorries)} sorries: proved {c['proved']}, failed {c['failed']}, "
          f"errors {c['error']}, skipped {c['skipped']}")
    if report["patch"]:
        print(f"patch: {report['patch']} (apply from {root} with `git apply` or `patch -p1`)")
    for f in report["patched_files"]:
        print(f"wrote {f}")
    print(report["check"])
    print(f"report: {out / 'report.md'}")
    return 0


def _prefix_in_project(root: Path, project: str | None) -> str:
    """`root`'s path inside the project folder, with a trailing `/` ('' at the top or outside)."""
    try:
        rel = root.resolve().relative_to(Path(project).resolve()) if project else Path(".")
    except ValueError:
        return ""
    return "" if rel == Path(".") else rel.as_posix() + "/"


def project_folder(start: Path) -> Path:
    """The Lean project holding `start`: the nearest folder up with a lean-toolchain."""
    for folder in [start.resolve(), *start.resolve().parents]:
        if (folder / "lean-toolchain").is_file():
            return folder
    return start.resolve()


def recheck_in_repl(attempts: list, root: Path, session) -> str:
    """Each file with its proofs in place must elaborate in the REPL before it is patched."""
    from prover.sorries.check import CHECKED, REJECTED, recheck_files_in_repl
    from prover.sorries import lean4checker
    cfg = session.cfg
    checker = lean4checker.Lean4Checker(Path(cfg.project or root), cfg.lake) if lean4checker.available() else None
    n = recheck_files_in_repl(attempts, root, session.file, session.command, cfg.allow_native_decide,
                              session.replay_in_kernel, cfg.kernel_replay,
                              cfg.accept_proofs_without_kernel_replay, checker)
    if not n[CHECKED] + n[REJECTED]:
        return "no proof to re-check in the REPL"
    note = (f"re-checked in the REPL, each file with its proofs in place: {n[CHECKED]} accepted, "
            f"{n[REJECTED]} rejected (not patched)")
    if cfg.accept_proofs_without_kernel_replay:
        note += ("; NO kernel replay required (env.repl.accept_proofs_without_kernel_replay=true): "
                 "an accepted proof may not have been replayed through the kernel")
    if session.kernel_problem:
        note += f"; {session.kernel_problem}"
    note += "; " + (checker.note() if checker is not None else "lean4checker: not installed (not run)")
    return note


def recheck_in_lean(attempts: list, project) -> str:
    """Re-check every proof found with `lean_dojo.check_proof`; one line for the report."""
    import lean_dojo

    from prover.sorries.check import CHECKED, REJECTED, UNCHECKED, recheck_proofs

    def theorem_of(s):
        repo = lean_dojo.LeanGitRepo(str(project.top), project.commit)
        return lean_dojo.Theorem(repo, Path(project.prefix + s.file), s.name)

    n = recheck_proofs(attempts, lean_dojo.check_proof, theorem_of)
    if not sum(n.values()):
        return "no proof to re-check with lean_dojo.check_proof"
    return (f"re-checked with lean_dojo.check_proof: {n[CHECKED]} accepted, {n[REJECTED]} rejected "
            f"(not patched), {n[UNCHECKED]} could not be checked (not patched)")
