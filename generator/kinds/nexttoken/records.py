"""Where a lab's records come from: the NumPy decoder's results (:mod:`.compute`) for the lab's
inputs, stored beside the lab in ``decoded.json`` (:mod:`generator.runtime.decoded`) by
``labs decode``. A build reads them from there and never runs the model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.kinds import ContentError
from generator.kinds.nexttoken import compute
from generator.kinds.nexttoken.claims import Numbers
from generator.kinds.nexttoken.reading import MODEL, NextTokenSpec
from generator.runtime import decoded


def _text(model, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return compute.read_text(model, inputs["text"])


def _greedy(model, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return compute.decode_greedy(model, inputs["text"], inputs["steps"])


def _attention(model, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return compute.read_attention(model, inputs["text"])


def _config(model, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return compute.config_record(model)


TEXT = decoded.Computation("next-token-text", 1, _text)
GREEDY = decoded.Computation("next-token-greedy", 1, _greedy)
CONFIG = decoded.Computation("next-token-config", 1, _config)
ATTENTION = decoded.Computation("next-token-attention", 1, _attention)


def requests(spec: NextTokenSpec) -> list[decoded.Request]:
    """What the lab reads from its stored file: a record per text, the greedy run the KV-cache part
    steps through, the model's config, and
    a record of every head's attention per text; each reported, when missing, where the author wrote it."""
    found = [decoded.Request(MODEL, TEXT, {"text": t.text}, t.at) for t in spec.texts]
    prompt = spec.entry(spec.cache.text)
    found.append(decoded.Request(MODEL, GREEDY, {"text": prompt.text, "steps": spec.cache.steps}, spec.cache.at))
    found.append(decoded.Request(MODEL, CONFIG, {}, spec.at))
    found += [decoded.Request(MODEL, ATTENTION, {"text": t.text}, t.at) for t in spec.texts]
    return found


def numbers(spec: NextTokenSpec) -> Numbers:
    """Every record the lab needs, from its stored file. Raises ContentError listing every result
    that is missing or stale, each at its place, naming ``labs decode``."""
    stored = decoded.load(spec.lab_dir)
    results, problems = [], []
    for request in requests(spec):
        result, problem = decoded.find(stored, request)
        results.append(result)
        if problem is not None:
            problems.append(problem)
    if problems:
        raise ContentError(problems)
    n = len(spec.texts)
    return Numbers({t.id: r for t, r in zip(spec.texts, results[:n])}, results[n], results[n + 1],
                   {t.id: r for t, r in zip(spec.texts, results[n + 2:])})
