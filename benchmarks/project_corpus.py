"""`prover data corpus` on real Mathlib: time, memory, and what it finds against real data.

    python benchmarks/project_corpus.py [--repeats 3] [--allow-dirty]

Builds the corpus of the 300 real Mathlib files of `mathlib-src/leandojo-real/source/` (Mathlib
at 29dcec07) with the real command (`prover data corpus`, a new process each time: wall time
and peak memory of the whole process, and the build's own seconds from its metadata), and the
same for a one-file project (the fixed cost: Python, imports). Then:

- placement: of the premises the 348 real `leandojo-real/val` records annotate and that one of
  the 300 files defines, the share found by name at LeanDojo's def_pos, and the misses;
- by kind: premises (by file and name) only in ours or only in `mathlib-src/corpus.jsonl.gz`
  (an independent source parser) on the same files;
- an estimate for all of Mathlib at that commit (with Batteries and Aesop): the build's
  seconds and memory above the fixed cost scaled by premises (the reference corpus's 181,355
  against its count on the 300 files) and, as a check, by source bytes.

Writes benchmarks/results/project-corpus.{json,md}.
"""
from __future__ import annotations

import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from prover.benchmarking.harness import add_allow_dirty, machine, parser, require_clean_tree, write_and_print
from prover.data.corpus_reference import annotated_premises, compare_by_kind, placement


