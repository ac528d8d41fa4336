"""The spotlight's numbers: :func:`compute_widget` turns a :class:`~.reading.WidgetSpec` (its
``widget:`` mapping of lab.yaml, read by :mod:`.reading`) into the JSON-ready payload of
``docs/spotlight-data.md``; :func:`check_claims` checks the author's claims against it, and
:func:`top_keys` answers the word question.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np

from generator.kinds.attention import teaching
from generator.kinds.attention.reading import WidgetSpec
from generator.kinds.attention.realheads import largest_remainder_array
from generator.kinds.attention.numbers import rounded_lists
from generator.kinds import Diagnostic

PAYLOAD_VERSION = 1


def percentages(weights: np.ndarray, mask: np.ndarray, total: int = 100) -> np.ndarray:  # [n_q, n_k], bool -> int
    """Integer shares of ``total`` that sum to exactly ``total`` per row (a row with no visible key:
    0); masked entries stay 0 — :func:`~generator.kinds.attention.realheads.largest_remainder_array`."""
    return largest_remainder_array(np.where(mask, weights, 0.0), total)


def _round_all(numbers: list[dict], vec: int, wt: int) -> None:
    """Replace every ``(array, decimals, mask)`` value of the dicts in ``numbers`` with
    :func:`~generator.kinds.attention.numbers.rounded_list` of it, in place, one pass per precision."""
    wanted = [(d, key, value) for d in numbers for key, value in d.items() if isinstance(value, tuple)]
    for decimals in dict.fromkeys((vec, wt)):
        todo = [(d, key, value) for d, key, value in wanted if value[1] == decimals]
        for (d, key, _), rounded in zip(todo, rounded_lists([(a, mask) for _, _, (a, _, mask) in todo], decimals), strict=True):
            d[key] = rounded


def _head_payload(result: teaching.HeadResult, o_dims: Sequence[str], vec: int, wt: int,
                  shares: dict[str, np.ndarray], causal: bool) -> dict[str, Any]:
    """A head's arrays, each as ``(array, decimals, mask)`` to be rounded by :func:`_round_all`
    (the mask only where it hides anything: a causal sentence's)."""
    mask = result.mask if causal else None
    return {
        "q": (result.q, vec, None),
        "k": (result.k, vec, None),
        "v": (result.v, vec, None),
        "scores": (result.scores, vec, mask),
        "bias": None if result.bias is None else (result.bias, vec, None),
        "scaled": (np.where(result.mask, result.scaled, 0.0), vec, mask),
        # Rounded so that each stored row still sums to exactly 1, like the percentages.
        "weights": (shares["weights"] / 10**wt, wt, None),
        "weights_unscaled": (shares["weights_unscaled"] / 10**wt, wt, None),
        "pct": (shares["pct"], wt, None),  # whole numbers: rounding keeps them as they are
        "pct_unscaled": (shares["pct_unscaled"], wt, None),
        "out": (result.out, vec, None),
        # out @ W_O in the residual dimensions this head writes (its W_O block is zero elsewhere).
        "o": (result.written[:, [_RESIDUAL_AT[d] for d in o_dims]], vec, None),
    }


def _shares(sentences: Sequence[Mapping[str, teaching.HeadResult]], head_ids: Sequence[str], wt: int) -> list[dict]:
    """Each head's weights (÷√d and not) as integer shares of 100 and of 10**wt, rounded per row
    (:func:`percentages`), for every sentence's heads: ``[{head_id: {"pct": …, "pct_unscaled": …,
    "weights": …, "weights_unscaled": …}}]``. The rows of all sentences with as many keys are
    rounded in one call (the rounding is row by row)."""
    n = len(head_ids)
    stacks = [np.stack([r[h].weights for h in head_ids] + [r[h].weights_unscaled for h in head_ids])
              for r in sentences]  # [2 heads, n_q, n_k] each
    masks = [np.broadcast_to(r[head_ids[0]].mask, stack.shape) for r, stack in zip(sentences, stacks, strict=True)]
    pct: list[np.ndarray] = [np.empty(0)] * len(stacks)
    fine: list[np.ndarray] = [np.empty(0)] * len(stacks)
    by_keys: dict[int, list[int]] = {}
    for i, stack in enumerate(stacks):
        by_keys.setdefault(stack.shape[-1], []).append(i)
    for n_k, same in by_keys.items():
        rows = np.concatenate([stacks[i].reshape(-1, n_k) for i in same])
        mask = np.concatenate([masks[i].reshape(-1, n_k) for i in same])
        ends = np.cumsum([stacks[i].size // n_k for i in same])[:-1]
        for out, total in ((pct, 100), (fine, 10**wt)):
            for i, part in zip(same, np.split(percentages(rows, mask, total), ends), strict=True):
                out[i] = part.reshape(stacks[i].shape)
    return [{hid: {"pct": p[i], "pct_unscaled": p[n + i], "weights": f[i], "weights_unscaled": f[n + i]}
             for i, hid in enumerate(head_ids)} for p, f in zip(pct, fine, strict=True)]


_RESIDUAL_AT = {d: i for i, d in enumerate(teaching.RESIDUAL_DIMS)}


def compute_widget(spec: WidgetSpec) -> dict[str, Any]:
    """The JSON-ready payload described in ``docs/spotlight-data.md``; deterministic."""
    sentences = []
    numbers: list[dict] = []  # the dicts whose arrays are rounded at the end, all at once
    vec, wt = spec.vector_decimals, spec.weight_decimals
    computed = [teaching.compute(s.query_words, s.key_words if s.kind == "cross" else None, kind=s.kind,
                                 heads=spec.head_ids) for s in spec.sentences]
    every_share = _shares(computed, spec.head_ids, spec.weight_decimals)
    for s, results, shares in zip(spec.sentences, computed, every_share, strict=True):
        before, after = teaching.residual(s.query_words, results)
        n_embed = len(teaching.EMBEDDING_DIMS)
        sentences.append({
            "id": s.id,
            "label": s.label,
            "kind": s.kind,
            "note": s.note,
            "queries": list(s.queries),
            "keys": list(s.keys),
            "key_label": s.key_label,
            "query": s.query,
            "roles_q": [w.role for w in s.query_words],
            "roles_k": [w.role for w in s.key_words],
            # The query words' residual vectors around the layer: the embedding before (the heads'
            # slots are 0 then), and embedding + Σ_h out_h·W_O^h after, over RESIDUAL_DIMS.
            "residual": {"before": (before[:, :n_embed], vec, None), "after": (after, vec, None)},
            "heads": {hid: _head_payload(results[hid], teaching.head(hid).o_dims, vec, wt, shares[hid], s.kind == "causal")
                      for hid in spec.head_ids},
        })
        numbers += [sentences[-1]["residual"], *sentences[-1]["heads"].values()]
    _round_all(numbers, vec, wt)
    heads = []
    for hid in spec.head_ids:
        h = teaching.head(hid)
        heads.append({"id": h.id, "name": h.name, "description": h.description, "q_dims": list(h.q_dims),
                      "k_dims": list(h.k_dims), "v_dims": list(h.v_dims), "o_dims": list(h.o_dims), "bias": h.bias, "cross": h.cross})
    return {
        "version": PAYLOAD_VERSION,
        "precision": {"vectors": spec.vector_decimals, "weights": spec.weight_decimals},
        "heads": heads,
        "residual_dims": list(teaching.RESIDUAL_DIMS),
        "default": {"sentence": spec.default_sentence, "head": spec.default_head, "query": spec.default_query},
        "sentences": sentences,
        "real": None,
    }


def _sentence(payload: dict, sentence_id: str) -> dict:
    return next(s for s in payload["sentences"] if s["id"] == sentence_id)


def top_keys(payload: dict, sentence_id: str, head_id: str, query_index: int, k: int = 1) -> list[int]:
    """Indexes of the ``k`` keys with the largest ÷√d weights for one query, largest first
    (ties: the earlier key first)."""
    row = np.asarray(_sentence(payload, sentence_id)["heads"][head_id]["weights"][query_index], dtype=np.float64)
    return [int(i) for i in np.argsort(-row, kind="stable")[:k]]


def check_claims(spec: WidgetSpec, payload: dict) -> list[Diagnostic]:
    """A diagnostic, at the claim, for every claim the computed weights do not bear out."""
    problems = []
    for s in spec.sentences:
        sentence = _sentence(payload, s.id)
        for claim in s.claims:
            head = sentence["heads"][claim.head]
            top = top_keys(payload, s.id, claim.head, claim.query, k=len(claim.keys))
            pct = head["pct"][claim.query]
            share = sum(head["weights"][claim.query][i] for i in claim.keys)
            query = sentence["queries"][claim.query]

            def listed(indexes: Sequence[int]) -> str:
                return ", ".join(f"{sentence['keys'][i]} ({pct[i]}%)" for i in indexes)

            if set(top) != set(claim.keys):
                which = "top key is" if len(top) == 1 else f"top-{len(top)} keys are"
                found = f"{query}'s {which} {listed(top)}"
            elif claim.min_share is not None and share < claim.min_share - 1e-9:
                found = f"{listed(claim.keys)} hold {100 * share:.1f}% together, less than {100 * claim.min_share:g}%"
            else:
                continue
            problems.append(replace(claim.at, message=f"claim {claim.text!r} fails in head {claim.head!r}: {found}"))
    return problems
