"""Retrievers with nothing learned: the floor every learned row is judged against.

- `locality`: the query file's own premises declared before the theorem, nearest first, then
  the premises of the files it imports, nearer files (fewer import hops) first.
- `usage`: premises by how often the training proofs of the query's file used them, the rest
  (and ties) in locality order.
- `random`: a seeded random order, a sanity floor.

All three rank only premises accessible to the query's theorem (as BM25 does); a query with
no context has no file to be local to, so it gets corpus order (locality, usage) or a random
order over the whole corpus.
"""
from __future__ import annotations

import zlib
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence

import numpy as np

from prover.data.corpus import Corpus
from prover.data.pairs import gold_indices
from prover.data.theorem import Theorem
from retriever.base import Context, RankedPremise, Retriever, TheoremContext


# `ranked_after` scores a prior's own evidence (use counts, neighbours' votes) above this and
# locality's fill at or below it.
LOCALITY_FILL = 1.0


def evidence(hits: list[RankedPremise]) -> list[RankedPremise]:
    """The hits a prior ranked by its own evidence, without locality's fill after them."""
    return [h for h in hits if h.score > LOCALITY_FILL]


class ContextRetriever(Retriever):
    """A retriever whose scores depend on the query's theorem context, not on its state."""

    def context_scores(self, state: str, ctx: Context | None) -> np.ndarray:
        """Scores over the whole corpus, higher is better (accessibility is applied after)."""
        raise NotImplementedError

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        if len(states) != len(contexts):
            raise ValueError(f"{len(states)} states but {len(contexts)} contexts")
        out = []
        for state, ctx in zip(states, contexts):
            scores = self.context_scores(state, ctx).astype(np.float64)
            if ctx is not None:
                scores = np.where(ctx.accessible(self.corpus), scores, -np.inf)
            out.append(self._ranked(scores, k))
        return out


class LocalityRetriever(ContextRetriever):
    """Own file first (closest preceding declaration first), then files by import distance.

    Order: import distance (BFS hops from the query's file over `imports`; the file itself is
    0), then, among files at one distance, the order BFS reaches them (following each file's
    import list in its written order), then, within a file, later declarations first (for the
    own file that is "nearest to the theorem first"). Scores are `-rank`, so `top_k` keeps
    exactly this order.
    """

    name = "locality"

    CACHED_FILES = 256  # an order and its ranks per query file (8 bytes a premise): bounded, LRU

    def __init__(self, corpus: Corpus) -> None:
        super().__init__(corpus)
        self._cache: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        # Declaration order within a file: by end position, as accessibility uses; later first,
        # then later index (two premises ending at one position: the later-listed one first).
        # Sorted once here, so a new query file only orders its files, not every premise.
        n = len(corpus)
        self._end_key = corpus._end_key
        latest_first = np.lexsort((-np.arange(n), -self._end_key))
        self._by_file = latest_first[np.argsort(corpus.premise_file[latest_first], kind="stable")]
        self._file_start = np.searchsorted(corpus.premise_file[self._by_file], np.arange(len(corpus.files) + 1))
        self._latest_first = latest_first

    def file_order(self, file_idx: int) -> np.ndarray:
        """Each file's BFS discovery rank from `file_idx` (itself 0), unreachable: len(files).

        Discovery rank orders by distance first, since BFS reaches all files at distance d
        before any at d + 1."""
        n = len(self.corpus.files)
        rank = np.full(n, n, dtype=np.int64)
        rank[file_idx] = 0
        seen, queue = 1, deque([file_idx])
        while queue:
            f = queue.popleft()
            for g in self.corpus.imports[f]:
                if rank[g] == n:
                    rank[g] = seen
                    seen += 1
                    queue.append(g)
        return rank

    def order(self, ctx: Context | None) -> tuple[np.ndarray, np.ndarray]:
        """(premise indices in locality order, each premise's rank in it); corpus order
        without a file to be local to (no context, or only imports)."""
        n = len(self.corpus)
        if not isinstance(ctx, TheoremContext):
            ident = np.arange(n, dtype=np.int32)
            return ident, ident
        f = self.corpus.file_index[ctx.file_path]
        if f in self._cache:
            self._cache.move_to_end(f)
            return self._cache[f]
        rank = self.file_order(f)
        n_files = len(self.corpus.files)
        reached = np.flatnonzero(rank < n_files)
        start = self._file_start
        # Reached files in BFS order, each file's premises latest first; then the premises of
        # files never reached, all tied on file rank, so latest first across them.
        blocks = [self._by_file[start[g]: start[g + 1]] for g in reached[np.argsort(rank[reached])]]
        unreached = (rank == n_files)[self.corpus.premise_file[self._latest_first]]
        order = np.concatenate(blocks + [self._latest_first[unreached]]).astype(np.int32)
        ranks = np.empty(n, dtype=np.int32)
        ranks[order] = np.arange(n, dtype=np.int32)
        self._cache[f] = order, ranks
        if len(self._cache) > self.CACHED_FILES:
            self._cache.popitem(last=False)
        return order, ranks

    def locality_scores(self, ctx: Context | None) -> np.ndarray:
        """-rank of every premise in locality order (0 is best)."""
        return -self.order(ctx)[1].astype(np.float64)

    def tie_breaker(self, ranks: np.ndarray) -> np.ndarray:
        """Locality's -rank mapped into (0, LOCALITY_FILL]: below any count or vote of 1 or more, so it
        only orders premises that nothing else tells apart."""
        n = len(self.corpus)
        return (n - ranks.astype(np.float64)) / (n + 1)

    def first(self, ctx: Context | None, k: int, exclude: np.ndarray | None = None) -> np.ndarray:
        """The first k premises in locality order that `ctx` can access and `exclude` does
        not hold. Read in growing chunks from the front of the order: the k wanted almost
        always lie there, so a query does not pass over the whole corpus."""
        order, _ = self.order(ctx)
        mask = None if ctx is None else ctx.accessible(self.corpus)
        found: list[np.ndarray] = []
        need, lo, chunk = k, 0, max(4 * k, 1024)
        while need > 0 and lo < len(order):
            part = order[lo: lo + chunk]
            if mask is not None:
                part = part[mask[part]]
            if exclude is not None and exclude.size:
                part = part[~np.isin(part, exclude)]
            found.append(part[:need])
            need -= len(found[-1])
            lo, chunk = lo + chunk, 2 * chunk
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int32)

    def ranked_after(self, ctx: Context | None, k: int, boosted: np.ndarray,
                     boosted_scores: np.ndarray) -> list[RankedPremise]:
        """`boosted` premises (scores above 1, already best first) that `ctx` can access, then
        the rest in locality order scored by `tie_breaker`: the same list as `top_k` over the
        whole corpus scored so, without scoring the whole corpus."""
        if ctx is not None and boosted.size:
            keep = ctx.accessible(self.corpus)[boosted]
            boosted, boosted_scores = boosted[keep], boosted_scores[keep]
        boosted, boosted_scores = boosted[:k], boosted_scores[:k]
        rest = self.first(ctx, k - len(boosted), exclude=boosted)
        rest_scores = self.tie_breaker(self.order(ctx)[1][rest])
        premises = self.corpus.premises
        return ([RankedPremise(int(i), premises[i], float(s)) for i, s in zip(boosted, boosted_scores)]
                + [RankedPremise(int(i), premises[i], float(s)) for i, s in zip(rest, rest_scores)])

    def context_scores(self, state: str, ctx: Context | None) -> np.ndarray:
        return self.locality_scores(ctx)

    def file_free(self, hits: list[RankedPremise]) -> list[RankedPremise]:
        return []  # no file, no locality: the corpus's own order is no evidence

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        if len(states) != len(contexts):
            raise ValueError(f"{len(states)} states but {len(contexts)} contexts")
        out = []
        for ctx in contexts:
            ids = self.first(ctx, k)
            ranks = self.order(ctx)[1][ids]
            out.append([RankedPremise(int(i), self.corpus.premises[i], -float(r)) for i, r in zip(ids, ranks)])
        return out


