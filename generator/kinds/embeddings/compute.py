"""The numbers of an embeddings lab, from the stored vectors: the cosine matrix, nearest
neighbours, a PCA map and how often it misleads, searches, hubs, anisotropy; and the claims."""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from generator.kinds import Diagnostic
from generator.kinds.embeddings import chance
from generator.kinds.embeddings.reading import Claim, EmbeddingsSpec

OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


@dataclass(frozen=True, eq=False)
class Numbers:
    ids: list[str]
    groups: list[str]
    E: np.ndarray  # [n, d] item vectors, unit length
    Q: np.ndarray  # [m, d] query vectors
    C: np.ndarray  # [n, d] items' [CLS] vectors, unit length
    S: np.ndarray  # [n, n] cosines between items
    QS: np.ndarray  # [m, n] cosines from each query to each item
    map2: np.ndarray  # [n, 2] PCA coordinates
    explained: tuple[float, float]  # share of variance of each axis
    query_ids: list[str]

    def ranked(self, row: np.ndarray, skip: int | None = None) -> list[int]:
        """Item indexes by falling cosine; ties: the earlier item first."""
        keys = [(-float(row[j]), j) for j in range(len(row)) if j != skip]
        return [j for _, j in sorted(keys)]

    def neighbours(self, i: int) -> list[int]:
        return self.ranked(self.S[i], skip=i)

    def row(self, ident: str) -> tuple[np.ndarray, int | None]:
        """Cosines from item or query ``ident`` to every item, and its own index if it is an item."""
        if ident in self.ids:
            i = self.ids.index(ident)
            return self.S[i], i
        return self.QS[self.query_ids.index(ident)], None

    def k_occurrence(self, k: int) -> np.ndarray:  # [n]: how many items have j among their top k
        counts = np.zeros(len(self.ids), dtype=int)
        for i in range(len(self.ids)):
            for j in self.neighbours(i)[:k]:
                counts[j] += 1
        return counts

    def cross_mean(self, V: np.ndarray) -> float | None:
        n = len(self.ids)
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if self.groups[i] != self.groups[j]]
        if not pairs:
            return None
        return float(np.mean([V[i] @ V[j] for i, j in pairs]))

    def map_disagreements(self) -> list[tuple[int, int, int]]:
        """Items whose nearest neighbour on the map is not their nearest in full dimension:
        (item, its map neighbour, that neighbour's rank in full dimension, 1 = nearest)."""
        found = []
        d2 = ((self.map2[:, None, :] - self.map2[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(d2, np.inf)
        for i in range(len(self.ids)):
            on_map = int(np.argmin(d2[i]))
            rank = self.neighbours(i).index(on_map) + 1
            if rank != 1:
                found.append((i, on_map, rank))
        return found


# Below this the items' vectors are one point (float rounding of the same stored numbers): the
# variance shares of a map would be 0 / 0.
MIN_SPREAD = 1e-9


def numbers(spec: EmbeddingsSpec, stored: dict) -> Numbers | None:
    """The lab's numbers from its stored vectors (each of the store's dimension, at least 2); None
    when the items do not spread at all (every vector the same), which leaves a map nothing to show."""
    E = np.array([stored[e.text][0] for e in spec.items])
    C = np.array([stored[e.text][1] for e in spec.items])
    Q = np.array([stored[q.text][0] for q in spec.queries]).reshape(len(spec.queries), E.shape[1])
    X = E - E.mean(axis=0)
    _, s, vt = np.linalg.svd(X, full_matrices=False)
    if len(s) < 2 or (s ** 2).sum() < MIN_SPREAD:
        return None
    # A component's sign is arbitrary: fix it so the largest coordinate is positive, for a stable map.
    for k in range(2):
        if (X @ vt[k])[np.argmax(np.abs(X @ vt[k]))] < 0:
            vt[k] = -vt[k]
    share = s ** 2 / (s ** 2).sum()
    return Numbers([e.id for e in spec.items], [e.group for e in spec.items], E, Q, C, E @ E.T, Q @ E.T,
                   X @ vt[:2].T, (float(share[0]), float(share[1])), [q.id for q in spec.queries])


def check_claim(claim: Claim, nums: Numbers) -> str | None:
    """None if the claim holds, else what was found instead."""
    a = claim.args
    if claim.kind == "closer":
        b, c = _cosine(nums, a[0], a[1]), _cosine(nums, a[0], a[2])
        return None if b > c else f"cosine to {a[1]!r} is {b:.4f}, to {a[2]!r} {c:.4f}"
    if claim.kind == "finds":
        row, own = nums.row(a[0])
        top = [nums.ids[j] for j in nums.ranked(row, skip=own)]
        k = int(a[2])
        return None if a[1] in top[:k] else f"its top {k} are {', '.join(top[:k])}; {a[1]!r} is number {top.index(a[1]) + 1}"
    if claim.kind == "cosine":
        got = _cosine(nums, a[0], a[1])
        return None if OPS[a[2]](got, float(a[3])) else f"the cosine is {got:.4f}"
    if claim.kind == "hub":
        k, at_least = int(a[1]), int(a[2])
        got = int(nums.k_occurrence(k)[nums.ids.index(a[0])])
        if got < at_least:
            return f"it is in the top {k} of {got} items"
        hubs, _ = chance.draws(tuple(nums.groups), nums.E.shape[1], k)
        by_chance = chance.share(hubs, lambda top: top >= at_least)
        if by_chance >= chance.RARE:
            return (f"{_random(nums)} put some point in the top {k} of at least {at_least} others in "
                    f"{100 * by_chance:.1f}% of {chance.TRIALS} draws, so it shows no hubness; claim a count they "
                    f"reach in under {100 * chance.RARE:g}% of draws (at least {chance.least_rare_count(hubs)})")
        return None
    if claim.kind in ("mean", "cls-mean"):
        got = nums.cross_mean(nums.E if claim.kind == "mean" else nums.C)
        if got is None:
            return "every item is in the same group"
        if not OPS[a[0]](got, float(a[1])):
            return f"the mean is {got:.4f}"
        # Random vectors sit near orthogonal: a mean they reach (above or below) says nothing of the model.
        _, means = chance.draws(tuple(nums.groups), nums.E.shape[1], 1)
        by_chance = chance.share(means, lambda m: OPS[a[0]](m, float(a[1])))
        if by_chance >= chance.RARE:
            return (f"{_random(nums)} give a mean {a[0]} {a[1]} in {100 * by_chance:.1f}% of {chance.TRIALS} "
                    f"draws, so it shows nothing of the model")
        return None
    if claim.kind == "explained":
        got = 100 * sum(nums.explained)
        return None if OPS[a[0]](got, float(a[1])) else f"the two axes explain {got:.2f}%"
    if claim.kind == "disagrees":
        got = 100 * len(nums.map_disagreements()) / len(nums.ids)
        return None if OPS[a[0]](got, float(a[1])) else f"it disagrees for {got:.2f}% of items"
    raise AssertionError(claim.kind)


def _random(nums: Numbers) -> str:
    return f"it would hold for random points: {len(nums.ids)} random unit vectors in {nums.E.shape[1]} dimensions"


def _cosine(nums: Numbers, x: str, y: str) -> float:
    vec = {**dict(zip(nums.ids, nums.E)), **dict(zip(nums.query_ids, nums.Q))}
    return float(vec[x] @ vec[y])


def check_claims(spec: EmbeddingsSpec, nums: Numbers) -> list[Diagnostic]:
    problems = []
    for claim in spec.claims:
        found = check_claim(claim, nums)
        if found is not None:
            d = claim.at
            problems.append(Diagnostic(d.path, d.line, d.column, f"claim {claim.text!r} fails: {found}", d.source_line))
    return problems


def r4(x: float) -> float:
    return round(float(x), 4)


def payload(spec: EmbeddingsSpec, nums: Numbers) -> dict:
    n, k = len(nums.ids), spec.neighbours
    order = sorted(range(n), key=lambda i: (_group_rank(nums.groups, i), i))  # the matrix, by group
    items = [{"id": e.id, "text": e.text, "group": e.group,
              "xy": [r4(v) for v in nums.map2[i]],
              "nn": [[j, r4(nums.S[i, j])] for j in nums.neighbours(i)[:k]]}
             for i, e in enumerate(spec.items)]
    queries = [{"id": q.id, "text": q.text,
                "ranked": [[j, r4(nums.QS[m, j])] for j in nums.ranked(nums.QS[m])]}
               for m, q in enumerate(spec.queries)]
    off = nums.map_disagreements()
    worst = max(off, key=lambda t: (t[2], -t[0])) if off else None
    occ = nums.k_occurrence(3) if n > 3 else np.zeros(n, dtype=int)
    hub = int(np.argmax(occ))
    hubs, _ = chance.draws(tuple(nums.groups), int(nums.E.shape[1]), 3)
    out = {
        "items": items, "queries": queries, "order": order,
        "S": [[r4(x) for x in row] for row in nums.S],
        "explained": [r4(x) for x in nums.explained],
        "disagree": {"count": len(off), "of": n,
                     "worst": None if worst is None else {"item": worst[0], "map": worst[1], "rank": worst[2],
                                                          "cos": r4(nums.S[worst[0], worst[1]])}},
        # the most-shared neighbour, beside what as many random points give: hubness needs far more points
        "hub": {"item": hub, "count": int(occ[hub]), "k": 3, "chance": round(float(hubs.mean()), 1),
                "rare": chance.least_rare_count(hubs), "trials": chance.TRIALS},
        "crossMean": None if nums.cross_mean(nums.E) is None else r4(nums.cross_mean(nums.E)),
        "unrelated": unrelated_band(nums),
        "cls": cls_offset(nums),
        "dim": int(nums.E.shape[1]),
        # for live search only: page() moves them into a script loaded with the model
        "vectors": [[round(float(x), 6) for x in v] for v in nums.E],
    }
    if spec.rag_query is not None:
        m = nums.query_ids.index(spec.rag_query)
        out["rag"] = {"query": m, "k": spec.rag_k}
    return out


UNRELATED = 0.95  # the share of pairs from different groups the band under the neighbour bars holds


def unrelated_band(nums: Numbers) -> dict | None:
    """The cosine below which UNRELATED of the pairs of items from different groups fall: a
    neighbour there is no closer than sentences about other things. None without two groups."""
    i, j = chance.cross_pairs(tuple(nums.groups))
    if not len(i):
        return None
    return {"below": r4(np.quantile(nums.S[i, j], UNRELATED)), "share": UNRELATED}


def cls_offset(nums: Numbers) -> dict | None:
    """Why the raw [CLS] vectors look alike: their mean cosine across groups, the coordinate that
    dominates their shared mean, its average value and what it alone adds to a pair's cosine, and
    the mean cosine once the shared mean is taken away. None when every item is in one group."""
    mean = nums.cross_mean(nums.C)
    if mean is None:
        return None
    top = int(np.argmax(np.abs(nums.C.mean(axis=0))))
    centred = nums.C - nums.C.mean(axis=0)
    lengths = np.linalg.norm(centred, axis=1, keepdims=True)
    centred = centred / np.where(lengths > 0, lengths, 1)
    one = nums.C[:, [top]]
    return {"mean": r4(mean), "dim": top, "value": r4(nums.C[:, top].mean()), "adds": r4(nums.cross_mean(one)),
            "centred": r4(nums.cross_mean(centred))}


def _group_rank(groups: list[str], i: int) -> int:
    return list(dict.fromkeys(groups)).index(groups[i])