def run_build(source: Path, out: Path) -> dict:
    """One `prover data corpus` process: wall seconds, its peak RSS (MiB), its metadata."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "prover.cli", "data", "corpus", str(source), "--out", str(out),
                           "progress=false"], capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"prover data corpus failed: {done.stderr.strip().splitlines()[-1:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    meta = json.loads((out / "metadata.json").read_text())
    # ru_maxrss of children is the largest child so far: valid when this run is the largest.
    return {"wall_s": round(wall, 2), "build_s": meta["seconds"], "peak_rss_mib": round(max(peak, before) / 1024, 1),
            "meta": meta}


def source_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.lean"))


def main(argv: list[str] | None = None) -> int:
    data = Path(os.environ.get("PROVER_DATA", "../shared/data"))
    p = parser(__doc__)
    p.add_argument("--source", default=str(data / "mathlib-src" / "leandojo-real" / "source"))
    p.add_argument("--records", default=str(data / "mathlib-src" / "leandojo-real" / "val.json"))
    p.add_argument("--reference", default=str(data / "mathlib-src" / "corpus.jsonl.gz"))
    p.add_argument("--repeats", type=int, default=3)
    add_allow_dirty(p)
    p.add_argument("--results-dir", default="benchmarks/results")
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)
    source = Path(args.source)
    work = Path(tempfile.mkdtemp(prefix="project-corpus-"))
    tiny = work / "tiny"
    tiny.mkdir()
    (tiny / "lakefile.lean").write_text("import Lake\n")
    (tiny / "Tiny.lean").write_text("theorem t : True := trivial\n")
    base = run_build(tiny, work / "tiny-out")  # the fixed cost first: ru_maxrss only grows
    runs = [run_build(source, work / f"out-{i}") for i in range(args.repeats)]
    meta = runs[0]["meta"]
    rows = [json.loads(line) for line in (work / "out-0" / "corpus.jsonl").read_text().splitlines()]
    wanted = annotated_premises(args.records, {r["path"] for r in rows})
    placed = placement(rows, wanted)
    cmp = compare_by_kind(rows, args.reference)
    ref_files = ref_premises = 0
    with gzip.open(args.reference, "rt") as f:
        for line in f:
            ref_files += 1
            ref_premises += len(json.loads(line)["premises"])
    build_s = statistics.median(r["build_s"] for r in runs)
    wall_s = statistics.median(r["wall_s"] for r in runs)
    peak = max(r["peak_rss_mib"] for r in runs)
    scale = ref_premises / cmp["reference"]
    nbytes = source_bytes(source)
    estimate = {"scale_by_premises": round(scale, 2),
                "build_s": round(build_s * scale, 1),
                "wall_s": round(base["wall_s"] + (wall_s - base["wall_s"]) * scale, 1),
                "peak_rss_mib": round(base["peak_rss_mib"] + (peak - base["peak_rss_mib"]) * scale),
                "reference_files": ref_files, "reference_premises": ref_premises}
    result = {
        "benchmark": "project-corpus", "command": "python benchmarks/project_corpus.py " +
        " ".join(argv if argv is not None else sys.argv[1:]), "git_commit": commit, "machine": machine(),
        "load_avg_1min": round(os.getloadavg()[0], 2),
        "config": {"source": args.source, "records": args.records, "reference": args.reference,
                   "repeats": args.repeats},
        "times": {"build_s": [r["build_s"] for r in runs], "wall_s": [r["wall_s"] for r in runs],
                  "peak_rss_mib": [r["peak_rss_mib"] for r in runs], "fixed_cost": {k: base[k] for k in
                                                                                    ("wall_s", "build_s", "peak_rss_mib")},
                  "source_bytes": nbytes, "build_mb_per_s": round(nbytes / 2**20 / build_s, 2)},
        "corpus": {k: meta[k] for k in ("files", "premises", "by_kind", "uncertain", "derived", "problems",
                                          "imports_outside_corpus")},
        "placement": placed, "by_kind": cmp, "estimate_all_mathlib": estimate,
    }
    out = Path(args.results_dir)
    write_and_print(out / "project-corpus", result, markdown)
    return 0


def markdown(r: dict) -> str:
    t, e, pl, c = r["times"], r["estimate_all_mathlib"], r["placement"], r["by_kind"]
    m = r["machine"]
    lines = [
        "# `prover data corpus`: the 300 real Mathlib files of leandojo-real", "",
        f"Commit {r['git_commit']}. Machine: {m.get('cpu')} ({m.get('cpu_count')} cores, shared; 1-minute load "
        f"average at the end {r['load_avg_1min']}). Command: `{r['command'].strip()}`.", "",
        "| what | value |", "|---|---|",
        f"| files, premises | {r['corpus']['files']:,}, {r['corpus']['premises']:,} |",
        f"| build time (median of {len(t['build_s'])}; the command's own, from its metadata) | "
        f"{statistics.median(t['build_s']):.1f} s ({t['build_mb_per_s']} MB of source per second) |",
        f"| wall time of the whole process (median) | {statistics.median(t['wall_s']):.1f} s |",
        f"| peak memory (RSS) of the process | {max(t['peak_rss_mib']):.0f} MiB |",
        f"| the same for a one-file project (fixed cost) | {t['fixed_cost']['wall_s']} s, "
        f"{t['fixed_cost']['peak_rss_mib']:.0f} MiB |",
        f"| estimate, all of Mathlib 29dcec07 + Batteries + Aesop ({e['reference_files']:,} files, "
        f"{e['reference_premises']:,} premises: ×{e['scale_by_premises']}) | build {e['build_s'] / 60:.1f} min, "
        f"process {e['wall_s'] / 60:.1f} min, {e['peak_rss_mib']:,} MiB |",
        f"| annotated premises of the 348 real val records defined in these files, found by name at "
        f"LeanDojo's def_pos | {pl['found']} of {pl['annotated']} ({100 * pl['share']:.1f}%) |", "",
        "Missed: " + (", ".join(f"`{x['full_name']}` ({x['why']})" for x in pl["missed"]) or "none") + ".", "",
        f"Against `mathlib-src/corpus.jsonl.gz` (an independent source parser) on the same {c['files']} files: "
        f"{c['ours']:,} premises here, {c['reference']:,} there, {c['both']:,} in both.", "",
        "| kind | here | there | only here | only there | examples only here | examples only there |",
        "|---|---|---|---|---|---|---|"]
    kinds = sorted(set(c["ours_by_kind"]) | set(c["reference_by_kind"]),
                   key=lambda k: -(c["ours_by_kind"].get(k, 0) + c["reference_by_kind"].get(k, 0)))
    for k in kinds:
        oo, orf = c["only_ours"].get(k, {}), c["only_reference"].get(k, {})
        ex = lambda d: "; ".join(f"`{x.split(': ', 1)[1]}`" for x in d.get("examples", [])[:2])  # noqa: E731
        lines.append(f"| {k} | {c['ours_by_kind'].get(k, 0):,} | {c['reference_by_kind'].get(k, 0):,} | "
                     f"{oo.get('count', 0):,} | {orf.get('count', 0):,} | {ex(oo)} | {ex(orf)} |")
    lines += ["", "Not read with certainty (metadata `uncertain`, counted, never guessed silently):", ""]
    lines += [f"- {k}: {v:,}" for k, v in r["corpus"]["uncertain"].items()]
    lines += ["", "Estimate: the build's seconds and memory above the one-file project's, scaled by premises "
              "(the files here are Mathlib's larger ones; per source byte the scale would be similar). "
              "Lean-core premises (Init, Std, Lean) are absent without a toolchain, as in the reference.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