def usage_counts(theorems: Iterable[Theorem], corpus: Corpus) -> dict[str, dict[int, int]]:
    """Per file, how many traced tactics of its theorems used each premise (corpus index).

    Callers pass training theorems only: counting the evaluated split's proofs would hand
    the baseline the answers."""
    counts: dict[str, dict[int, int]] = {}
    for thm in theorems:
        per_file = counts.setdefault(thm.file_path, {})
        for tac in thm.traced_tactics:
            for i in gold_indices(tac, corpus):
                per_file[i] = per_file.get(i, 0) + 1
    return counts


class UsageRetriever(ContextRetriever):
    """Premises by their use count in the training proofs of the query's file; ties and
    never-used premises in locality order."""

    name = "usage"

    def __init__(self, corpus: Corpus, training_theorems: Iterable[Theorem],
                 locality: LocalityRetriever | None = None) -> None:
        super().__init__(corpus)
        self.locality = locality or LocalityRetriever(corpus)  # shared within a fusion
        self.counts = {path: (np.fromiter(c.keys(), dtype=np.int64, count=len(c)),
                              np.fromiter(c.values(), dtype=np.float64, count=len(c)))
                       for path, c in usage_counts(training_theorems, corpus).items()}

    def file_free(self, hits: list[RankedPremise]) -> list[RankedPremise]:
        return evidence(hits)

    def used(self, ctx: Context | None) -> tuple[np.ndarray, np.ndarray]:
        """(premises the file's training proofs used, their counts), unordered."""
        if isinstance(ctx, TheoremContext) and ctx.file_path in self.counts:
            return self.counts[ctx.file_path]
        return np.zeros(0, dtype=np.int64), np.zeros(0)

    def context_scores(self, state: str, ctx: Context | None) -> np.ndarray:
        # Locality only breaks ties between equal counts.
        scores = self.locality.tie_breaker(self.locality.order(ctx)[1])
        idx, n = self.used(ctx)
        scores[idx] += n
        return scores

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        """As `context_scores` would rank them, touching only the used premises and the
        front of the locality order."""
        if len(states) != len(contexts):
            raise ValueError(f"{len(states)} states but {len(contexts)} contexts")
        out = []
        for ctx in contexts:
            idx, n = self.used(ctx)
            scores = n + self.locality.tie_breaker(self.locality.order(ctx)[1][idx])
            best = np.lexsort((idx, -scores))
            out.append(self.locality.ranked_after(ctx, k, idx[best], scores[best]))
        return out


def query_seed(seed: int, state: str, ctx: Context | None) -> int:
    """A stable per-query seed (Python's hash() is salted per process, crc32 is not)."""
    if isinstance(ctx, TheoremContext):
        where = f"{ctx.file_path}:{ctx.position[0]}:{ctx.position[1]}"
    else:
        where = "" if ctx is None else ",".join(ctx.files)
    return zlib.crc32(f"{seed}\0{where}\0{state}".encode())


class RandomRetriever(ContextRetriever):
    """A uniformly random order of the accessible premises, fixed by `seed` and the query."""

    name = "random"

    def __init__(self, corpus: Corpus, seed: int = 0) -> None:
        super().__init__(corpus)
        self.seed = seed

    def context_scores(self, state: str, ctx: Context | None) -> np.ndarray:
        return np.random.default_rng(query_seed(self.seed, state, ctx)).random(len(self.corpus))
