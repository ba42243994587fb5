"""The `prover` command: one subcommand per pipeline stage.

Every command that takes a config also takes `key=value` overrides after its options
(`prover retriever eval --config configs/retrieval/bm25.yaml data.root=../shared/data/mathlib-src`).
"""
from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from prover.config import ConfigError, check_overrides
from prover.data.errors import DataError
from prover.utils.logs import setup_logging
from prover.utils.ray_cluster import RayWaitTimeout

log = logging.getLogger("prover")


def _cmd_demo(args: argparse.Namespace) -> int:
    from prover.commands.demo import run_demo
    return run_demo(args.config, args.overrides, args.argv)


def _cmd_data_stats(args: argparse.Namespace) -> int:
    from prover.commands.data_stats import run_stats
    return run_stats(args.data, check_metadata=not args.no_metadata_check, on_error=args.on_error)


def _cmd_data_split(args: argparse.Namespace) -> int:
    from prover.commands.data_split import run_split
    return run_split(args.data, args.source, args.strategy, args.out, args.seed,
                     args.n_val, args.n_test, args.length_measure)


def _cmd_retriever_eval(args: argparse.Namespace) -> int:
    from prover.commands.retriever_eval import run_eval
    return run_eval(args.config, args.retriever, args.data, args.split, args.out, args.overrides)


def _cmd_retriever_pretrain(args: argparse.Namespace) -> int:
    from prover.commands.retriever_pretrain import run_pretrain
    return run_pretrain(args.config, args.overrides)


def _cmd_train_cfr(args: argparse.Namespace) -> int:
    from prover.commands.retriever_train_cfr import run_train_cfr
    return run_train_cfr(args.config, args.overrides)


def _cmd_index(args: argparse.Namespace) -> int:
    from prover.commands.retriever_train_cfr import run_index
    return run_index(args.config, args.overrides, args.out)


def _cmd_train_car(args: argparse.Namespace) -> int:
    from prover.commands.retriever_train_car import run_train_car
    return run_train_car(args.config, args.overrides, args.first_stage)


def _cmd_train_reprover(args: argparse.Namespace) -> int:
    from prover.commands.retriever_train_reprover import run_train_reprover
    return run_train_reprover(args.config, args.overrides)


def _cmd_train_fusion(args: argparse.Namespace) -> int:
    from prover.commands.retriever_train_fusion import run_train_fusion
    return run_train_fusion(args.config, args.overrides)


def _cmd_serve(args: argparse.Namespace) -> int:
    from prover.commands.serve import run_serve
    return run_serve(args.config, args.index, args.corpus, args.host, args.port, args.retrievers,
                     args.ray, args.overrides, args.generator)


def _cmd_search(args: argparse.Namespace) -> int:
    from prover.commands.search import run_search
    return run_search(args.query, args.k, args.json, args.corpus, args.docs, args.queries, args.dense)


def _cmd_generator_build_data(args: argparse.Namespace) -> int:
    from prover.commands.generator import run_build_data
    return run_build_data(args.config, args.overrides, args.split, args.force)


def _cmd_generator_train(args: argparse.Namespace) -> int:
    from prover.commands.generator import run_train
    return run_train(args.config, args.overrides)


def _cmd_generator_neighbors(args: argparse.Namespace) -> int:
    from prover.commands.generator import run_neighbors
    return run_neighbors(args.config, args.overrides)


def _cmd_generator_suggest(args: argparse.Namespace) -> int:
    from prover.commands.generator import run_suggest
    return run_suggest(args.model, args.state, args.num, args.method, args.retriever, args.k,
                       args.data, args.retriever_models, args.max_bytes)


def _cmd_data_trace(args: argparse.Namespace) -> int:
    from prover.tracing.leandojo import TraceArgumentError, TraceUnavailableError, trace_repo
    try:
        if args.backend == "repl":
            from prover.tracing.repl import trace_project
            meta = trace_project(args.repo, args.out, commit=args.commit, corpus=args.corpus,
                                 n_val=args.n_val, n_test=args.n_test, seed=args.seed)
        elif args.commit is None or args.corpus is not None:
            raise TraceArgumentError("COMMIT is required with --backend leandojo" if args.commit is None
                                     else "--corpus is for --backend repl (lean-dojo traces the "
                                     "dependencies' premises itself)")
        else:
            meta = trace_repo(args.repo, args.commit, args.out, build_deps=not args.no_build_deps,
                              n_val=args.n_val, n_test=args.n_test, seed=args.seed)
    except TraceUnavailableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{meta['url']}@{meta['commit']}: {meta['files']:,} files, {meta['premises']:,} premises, "
          f"{meta['theorems']:,} theorems -> {args.out}")
    return 0


