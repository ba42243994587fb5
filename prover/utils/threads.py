"""CPU threads of torch and of the processes a command starts.

torch's default is one intra-op thread per core, and its OpenMP workers spin while they wait
for work. On a machine whose cores other jobs hold, a tiny model's many small operations then
wait on spinning threads that cannot get a core: a generator call of the demo took 1.3 s with
2 threads against 0.2 s with 1 on a 2-core machine beside one training job, and 4-11 s against
0.8-1.9 s with two busy loops beside it (issue 41). Setting the count deliberately makes a
command slow down in proportion to the load instead.
"""
from __future__ import annotations

import os

# Read by OpenMP, MKL and OpenBLAS when a process starts: set here, they reach every process
# started afterwards (Ray's raylet and its workers inherit this process's environment).
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def set_cpu_threads(n: int) -> None:
    """Use `n` intra-op threads in this process and in every process started from it."""
    if n < 1:
        raise ValueError(f"threads must be at least 1, not {n}")
    for var in THREAD_VARS:
        os.environ[var] = str(n)
    import torch  # here: callers set threads before the heavy imports, not because of them
    torch.set_num_threads(n)
