"""The head finder and the learned-head matching: what a lab's real-heads entries say about which
real heads do what (computed by the build from :mod:`.realmodel`'s entries, or stored by
``labs heads``, :mod:`.headreport`).

The head finder (:func:`find_heads`) splits the sentences that carry relations into two halves,
fixed in advance: every other one in the order they are written (widget sentences first, then
the finder's own). For each relation type it picks the head with the best hit rate on the
first half (ties broken by the mean weight on the target; how many heads shared the best hit
rate is reported), then scores that head — and two baselines chosen on the same half, the best
fixed offset and "the nearest word with the target's tag" — on the second, held-out half. It
says a head *beats the baselines* only when, on the held-out pairs, it hits at least
:data:`BEATS_MIN_HIT` of them and wins more pairs against each baseline than it loses, by
a one-sided sign test at p < :data:`BEATS_MAX_P`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from generator.kinds import ContentError, Diagnostic
from generator.kinds.attention import teaching

BEATS_MIN_HIT = 0.6  # a head said to beat its baselines finds at least this share of held-out pairs…
BEATS_MAX_P = 0.05  # …and wins against each baseline by a one-sided sign test below this


def model_sentences(widget) -> list[Any]:
    """The widget sentences a BERT encoder can read: all but cross-attention pairs."""
    return [s for s in widget.sentences if s.kind != "cross"]


def sentence_text(sentence) -> str:
    return " ".join(sentence.queries)


def align_words(teaching_words: tuple[str, ...], model_words: list[str], special: list[bool]) -> list[int | None]:
    """For each teaching word, the index of the model word written the same way (in order), or None."""
    out: list[int | None] = []
    j = 0
    for word in teaching_words:
        k = j
        while k < len(model_words) and (special[k] or model_words[k] != word):
            k += 1
        if k < len(model_words):
            out.append(k)
            j = k + 1
        else:
            out.append(None)
    return out


class Aligned(dict):
    """Sentence id -> :func:`align_words` of its words with the model's, for the sentences with an entry;
    worked out once for the finder and the learned matches."""

    def __init__(self, sentences, entries: dict[str, dict]):
        super().__init__((s.id, align_words(s.queries, entries[s.id]["words"], entries[s.id]["special"]))
                         for s in sentences if s.id in entries)


def learned_matches(widget, finder_sentences, entries: dict[str, dict], aligned: dict | None = None) -> dict[str, Any]:
    """For each designed head of the widget, the real head whose rows agree best with its rows
    (:mod:`generator.kinds.attention.agreement`), over the widget's self-attention sentences and the
    finder's sentences (their words aligned by :func:`align_words`; a causal sentence's designed rows
    cannot see ahead and a BERT encoder's can, so it is left out). Also, per widget sentence, the
    model word that the spotlight opens for each of its words (the first piece of a split word).
    JSON-ready: ``{"heads": {head_id: {layer, head, agreement, words, sentences, next}}, "sentences":
    [...], "words": {sentence id: [model word index, ...]}}``. ``aligned``: :class:`Aligned` of
    these sentences, when already worked out."""
    from generator.kinds.attention.agreement import agreement_sums

    used = [s for s in [*model_sentences(widget), *finder_sentences] if s.kind == "self" and s.id in entries]
    if aligned is None:
        aligned = Aligned([*model_sentences(widget), *finder_sentences], entries)
    head_ids = tuple(widget.head_ids)
    totals = 0  # [D, L, H] each head's agreements, added row by row and sentence by sentence
    counts = np.zeros(len(head_ids), dtype=np.int64)  # [D] rows counted
    sentences = np.zeros(len(head_ids), dtype=np.int64)  # [D] sentences with a row counted
    for s in used:
        align = np.array([-1 if a is None else a for a in aligned[s.id]])
        # The designed heads' ÷√d weights [D, n, n], computed for each lab and not remembered across
        # labs: a memo by sentence would make a benchmark whose labs share sentences cheaper than a
        # real site, whose labs do not.
        designed = teaching.self_weights(tuple(s.query_words), head_ids)
        sums, rows = agreement_sums(designed, np.asarray(entries[s.id]["attention"]), align)
        totals = totals + sums
        counts += rows
        sentences += rows > 0
    heads = {}
    for hid, total, count, sentence_count in zip(head_ids, totals if used else (), counts.tolist(), sentences.tolist()):
        if not count:
            continue
        mean = total / count  # [L, H]
        order = np.argsort(-mean, axis=None, kind="stable")  # ties: the lower layer, then head
        (layer, head), (layer2, head2) = (np.unravel_index(int(i), mean.shape) for i in order[:2])
        heads[hid] = {"layer": int(layer), "head": int(head), "agreement": round(float(mean[layer, head]), 4),
                      "words": count, "sentences": sentence_count,
                      "next": {"layer": int(layer2), "head": int(head2), "agreement": round(float(mean[layer2, head2]), 4)}}
    words = {}
    for s in model_sentences(widget):
        if s.id not in entries:
            continue
        at: list[int] = []
        for a in aligned[s.id]:  # a split word: the piece after the last word
            at.append(a if a is not None else (at[-1] + 1 if at else 1))
        words[s.id] = at
    return {"heads": heads, "sentences": [s.id for s in used], "words": words}


def find_heads(spec, widget, entries: dict[str, dict], aligned: dict | None = None) -> list[dict]:
    """Per relation type: the head picked on one half of the sentences, scored on the other half
    against two baselines (see the module docstring). JSON-ready, sorted by relation name.
    ``aligned``: :class:`Aligned` of the sentences, when already worked out."""
    from generator.kinds.attention import realheads

    order = [s for s in [*model_sentences(widget), *spec.finder_sentences] if s.id in entries]
    if aligned is None:
        aligned = Aligned(order, entries)
    relations: dict[str, list[Any]] = {}
    for r in spec.relations:
        relations.setdefault(r.sentence_id, []).append(r)
    with_pairs = [s for s in order if s.id in relations]
    shown = {s.id for s in model_sentences(widget)}
    pairs: dict[str, list[dict]] = {}
    groups = []  # per sentence with pairs: what realheads.pair_outcomes_of needs
    offset_hits: list[list[bool]] = []  # per pair, in the order of ``groups``
    problems = []
    for half, s in enumerate(with_pairs):  # every other sentence: 0 picks the head, 1 is held out
        entry = entries[s.id]
        align = aligned[s.id]
        tags: list[str | None] = [None] * len(entry["words"])
        for word, at in zip(s.query_words, align):
            if at is not None:
                tags[at] = word.role
        ok = []
        for r in relations[s.id]:
            q, k = align[r.query], align[r.key]
            if q is None or k is None:
                missing = s.queries[r.query if q is None else r.key]
                problems.append(Diagnostic(*r.at, f"the model splits {missing!r} into pieces of other words; "
                                           "relate whole words only"))
                continue
            ok.append((r, q, k))
        if not ok:
            continue
        qs, ks = [q for _, q, _ in ok], [k for _, _, k in ok]
        groups.append((entry["attention"], qs, ks, entry["special"]))
        offsets = realheads.offset_guess_lists(qs, entry["special"])  # [O][R]
        for i, (r, q, k) in enumerate(ok):
            pairs.setdefault(r.kind, []).append({
                "at": len(offset_hits), "sentence": s.id, "half": half % 2, "shown": s.id in shown, "q": q, "k": k,
                "tags": tags, "key_tag": tags[k], "words": entry["words"]})
            offset_hits.append([guess[i] == k for guess in offsets])
    if problems:
        raise ContentError(problems)
    if not pairs:
        return []
    hits, weights = realheads.pair_outcomes_of(groups)  # [L, H, P]
    return [_relation_report(kind, pairs[kind], (hits, weights, offset_hits)) for kind in sorted(pairs)]


def _share(x: np.ndarray) -> float:
    return round(float(x.mean()), 4) if x.size else 0.0


def _relation_report(kind: str, pairs: list[dict], outcomes: tuple[np.ndarray, np.ndarray, list]) -> dict:
    """One relation type's report; ``outcomes``: every pair's hits and weights [L, H, P] and the
    offset rules' hits (a list per pair), a pair's place at its ``"at"``. Shares of hits are
    counts over sizes; the mean weights are NumPy's means, as :func:`_share` takes them."""
    from generator.kinds.attention import realheads

    pick = [p for p in pairs if p["half"] == 0]
    held = [p for p in pairs if p["half"] == 1]
    report: dict[str, Any] = {
        "relation": kind, "count": len(pairs), "sentences": len({p["sentence"] for p in pairs}),
        "pick": {"count": len(pick), "sentences": len({p["sentence"] for p in pick})},
        "held": {"count": len(held), "sentences": len({p["sentence"] for p in held})},
    }
    if not pick or not held:
        return {**report, "head": None, "beats_baseline": False}
    hits, weights, offset_hits = outcomes
    pick_at, held_at = [p["at"] for p in pick], [p["at"] for p in held]
    pick_hits = hits[:, :, pick_at].sum(axis=-1)  # [L, H]
    tied = pick_hits == pick_hits.max()
    pick_weight = np.ascontiguousarray(weights[:, :, pick_at]).mean(axis=-1)  # summed pairwise along each [R]
    layer, head = np.unravel_index(int(np.where(tied, pick_weight, -np.inf).argmax()), tied.shape)
    held_hits_all = hits[:, :, held_at].sum(axis=-1)  # [L, H]
    best_held = np.unravel_index(int(held_hits_all.argmax()), tied.shape)
    held_hits = hits[layer, head, held_at].tolist()
    # Baselines, each chosen on the pick half like the head.
    offset_pick = [sum(offset_hits[i][o] for i in pick_at) for o in range(len(realheads.BASELINE_OFFSETS))]
    o = offset_pick.index(max(offset_pick))
    offset_held = [offset_hits[i][o] for i in held_at]
    wanted = sorted({p["key_tag"] for p in pick if p["key_tag"]})
    wanted_set = set(wanted)
    tag_held = [realheads.nearest_tag_guess(p["q"], p["tags"], wanted_set) == p["k"] for p in held]
    versus = []
    for name, base in (("offset", offset_held), ("tag", tag_held)):
        wins = sum(h and not b for h, b in zip(held_hits, base))
        losses = sum(b and not h for h, b in zip(held_hits, base))
        # The test sees only the pairs where head and rule disagree: the fewest wins among them it
        # would accept says how weak it is at this size (None: too few pairs for any to pass).
        needed = next((w for w in range(wins + losses + 1)
                       if realheads.sign_test_p(w, wins + losses - w) < BEATS_MAX_P), None)
        versus.append({"baseline": name, "wins": wins, "losses": losses,
                       "p": round(realheads.sign_test_p(wins, losses), 4), "needed": needed})
    beats = bool(sum(held_hits) / len(held) >= BEATS_MIN_HIT and all(v["p"] < BEATS_MAX_P for v in versus))
    examples = {}
    chosen = hits[layer, head]
    for label, want in (("works", True), ("fails", False)):
        p = next((p for p in pairs if p["shown"] and bool(chosen[p["at"]]) == want), None)
        if p is not None:  # a widget sentence, so the spotlight can open it
            examples[label] = {"sentence": p["sentence"], "q": p["q"], "word": p["words"][p["q"]],
                               "target": p["words"][p["k"]]}
    return {
        **report,
        "head": {"layer": int(layer), "head": int(head), "ties": int(tied.sum()),
                 "pick_hit": _rate(int(pick_hits[layer, head]), len(pick)), "pick_weight": _share(pick_weight[layer, head]),
                 "held_hit": _rate(sum(held_hits), len(held)), "held_weight": _share(weights[layer, head, held_at])},
        "best_held": {"layer": int(best_held[0]), "head": int(best_held[1]),
                      "held_hit": _rate(int(held_hits_all[best_held]), len(held))},
        "baselines": [
            {"baseline": "offset", "offset": realheads.BASELINE_OFFSETS[o], "pick_hit": _rate(offset_pick[o], len(pick)),
             "held_hit": _rate(sum(offset_held), len(held))},
            {"baseline": "tag", "tags": wanted, "held_hit": _rate(sum(tag_held), len(held))},
        ],
        "versus": versus,
        "beats_baseline": beats,
        "examples": examples,
    }


def _rate(hits: int, total: int) -> float:
    """:func:`_share` of ``total`` yes-or-no outcomes, ``hits`` of them yes (the same number)."""
    return round(hits / total, 4) if total else 0.0