def _cmd_data_corpus(args: argparse.Namespace) -> int:
    from prover.commands.data_corpus import run_corpus
    return run_corpus(args.project, args.out, args.backend, args.overrides)


def _cmd_data_theorems(args: argparse.Namespace) -> int:
    from prover.commands.data_theorems import run_theorems
    return run_theorems(args.project, args.out, args.sorries)


def _cmd_data_extract(args: argparse.Namespace) -> int:
    from prover.commands.data_extract import run_extract
    return run_extract(args.project, args.out, args.corpus, args.exclude, args.n_val, args.n_test, args.seed)


def _cmd_data_download(args: argparse.Namespace) -> int:
    from prover.commands.data_download import run_download
    return run_download(args.name, args.out, args.url, args.md5, progress=not args.no_progress)


def _cmd_benchmark(args: argparse.Namespace) -> int:
    from prover.commands.benchmark import run_benchmark_command
    return run_benchmark_command(args)


def _cmd_prove_sorries(args: argparse.Namespace) -> int:
    from prover.commands.prove_sorries import run_prove_sorries
    return run_prove_sorries(args)


def _config_command(sub, name: str, help: str, func,
                    example: str = "configs/retriever/tiny.yaml") -> argparse.ArgumentParser:
    """A subcommand that takes `--config FILE` and `key=value` overrides."""
    cmd = sub.add_parser(name, help=help)
    cmd.add_argument("--config", default=None, help=f"YAML config, e.g. {example}")
    cmd.add_argument("overrides", nargs="*", help="key=value config overrides")
    cmd.set_defaults(func=func)
    return cmd



