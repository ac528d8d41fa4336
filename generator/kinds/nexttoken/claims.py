"""The next-token kind's claims, checked against the stored records (:mod:`.compute`), and the cache
table's numbers: everything here is a function of the records and the model's config, so a build
checks them without the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from generator.kinds import Diagnostic
from generator.kinds.nexttoken import compute
from generator.kinds.nexttoken.reading import MODEL, CacheModel, Claim, NextTokenSpec, read_size, unescape


@dataclass(frozen=True)
class Numbers:
    """The records a lab's numbers come from: one per text (by id), the greedy run, the config, and
    each text's attention (by id)."""

    texts: dict[str, dict[str, Any]]
    greedy: dict[str, Any]
    config: dict[str, Any]
    attention: dict[str, dict[str, Any]]


def shown(token: str) -> str:
    """A token as a claim or a message writes it: JSON-quoted, so spaces and newlines are visible."""
    return json.dumps(token, ensure_ascii=False)


def token_texts(record: dict[str, Any]) -> list[str]:
    """The text's tokens (``<|endoftext|>`` left out)."""
    return [record["text"][str(j)] for j in record["ids"][1:]]


def find_token(record: dict[str, Any], token: str) -> tuple[int | None, str]:
    """The index of ``token`` among the text's tokens, or None and why not."""
    tokens = token_texts(record)
    found = [k for k, t in enumerate(tokens) if t == token]
    if len(found) == 1:
        return found[0], ""
    listing = ", ".join(shown(t) for t in tokens)
    if not found:
        return None, f"the text has no token {shown(token)}; its tokens are {listing}"
    return None, f"the token {shown(token)} is in the text {len(found)} times; a claim needs one that is there once"


def models(spec: NextTokenSpec, config: dict[str, Any]) -> list[CacheModel]:
    """The lab's own model (from the GGUF's config) first, then the published configs."""
    own = CacheModel(MODEL, config["name"], config["n_layers"], config["n_heads"], config["n_kv_heads"],
                     config["head_dim"], config["context_length"], "", spec.at)
    return [own, *spec.cache.models]


def cache_of(model: CacheModel, tokens: int, bytes_per_value: int) -> int:
    return compute.cache_bytes(model.layers, model.kv_heads, model.head_dim, tokens, bytes_per_value)


def formula(model: CacheModel, tokens: int, bytes_per_value: int) -> str:
    return (f"2 × {model.layers} layers × {model.kv_heads} key/value heads × {model.head_dim} × {tokens:,} tokens × "
            f"{bytes_per_value} bytes = {cache_of(model, tokens, bytes_per_value):,} bytes")


def _holds(value: float, op: str, bound: float) -> bool:
    return {">=": value >= bound, "<=": value <= bound, ">": value > bound, "<": value < bound}[op]


def check(claim: Claim, spec: NextTokenSpec, nums: Numbers) -> str | None:
    """None when the claim holds, else what was computed, for the author."""
    a = claim.args
    if claim.kind in ("perplexity", "cross-entropy"):
        p = nums.texts[a[0]]["p"]
        value = compute.perplexity(p) if claim.kind == "perplexity" else compute.cross_entropy(p)
        unit = "" if claim.kind == "perplexity" else " bits per token"
        return None if _holds(value, a[1], float(a[2])) else f"the {claim.kind} of {a[0]!r} is {value:.3f}{unit}"
    if claim.kind == "least":
        record = nums.texts[a[0]]
        k = compute.least_likely(record["p"])
        token = token_texts(record)[k]
        if token == unescape(a[1]):
            return None
        return f"the least likely token is {shown(token)} (token {k + 1}, p = {record['p'][k]:.4%})"
    if claim.kind in ("p", "settles"):
        where, text, token = a[0], a[1], unescape(a[2])
        record = nums.texts[text]
        if where == "in":
            k, why = find_token(record, token)
            if k is None:
                return why
            token_id, p = record["ids"][k + 1], record["p"][k]
        else:
            k = len(record["ids"]) - 1
            top = {record["text"][str(j)]: (j, q) for j, q in record["top"][k]}
            if token not in top:
                listing = ", ".join(f"{shown(record['text'][str(j)])} {q:.2%}" for j, q in record["top"][k])
                return f"{shown(token)} is not among the {compute.TOP} likeliest next tokens, which are {listing}"
            token_id, p = top[token]
        if claim.kind == "p":
            ok = _holds(100 * p, a[3], float(a[4]))
            return None if ok else f"p({shown(token)}) = {p:.4%}"
        settled = compute.settles_at(record["lens"][k], token_id)
        if settled == int(a[3]):
            return None
        if settled is None:
            leader = record["lens"][k][-1][0]
            return f"{shown(token)} is not the model's top guess there; {shown(record['text'][str(leader)])} is"
        return f"{shown(token)} is the top guess from layer {settled} on"
    if claim.kind == "cache":
        model = next(m for m in models(spec, nums.config) if m.id == (a[0] or MODEL))
        tokens = int(a[1].replace(",", ""))
        size, decimals = read_size(a[2], a[3])
        written = float(a[2].replace(",", ""))
        exact = cache_of(model, tokens, spec.cache.bytes)
        unit = size / written if written else 1.0
        if round(exact / unit, decimals) == round(written, decimals):
            return None
        return f"{formula(model, tokens, spec.cache.bytes)} = {exact / unit:,.{max(decimals, 2)}f} {a[3]}"
    raise AssertionError(claim.kind)


def check_claims(spec: NextTokenSpec, nums: Numbers) -> list[Diagnostic]:
    problems = []
    for claim in spec.claims:
        why = check(claim, spec, nums)
        if why is not None:
            problems.append(replace(claim.at, message=f"claim {claim.text!r} fails: {why}"))
    return problems
