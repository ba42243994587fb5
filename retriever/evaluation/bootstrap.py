"""Paired bootstrap intervals for per-query metrics (e.g. R@10 of two retrievers).

Two rows of a table are scored on the same queries, so their difference is judged by
resampling (not each row separately): one resample is applied to both rows, keeping each
query's pair together. The 95% interval is the 2.5th to 97.5th percentile of the statistic
over the resamples (percentile bootstrap). The seed is fixed, so a results file's intervals
are reproducible.

Queries of one theorem are not independent (its tactics share a proof, a file and premises),
so callers pass `clusters`, each query's theorem: a resample then draws theorems with
replacement and keeps all their queries (the cluster bootstrap), and a mean is the mean over
the drawn theorems' queries. Without clusters every query is its own.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

N_RESAMPLES = 2000
SEED = 0
_CHUNK = 250  # resamples drawn at once: bounds memory at _CHUNK * n indices


@dataclass(frozen=True)
class PairedIntervals:
    """95% intervals (lo, hi) of mean(a), mean(b), mean(a) - mean(b) and mean(a) / mean(b);
    `ratio` is None when some resample has mean(b) == 0 (the ratio is then undefined)."""

    a: tuple[float, float]
    b: tuple[float, float]
    diff: tuple[float, float]
    ratio: tuple[float, float] | None


Clusters = Sequence[Hashable] | None


def resampled_means(values: np.ndarray, n_resamples: int = N_RESAMPLES,
                    seed: int = SEED, clusters: Clusters = None) -> np.ndarray:
    """(n_resamples, rows) means of each row of `values` (rows, n_queries) over the same
    resampled clusters (`clusters[i]`: query i's theorem; None: each query its own); equal
    seeds give equal resamples for any `values` with those clusters."""
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n = values.shape[1]
    if n == 0:
        raise ValueError("no queries to resample")
    if clusters is None:
        sums, counts = values, np.ones(n)
    else:
        if len(clusters) != n:
            raise ValueError(f"{len(clusters)} cluster labels for {n} queries")
        order: dict[Hashable, int] = {}  # clusters numbered in order of first appearance
        ids = np.array([order.setdefault(c, len(order)) for c in clusters])
        counts = np.bincount(ids).astype(np.float64)
        sums = np.stack([np.bincount(ids, weights=row, minlength=len(counts)) for row in values])
    c = len(counts)
    rng = np.random.default_rng(seed)
    out = np.empty((n_resamples, values.shape[0]))
    for lo in range(0, n_resamples, _CHUNK):
        idx = rng.integers(0, c, size=(min(_CHUNK, n_resamples - lo), c))
        out[lo: lo + len(idx)] = (sums[:, idx].sum(axis=2) / counts[idx].sum(axis=1)).T
    return out


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(samples, [tail, 100 - tail])
    return float(lo), float(hi)


def mean_interval(values: np.ndarray, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                  level: float = 0.95, clusters: Clusters = None) -> tuple[float, float]:
    """The bootstrap interval of one row's mean."""
    return percentile_interval(resampled_means(values, n_resamples, seed, clusters)[:, 0], level)


def paired_intervals(a: np.ndarray, b: np.ndarray, n_resamples: int = N_RESAMPLES,
                     seed: int = SEED, level: float = 0.95, clusters: Clusters = None) -> PairedIntervals:
    """Intervals of both means, their difference and their ratio, from one paired bootstrap
    (a[i] and b[i] are the same query's metric under rows a and b; `clusters[i]` its theorem)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired rows need equal 1-d shapes, got {a.shape} and {b.shape}")
    means = resampled_means(np.stack([a, b]), n_resamples, seed, clusters)
    ma, mb = means[:, 0], means[:, 1]
    ratio = percentile_interval(ma / mb, level) if np.all(mb != 0) else None
    return PairedIntervals(percentile_interval(ma, level), percentile_interval(mb, level),
                           percentile_interval(ma - mb, level), ratio)