def _add_held_out_args(parser: argparse.ArgumentParser, what: str = "") -> None:
    """The held-out theorems of a dataset a command writes (trace, extract): val and test sizes, seed."""
    parser.add_argument("--n-val", type=float, default=0.02, help=f"{what}count, or fraction if < 1")
    parser.add_argument("--n-test", type=float, default=0.02, help=f"{what}count, or fraction if < 1")
    parser.add_argument("--seed", type=int, default=3407)

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="prover", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="the default job: train tiny models on the bundled demo library, "
                          "compare retrievers, run a short replay proof search (about a minute)")
    demo.add_argument("--config", default=None, help="YAML config (default: the built-in demo settings, "
                      "prover/commands/demo_settings.py)")
    demo.add_argument("overrides", nargs="*", help="key=value config overrides")
    demo.set_defaults(func=_cmd_demo)

    data = sub.add_parser("data", help="LeanDojo-format datasets").add_subparsers(
        dest="data_command", required=True, metavar="ACTION")
    stats = data.add_parser("stats", help="count files, premises, theorems and tactics")
    stats.add_argument("--data", required=True, help="dataset folder (corpus.jsonl + split folders)")
    stats.add_argument("--no-metadata-check", action="store_true",
                       help="do not compare against the dataset's metadata.json")
    stats.add_argument("--on-error", choices=["raise", "skip"], default="raise",
                       help="a bad record: stop with its file and line (raise), or count it, warn and go on (skip)")
    stats.set_defaults(func=_cmd_data_stats)

    split = data.add_parser("split", help="re-split theorems with the paper's strategies (RD, RI, PL, PF)")
    split.add_argument("--data", required=True, help="dataset folder")
    split.add_argument("--source", default="random",
                       help="split folder whose train+val+test theorems are re-split (default: random)")
    split.add_argument("--strategy", required=True, choices=["random", "ri", "pl", "pf"])
    split.add_argument("--out", required=True, help="output dataset folder (LeanDojo layout)")
    split.add_argument("--seed", type=int, default=3407)
    split.add_argument("--n-val", type=float, default=None, help="count, or fraction if < 1 (default: "
                       "2000 as LeanDojo's, or 5%% of the theorems of a dataset under 40,000)")
    split.add_argument("--n-test", type=float, default=None, help="count, or fraction if < 1 (default: as --n-val)")
    split.add_argument("--length-measure", choices=["tactics", "chars"], default="tactics",
                       help="proof length for pl: tactic count, or characters of the proof text")
    split.set_defaults(func=_cmd_data_split)

    trace = data.add_parser("trace", help="trace a Lean repo into a LeanDojo-format dataset, with lean-dojo "
                            "or the Lean REPL (needs Lean; run it on its own: lean-dojo starts its own Ray)")
    trace.add_argument("repo", help="leandojo: https://github.com/OWNER/NAME, OWNER/NAME, or a local git "
                       "repository; repl: a local Lean project folder (built with lake build)")
    trace.add_argument("commit", nargs="?", default=None, help="commit hash (or a tag) to trace; with "
                       "--backend repl only recorded (default: the folder's git HEAD, else 'unknown')")
    trace.add_argument("--backend", choices=["leandojo", "repl"], default="leandojo",
                       help="leandojo: lean_dojo.trace (default); repl: the Lean REPL's tactics of each file "
                       "(allTactics), no lean-dojo; what it approximates is in metadata.json")
    trace.add_argument("--out", required=True, help="new dataset folder")
    trace.add_argument("--no-build-deps", action="store_true", help="leandojo: do not build the dependencies")
    trace.add_argument("--corpus", default=None, help="repl: a LeanDojo-format dataset (or corpus.jsonl) whose "
                       "premises resolve library names (Mathlib, ...); its files the project imports are "
                       "written into corpus.jsonl")
    _add_held_out_args(trace, "random split: ")
    trace.set_defaults(func=_cmd_data_trace)

    corpus = data.add_parser("corpus", help="the premise corpus (corpus.jsonl, LeanDojo format) of a Lake "
                             "project and its .lake/packages, read from the source (no Lean needed)")
    corpus.add_argument("project", help="a Lake project folder (with .lake/packages for its dependencies)")
    corpus.add_argument("--out", required=True, help="folder for corpus.jsonl and metadata.json")
    corpus.add_argument("--backend", choices=["source", "repl"], default="source",
                        help="source: scan the source (default); repl: then check the names against Lean's "
                        "constants in the Lean REPL (needs the project built)")
    corpus.add_argument("overrides", nargs="*", help="key=value settings, e.g. repl.repl_path=DIR")
    corpus.set_defaults(func=_cmd_data_corpus)

    theorems = data.add_parser("theorems", help="a Lake project's theorems from its source (name, file, position, "
                               "header, statement, whether the proof is a sorry): a list --theorems takes")
    theorems.add_argument("project", help="a Lake project folder (a miniF2F-lean4 checkout, say); its own files only")
    theorems.add_argument("--out", required=True, help="JSON file to write (MiniF2F's theorem list layout)")
    theorems.add_argument("--sorries", action="store_true", help="only the theorems whose proof holds a sorry")
    theorems.set_defaults(func=_cmd_data_theorems)

    ext = data.add_parser("extract", help="a statement-level dataset of a Lake project from its source (what "
                          "mathlib-src is): corpus, theorems with initial goal, proof and premises, random and "
                          "novel_premises splits")
    ext.add_argument("project", help="a Lake project folder (its .lake/packages are read too)")
    ext.add_argument("--out", required=True, help="new dataset folder (LeanDojo layout)")
    ext.add_argument("--corpus", default=None, help="a dataset folder (or corpus.jsonl) whose premises resolve names "
                     "the project's files do not declare")
    ext.add_argument("--exclude", default=None, help="a LeanDojo split file whose theorems (by full name) are kept "
                     "out of train, e.g. the real records held out for validation and testing")
    _add_held_out_args(ext)
    ext.set_defaults(func=_cmd_data_extract)

    from prover.data.download import PUBLISHED
    dl = data.add_parser("download", help="a published dataset (LeanDojo Benchmark 4 from Zenodo): resumes a broken "
                         "transfer, checks the MD5, unpacks, counts it as prover data stats does")
    dl.add_argument("name", choices=sorted(PUBLISHED), help="the dataset")
    dl.add_argument("--out", required=True, help="its folder (LeanDojo layout: corpus.jsonl, random/, novel_premises/)")
    dl.add_argument("--url", default=None, help="a mirror of the archive (default: where its authors publish it)")
    dl.add_argument("--md5", default=None, help="the mirror's MD5 (default: the published archive's)")
    dl.add_argument("--no-progress", action="store_true", help="no progress bar")
    dl.set_defaults(func=_cmd_data_download)

    retr = sub.add_parser("retriever", help="premise retrieval").add_subparsers(
        dest="retriever_command", required=True, metavar="ACTION")
    ev = retr.add_parser("eval", help="evaluate one retriever on a split: rankings + metrics")
    ev.add_argument("--config", default=None, help="YAML config, e.g. configs/retrieval/bm25.yaml")
    ev.add_argument("--retriever", default=None, help="registered retriever name (bm25, bm25-plain, ...)")
    ev.add_argument("--data", default=None, help="dataset folder (overrides data.root)")
    ev.add_argument("--split", default=None, help="e.g. random/test (overrides data.split)")
    ev.add_argument("--out", default=None, help="output folder (overrides eval.out_dir)")
    ev.add_argument("overrides", nargs="*", help="key=value config overrides")
    ev.set_defaults(func=_cmd_retriever_eval)
    _config_command(retr, "pretrain", "train the WordPiece tokenizer and MLM-pre-train the BERT encoder "
                    "CFR and CAR start from", _cmd_retriever_pretrain)
    _config_command(retr, "train-cfr", "train the CFR bi-encoder (cfr.similarity=fine|conventional)",
                    _cmd_train_cfr)
    car = _config_command(retr, "train-car", "train the CAR re-ranker on hard negatives of a first stage",
                          _cmd_train_car)
    car.add_argument("--first-stage", default=None,
                     help="retriever mining hard negatives and re-ranked by CAR (default: car.first_stage, "
                          "cfr unless the config says otherwise)")
    idx = _config_command(retr, "index", "encode the corpus with the trained CFR and save its FAISS index",
                          _cmd_index)
    idx.add_argument("--out", default=None, help="index folder (default: <run_dir>/cfr/index)")
    _config_command(retr, "train-reprover", "train the ReProver-style ByT5 retriever baseline",
                    _cmd_train_reprover)
    _config_command(retr, "train-fusion", "fit the fusion ranker (weights over its members' ranks) on "
                    "the validation split", _cmd_train_fusion)

    srv = sub.add_parser("serve", help="premise search engine: HTTP API and web page over a retriever index")
    srv.add_argument("--config", default=None, help="YAML config, e.g. configs/serve/tiny.yaml")
    srv.add_argument("--index", default=None, help="retriever run folder (cfr/model, cfr/index, car/model) "
                     "or its cfr/index folder")
    srv.add_argument("--corpus", default=None, help="dataset folder whose corpus.jsonl the index was built from")
    srv.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    srv.add_argument("--port", type=int, default=None, help="port (default 8000)")
    srv.add_argument("--retrievers", default=None, help="comma-separated first stages, e.g. cfr,bm25,hybrid")
    srv.add_argument("--generator", action="append", default=None, metavar="[NAME=]MODEL",
                     help="also serve this trained generator to LeanCopilot (POST /generate) under NAME "
                          "(default: generator); repeatable")
    srv.add_argument("--ray", action="store_true", help="run as a Ray Serve deployment (ray.num_replicas)")
    srv.add_argument("overrides", nargs="*", help="key=value config overrides")
    srv.set_defaults(func=_cmd_serve)

    srch = sub.add_parser("search", help="informal premise search: plain English, LaTeX, a theorem's "
                          "name or a Lean-like term (no trained model needed)")
    srch.add_argument("query", nargs="?", default=None, help='e.g. "the square root of two is irrational"')
    srch.add_argument("--k", type=int, default=10, help="hits (default 10)")
    srch.add_argument("--json", action="store_true", help="a JSON list of hits (full_name, score, matched, ...)")
    srch.add_argument("--corpus", default=None, help="dataset folder, or demo (default: mathlib-src in the data folder, else the demo library)")
    srch.add_argument("--docs", default=None, help="docstrings from this corpus or folder of Lean sources "
                      "(default: the corpus folder's leandojo-real/source, when present)")
    srch.add_argument("--queries", default=None, help="file of queries, one a line: JSON lines out")
    member = srch.add_mutually_exclusive_group()
    member.add_argument("--dense", action="store_true", default=None,
                        help="fuse the dense member (all-MiniLM-L6-v2, the 'dense' extra) and the module docs' "
                        "aliases with the words, as issue 63 chose on select, building its index if this corpus "
                        "has none yet (embedding every premise once: about an hour on 2 CPU cores for "
                        "mathlib-src). Default: fused when the extra is installed and the index is built")
    member.add_argument("--lexical", dest="dense", action="store_false", help="the words alone")
    srch.set_defaults(func=_cmd_search)

    gen = sub.add_parser("generator", help="tactic generator").add_subparsers(
        dest="generator_command", required=True, metavar="ACTION")
    bd = _config_command(gen, "build-data", "write premise-augmented (input, tactic) pairs and their statistics",
                         _cmd_generator_build_data, example="configs/generator/tiny.yaml")
    bd.add_argument("--split", action="append", help="split to build (repeatable; default: train and val)")
    bd.add_argument("--force", action="store_true", help="rebuild even if up to date")
    _config_command(gen, "train", "train the ByT5 tactic generator (resumes if interrupted)", _cmd_generator_train,
                    example="configs/generator/tiny.yaml")
    _config_command(gen, "neighbors", "index the training states' tactics into the trained model "
                    "(kNN candidates mixed into its suggestions)", _cmd_generator_neighbors,
                    example="configs/generator/tiny.yaml")
    sg = gen.add_parser("suggest", help="print tactic suggestions for a proof state")
    sg.add_argument("--model", required=True, help="trained generator folder (…/generator/model)")
    sg.add_argument("--state", required=True, help="file holding the proof state")
    sg.add_argument("-n", "--num", type=int, default=8, help="suggestions (beams or samples)")
    sg.add_argument("--method", choices=["beam", "sampling"], default="beam")
    sg.add_argument("--retriever", default=None, help="retrieve premises first (bm25, cfr, cfr+car, ...)")
    sg.add_argument("--k", type=int, default=10, help="premises to retrieve")
    sg.add_argument("--data", default=None, help="dataset folder whose corpus the retriever searches")
    sg.add_argument("--retriever-models", default=None, help="retriever training config of trained models")
    sg.add_argument("--max-bytes", type=int, default=None,
                    help="input byte budget, premises + state (default: the model's)")
    sg.set_defaults(func=_cmd_generator_suggest)

    from prover.commands import benchmark as bench_args, prove_sorries as sorry_args
    bench = sub.add_parser("benchmark", help="best-first proof search on Ray over a theorem set; "
                           "results per theorem, summary and per-retriever table")
    bench_args.add_arguments(bench)
    bench.set_defaults(func=_cmd_benchmark)
    ps = sub.add_parser("prove-sorries", help="attempt the sorry proofs of a Lean project and write "
                        "patches that replace exactly those sorrys")
    sorry_args.add_arguments(ps)
    ps.set_defaults(func=_cmd_prove_sorries)
    _verbose_after_subcommands(p)
    return p


