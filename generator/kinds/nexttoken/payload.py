"""What the next-token page carries: the numbers of :mod:`.compute`'s records as the page reads them.

Embedded (``#lab-data``), for the first paint: the model's numbers, every text's tokens with the
probability of each and the top alternatives at each position, each text's cross-entropy and
perplexity, the logit lens of the token the page opens on, the KV cache's steps and sizes. Beside
the page, loaded when the learner clicks a token: a text's logit lens at every position
(``lens-<id>``, a ``Labs.data`` script); and, when the attention grid comes into view, its text's
attention (``attention-<id>``, written by the kind from :func:`.compute.read_attention`'s record).

Probabilities go to the page with 4 significant digits: what it shows (a percentage, a bar) needs
no more, and they stay within 10⁻⁴ of the stored ones.
"""

from __future__ import annotations

from typing import Any

from generator.kinds.nexttoken import compute
from generator.kinds.nexttoken.claims import Numbers, cache_of, find_token, models
from generator.kinds.nexttoken.reading import NextTokenSpec


def p4(x: float) -> float:
    return float(f"{x:.4g}")


def _lens(rows: list[list]) -> list[list]:
    return [[j, p4(p), p4(t)] for j, p, t in rows]


def text_payload(text, record: dict[str, Any]) -> dict[str, Any]:
    p = record["p"]
    return {"id": text.id, "text": text.text, "note": text.note, "ids": record["ids"], "p": [p4(x) for x in p],
            "top": [[[j, p4(q)] for j, q in row] for row in record["top"]],
            "ce": round(compute.cross_entropy(p), 4), "ppl": round(compute.perplexity(p), 3),
            "least": compute.least_likely(p)}


def _tokens(records: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, str]:
    """The token table of what the page shows: the ids ``keys`` name in each record."""
    found: dict[str, str] = {}
    for record in records:
        named = set(record["ids"])
        if "top" in keys:
            named.update(j for row in record["top"] for j, _ in row)
        if "lens" in keys:
            named.update(row[0] for position in record["lens"] for row in position)
        if "new" in keys:
            named.update(j for j, _ in record["new"])
        found.update({str(j): record["text"][str(j)] for j in named})
    return dict(sorted(found.items(), key=lambda kv: int(kv[0])))


def default_position(spec: NextTokenSpec, nums: Numbers) -> tuple[int, str | None]:
    """The position the page opens on (an index into the default text's tokens, or its length: the
    guess after it), and a problem with the written ``default: token`` if there is one."""
    record = nums.texts[spec.default_text]
    if spec.default_token is None:
        return len(record["ids"]) - 1, None
    k, why = find_token(record, spec.default_token)
    return (len(record["ids"]) - 1, why) if k is None else (k, None)


def payload(spec: NextTokenSpec, nums: Numbers) -> dict[str, Any]:
    cfg = nums.config
    position, _ = default_position(spec, nums)
    first = nums.texts[spec.default_text]
    records = [nums.texts[t.id] for t in spec.texts]
    lens_rows = first["lens"][position]
    tokens = _tokens(records, ("top",))
    tokens.update({str(row[0]): first["text"][str(row[0])] for row in lens_rows})
    tokens.update(_tokens([nums.greedy], ("new",)))
    bytes_per = spec.cache.bytes
    table = [{"id": m.id, "name": m.name, "layers": m.layers, "heads": m.heads, "kv_heads": m.kv_heads,
              "head_dim": m.head_dim, "context": m.context, "source": m.source,
              "token_bytes": cache_of(m, 1, bytes_per),
              "sizes": [cache_of(m, n, bytes_per) for n in spec.cache.tokens],
              "shown": [compute.si_bytes(cache_of(m, n, bytes_per)) for n in spec.cache.tokens],
              "unshared": [cache_of(m, n, bytes_per) * m.heads // m.kv_heads for n in spec.cache.tokens]}
             for m in models(spec, cfg)]
    return {
        "config": cfg,
        "texts": [text_payload(t, nums.texts[t.id]) for t in spec.texts],
        "tok": dict(sorted(tokens.items(), key=lambda kv: int(kv[0]))),
        "start": {"text": [t.id for t in spec.texts].index(spec.default_text), "position": position,
                  "lens": _lens(lens_rows)},
        "cache": {"text": [t.id for t in spec.texts].index(spec.cache.text), "steps": spec.cache.steps,
                  "new": [[j, p4(p)] for j, p in nums.greedy["new"]], "bytes": bytes_per,
                  "tokens": list(spec.cache.tokens), "models": table},
    }


def lens_file(record: dict[str, Any]) -> dict[str, Any]:
    """A text's logit lens at every position, with the texts of the tokens it names: loaded beside
    the page when the learner clicks a token of that text."""
    return {"lens": [_lens(rows) for rows in record["lens"]], "tok": _tokens([record], ("lens",))}
