"""The next-token kind's quiz types, with their answer keys computed from the records.

``surprise``: click the token of a text that the model found least likely::

    - type: surprise
      text: fox                    # a text's id
      answer: " jumps"             # optional, checked: the least likely token's text

``cache-size``: pick the KV cache's size for a model and a number of tokens::

    - type: cache-size
      model: llama-3.1-8b          # optional: a model of `cache: models`; default the lab's own
      tokens: 131072
      choices: [1.7 GB, 17 GB, 170 GB]   # 2 to 5 sizes
      answer: 17 GB                # optional, checked

A question whose answer would hinge on a near tie is refused at its line: two least likely tokens
within :data:`TIE_BITS` of surprise of each other; a size question where no choice is within
:data:`SIZE_TOLERANCE` of the formula's value, or where another choice is within a factor of
:data:`SIZE_APART` of the right one.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass

from generator.kinds import KindQuestion, Option, Reader, did_you_mean
from generator.kinds.nexttoken import compute
from generator.kinds.nexttoken.claims import Numbers, cache_of, formula, models, shown, token_texts
from generator.kinds.nexttoken.reading import MODEL, NextTokenSpec, read_size

TIE_BITS = 1.0  # the least likely token must be at least twice as unlikely as the next one
SIZE_TOLERANCE = 0.10  # the right size is within 10 % of the formula's value
SIZE_APART = 1.5  # and every other choice is at least 1.5 times bigger or smaller than it
_SIZE = re.compile(r"(\d[\d,]*(?:\.\d+)?) ?(B|kB|KB|MB|GB|TB|KiB|MiB|GiB|TiB)")


@dataclass(frozen=True)
class SurpriseQuestion:
    text: str


@dataclass(frozen=True)
class CacheQuestion:
    model: str
    tokens: int


def visible(token: str) -> str:
    """A token on a button: its spaces and line breaks made visible."""
    return token.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")


def read_surprise(reader: Reader, where: tuple, qid: str, spec: NextTokenSpec, nums: Numbers | None) -> KindQuestion | None:
    ids = [t.id for t in spec.texts]
    text = reader.string(where + ("text",), multiline=False)
    if text is None:
        return None
    if text not in ids:
        reader.error(where + ("text",), f"unknown text {text!r}{did_you_mean(text, ids)}")
        return None
    if nums is None:
        return None
    record = nums.texts[text]
    tokens, p = token_texts(record), record["p"]
    if len(tokens) < 2:
        reader.error(where + ("text",), f"text {text!r} has {len(tokens)} token; a surprise question needs 2 or more")
        return None
    bits = compute.surprise_bits(p)
    order = sorted(range(len(p)), key=lambda k: (-bits[k], k))
    first, second = order[0], order[1]
    if bits[first] - bits[second] < TIE_BITS:
        reader.error(where + ("text",), f"the two least likely tokens of {text!r}, {shown(tokens[first])} "
                     f"({bits[first]:.2f} bits) and {shown(tokens[second])} ({bits[second]:.2f} bits), are within "
                     f"{TIE_BITS:g} bit of each other: the question has no clear answer")
        return None
    answer = reader.value(where + ("answer",))
    if answer is not None:
        written = reader.string(where + ("answer",), multiline=False) if not isinstance(answer, str) else answer
        if written != tokens[first]:
            reader.error(where + ("answer",), f"answer key {shown(str(written))} is wrong: the least likely token is "
                                              f"{shown(tokens[first])} (p = {p[first]:.4%}, {bits[first]:.2f} bits)")
            return None
    options = tuple(Option(f"{qid}-t{k}", html.escape(visible(t)), visible(t), k == first,
                           html.escape(f"p = {_percent(p[k])}: {bits[k]:.1f} bits of surprise."))
                    for k, t in enumerate(tokens))
    return KindQuestion(options, SurpriseQuestion(text), "all")


def _percent(p: float) -> str:
    return f"{100 * p:.3g}%" if p >= 0.0001 else f"{100 * p:.1e}%"


def read_cache_size(reader: Reader, where: tuple, qid: str, spec: NextTokenSpec, nums: Numbers | None) -> KindQuestion | None:
    known = {MODEL, *(m.id for m in spec.cache.models)}
    model_id = reader.string(where + ("model",), required=False, multiline=False) or MODEL
    if model_id not in known:
        reader.error(where + ("model",), f"unknown model {model_id!r}{did_you_mean(model_id, known)}")
        return None
    tokens = reader.integer(where + ("tokens",), minimum=1, maximum=1 << 24)
    choices: list[tuple[str, float]] = []
    listed = reader.sequence(where + ("choices",)) or []
    for i, _ in enumerate(listed):
        written = reader.string(where + ("choices", i), multiline=False)
        m = _SIZE.fullmatch(written or "")
        if written is not None and m is None:
            reader.error(where + ("choices", i), f"cannot read the size {written!r}: write e.g. '23 MB' or '1.5 GiB'")
        elif m is not None:
            choices.append((written, read_size(*m.groups())[0]))
    if listed and not 2 <= len(listed) <= 5:
        reader.error(where + ("choices",), f"a cache-size question offers 2 to 5 sizes, not {len(listed)}")
        return None
    if tokens is None or len(choices) != len(listed) or not choices or nums is None:
        return None
    model = next(m for m in models(spec, nums.config) if m.id == model_id)
    exact = cache_of(model, tokens, spec.cache.bytes)
    apart = sorted(choices, key=lambda c: abs(math.log(c[1] / exact)))
    best = apart[0]
    said = f"{formula(model, tokens, spec.cache.bytes)} ({compute.si_bytes(exact)})"
    if abs(best[1] / exact - 1) > SIZE_TOLERANCE:
        reader.error(where + ("choices",), f"no choice is within {SIZE_TOLERANCE:.0%} of the cache's size: {said}")
        return None
    if len(apart) > 1 and max(apart[1][1], best[1]) / min(apart[1][1], best[1]) < SIZE_APART:
        reader.error(where + ("choices",), f"{apart[1][0]!r} is within a factor of {SIZE_APART:g} of the right "
                                           f"choice {best[0]!r}: {said}")
        return None
    answer = reader.string(where + ("answer",), required=False, multiline=False)
    if answer is not None and answer != best[0]:
        reader.error(where + ("answer",), f"answer key {answer!r} is wrong: the right choice is {best[0]!r}: {said}")
        return None
    options = tuple(Option(f"{qid}-c{k}", html.escape(text), text, text == best[0],
                           html.escape(f"{'That is' if text == best[0] else 'It is'} {said}."))
                    for k, (text, _) in enumerate(choices))
    return KindQuestion(options, CacheQuestion(model_id, tokens), "all")