def _verbose_after_subcommands(parser: argparse.ArgumentParser) -> None:
    """`-v` after the subcommand too (`prover demo -v`), as before it. Unset there unless given,
    so `prover -v demo` keeps what it set."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                if not any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
                    sub.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                                     help="debug logging")
                _verbose_after_subcommands(sub)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # argparse takes positionals in one run, so `key=value` overrides after options that follow a
    # positional (`prover prove-sorries PATH --env replay search.timeout_s=60`) come back unparsed.
    if extra and hasattr(args, "overrides") and all("=" in e and not e.startswith("-") for e in extra):
        args.overrides = list(args.overrides) + extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for results files: how they were made
    return args


def check_out(out: str | None) -> None:
    """Every `--out` names a folder: an existing file there is refused before any work."""
    from pathlib import Path
    if out and Path(out).exists() and not Path(out).is_dir():
        raise ConfigError(f"--out {out} is a file: name a folder (a new one, or one to write into)")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    setup_logging(args.verbose)
    try:
        # A bare word where a key=value belongs is answered before any command loads its code.
        check_overrides(getattr(args, "overrides", None) or [])
        check_out(getattr(args, "out", None))
        return args.func(args)
    except (DataError, ConfigError, RayWaitTimeout) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as e:
        # Config mistakes (unknown key, bad value, missing file) end here, said in one line.
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; results written so far are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
