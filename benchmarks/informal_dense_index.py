"""The dense member's full-corpus index build (issue 63): its time, memory and size, from the build's log.

    /usr/bin/time -v python -m retriever.informal.dense ../shared/data/mathlib-src --threads 1 \\
        --tokens 64 > runs/dense-build.log 2>&1
    python benchmarks/informal_dense_index.py --log runs/dense-build.log --commit COMMIT

The build (`python -m retriever.informal.dense`, resumable, chunk by chunk) takes tens of
minutes on a CPU, so it is not rerun here: this script records what its log says (the build's
own summary line and GNU time's wall clock and peak memory, both kept verbatim in the file) and
measures the cache folder it left (chunks on disk, float16). `--commit` names the commit the
build ran at (the log does not). Writes benchmarks/results/informal-dense-index-mathlib-src.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from prover.benchmarking.harness import (RESULTS_DIR, add_allow_dirty, command_line, machine, parser,
                                         require_clean_tree, write_and_print)

STEM = "informal-dense-index-mathlib-src"


def render(r: dict) -> str:
    lines = [f"# {r['benchmark']}", "", r["about"], "",
             f"Build at commit {r['build_commit']}: `{r['build_command']}`; recorded at {r['git_commit']} by "
             f"`{r['command']}`; {r['machine'].get('cpu')}.", "",
             "| premises | texts encoded | dims | tokens | threads | build min | CPU-min | texts/s | peak RSS GiB | "
             "cache on disk MiB | in memory MiB (float32) |",
             "|---|---|---|---|---|---|---|---|---|---|---|",
             f"| {r['premises']:,} | {r['texts']:,} | {r['dims']} | {r['tokens']} | {r['threads']} | "
             f"{r['build_minutes']:.1f} | {r['cpu_minutes']:.1f} | {r['texts_per_second']:.0f} | {r['peak_rss_gib']:.2f} | "
             f"{r['cache_mib']:.0f} | {r['memory_mib']:.0f} |", "",
             f"Weights: all-MiniLM-L6-v2, model.safetensors SHA-256 `{r['dense_model_sha256']}`.", "",
             f"Machine: {r['load_note']}", "", "The log's lines:", ""]
    lines += [f"    {line}" for line in r["log_lines"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = add_allow_dirty(parser(__doc__))
    p.add_argument("--log", required=True)
    p.add_argument("--commit", required=True, help="the commit the build ran at")
    p.add_argument("--cache", default="runs/dense")
    p.add_argument("--command", default="nice -n 5 /usr/bin/time -v python -m retriever.informal.dense "
                                        "/work/shared/data/mathlib-src --cache runs/dense --threads 1 --tokens 64")
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)
    text = Path(args.log).read_text(errors="replace").replace("\r", "\n")
    summary = re.search(r"dense index: ([\d,]+) premises, (\d+) dims, (\d+) s, peak RSS ([\d.]+) GiB, "
                        r"weights sha256 ([0-9a-f]{64})", text)
    if summary is None:
        raise SystemExit(f"{args.log}: no build summary line (the build has not finished)")
    progress = re.findall(r"dense index: [\d,]+/([\d,]+) texts encoded", text)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    cpu = [float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", text)]
    keep = [line for line in text.splitlines()
            if line.startswith(("dense index:", "\tElapsed", "\tMaximum resident", "\tUser time",
                                "\tSystem time", "\tPercent of CPU"))]
    keep = keep[:1] + keep[-12:] if len(keep) > 13 else keep
    folder = next(Path(args.cache).glob(f"{summary.group(5)[:16]}-t*"))
    cache_bytes = sum(f.stat().st_size for f in folder.glob("chunk-*.npz"))
    premises, dims, seconds = int(summary.group(1).replace(",", "")), int(summary.group(2)), int(summary.group(3))
    texts = int(progress[-1].replace(",", "")) if progress else premises
    build_commit = subprocess.run(["git", "rev-parse", args.commit], capture_output=True, text=True,
                                  check=True).stdout.strip()
    result = {
        "benchmark": "informal search: the dense member's index over mathlib-src (all-MiniLM-L6-v2)",
        "about": "Every premise's text in words (name and statement; docstrings and aliases are added by the "
                 "retriever that reads them, a few thousand texts more) embedded once, 64 tokens, one torch "
                 "thread, cached on disk by text in float16 chunks.",
        "git_commit": commit, "command": command_line("benchmarks/informal_dense_index.py", argv),
        "machine": machine(), "build_commit": build_commit, "build_command": args.command,
        "premises": premises, "texts": texts, "dims": dims, "tokens": 64, "threads": 1,
        "build_seconds": seconds, "build_minutes": seconds / 60, "texts_per_second": texts / seconds,
        "wall_clock": wall.group(1) if wall else None,
        "cpu_minutes": sum(cpu) / 60 if cpu else None,  # user + system, the whole process
        "peak_rss_gib": int(rss.group(1)) / 2**20 if rss else float(summary.group(4)),
        "cache_mib": cache_bytes / 2**20, "memory_mib": premises * dims * 4 / 2**20,
        "dense_model_sha256": summary.group(5),
        "load_note": "2 CPU cores shared with six other jobs and a training run with priority (load average "
                     "about 6 to 10 during the build); the build ran at nice 5. A quiet machine is faster.",
        "log_lines": keep, "role": "measure",
    }
    write_and_print(RESULTS_DIR / STEM, result, render)


if __name__ == "__main__":
    main()
