"""Entry point of the proof-search benchmark as a Ray job.

    ray job submit --address http://HEAD:8265 --working-dir . -- \\
        python benchmarks/search_job.py --config configs/search/default.yaml --theorems minif2f --split test \\
        --retriever bm25,cfr+car --out runs/search-minif2f

Inside a job Ray sets RAY_ADDRESS, so the driver joins the cluster the job was submitted to;
run by hand, it starts a local cluster. It takes exactly the options of `prover benchmark`
(`--help` lists them). With a cluster launched from configs/cluster/cluster.yaml, `ray submit
configs/cluster/cluster.yaml benchmarks/search_job.py -- ARGS` runs it on the head node.
"""
from __future__ import annotations

import sys

from prover.cli import main

if __name__ == "__main__":
    sys.exit(main(["benchmark", *sys.argv[1:]]))
