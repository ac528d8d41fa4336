"""The head finder's report and the learned-head matches, computed when a lab's sentences change,
not on every build.

Both are worked out from the real-heads entries of every sentence the model reads (lab 07: 69
sentences, 753 relations; about 15 ms of CPU a lab, and 7 ms more to decode every sentence's
numbers for them, where a lab that reads them decodes its 8 shown sentences). They depend on
nothing else than:

- the checkpoint (its SHA-256) and each sentence's entry: words, specials, attention;
- each sentence's id, kind, words and their tags, and which are the spotlight's;
- the relations (sentence, query, key, type) and the designed heads' ids;
- the code that computes them (:data:`CODE`: the finder, the matching, the designed model).

``labs heads`` stores both in the real-heads file under a ``key`` that is a digest of all that and
of the stored numbers themselves (``"report": {"key": …, "finder": …, "learned": …}``, one line).
A build computes the digest of what it has (the entries' words and the text of their numbers, about
3 ms) and reads the report when the keys are equal; it then decodes the numbers of the spotlight's
sentences only. Otherwise (a sentence, tag or relation edited since, other code, another
checkpoint by ``--model``, a report edited by hand or damaged) it computes both as before, so a
build never shows a report of other inputs.

A report whose key matches is as trusted as the entries beside it, which the build shows as the
model's attention: the file is the author's own, and the key guards against staleness and
damage, not against an author who computes it for numbers of their own.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import marshal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from generator.kinds.attention.headfinder import Aligned, find_heads, learned_matches, model_sentences
from generator.kinds.attention.permille import per_mille_json

FORMAT = "attention-labs/head-report/1"
# The modules whose code makes the report (relative to the generator package); an edit to any of
# them makes every stored report stale, so a build computes it again until `labs heads` stores it.
CODE = ("kinds/attention/headreport.py", "kinds/attention/headfinder.py", "kinds/attention/realheads.py",
        "kinds/attention/agreement.py", "kinds/attention/teaching.py", "models/core.py")


@functools.cache
def code_digest() -> bytes:
    """A digest of :data:`CODE`'s source (its compiled code, for an install that ships no source)."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for rel in CODE:
        try:
            data = (root / rel).read_bytes()
        except OSError:
            name = "generator." + rel.removesuffix(".py").replace("/", ".")
            data = marshal.dumps(importlib.util.find_spec(name).loader.get_code(name))
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.digest()


def inputs_digest(sha: str, sentences: Sequence[Any], shown: Sequence[str], relations: Sequence[Any],
                  head_ids: Sequence[str], entries: Mapping[str, Mapping]) -> bytes:
    """The digest of everything the report is made from (see the module docstring): ``sentences``
    in the order the finder reads them (the spotlight's model sentences, then the finder's own),
    ``shown`` the ids of the spotlight's, ``entries`` each sentence's real-heads entry by id."""
    digest = hashlib.sha256(code_digest())  # SHA-256: the fastest here (the processor's own instructions)

    def put(value: Any) -> None:
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
        digest.update(len(data).to_bytes(8, "little") + data)

    put([FORMAT, sha, list(head_ids), sorted(shown)])
    put([[s.id, s.kind, s.queries, [w.role for w in s.query_words]] for s in sentences])
    put([[r.sentence_id, r.query, r.key, r.kind] for r in relations])
    for s in sentences:
        entry = entries.get(s.id)
        if entry is None:
            put(None)
            continue
        put([list(entry["words"]), np.asarray(entry["special"], dtype=bool).tolist()])
        text = per_mille_json(entry["attention"]).encode()  # its text: the numbers need not be decoded
        digest.update(len(text).to_bytes(8, "little") + text)
    return digest.digest()


def _dumps(value: Any) -> str:  # key order kept: the page writes these as the build made them
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def report_key(inputs: bytes, finder: Any, learned: Any) -> str:
    """The key stored with a report: its inputs' digest and its own numbers, as they are written."""
    digest = hashlib.sha256(inputs)
    digest.update(_dumps([finder, learned]).encode())
    return digest.hexdigest()


def stored(cache: Mapping, inputs: bytes) -> tuple[Any, Any] | None:
    """The cache's (finder, learned) when its key is that of ``inputs`` and of those numbers; else None."""
    report = cache.get("report")
    if not isinstance(report, dict) or not isinstance(report.get("key"), str):
        return None
    finder, learned = report.get("finder"), report.get("learned")
    return (finder, learned) if report["key"] == report_key(inputs, finder, learned) else None


def made(inputs: bytes, finder: Any, learned: Any) -> dict[str, Any]:
    """The ``report`` section to store for these numbers."""
    return {"key": report_key(inputs, finder, learned), "finder": finder, "learned": learned}


def _read(spec: Any, widget: Any) -> list[Any]:
    return [*model_sentences(widget), *spec.finder_sentences]


def inputs_for(spec: Any, widget: Any, sha: str, entries: Mapping[str, Mapping]) -> bytes:
    shown = [s.id for s in model_sentences(widget)]
    return inputs_digest(sha, _read(spec, widget), shown, spec.relations, widget.head_ids, entries)


def compute(spec: Any, widget: Any, entries: Mapping[str, Mapping]) -> tuple[Any, Any]:
    aligned = Aligned(_read(spec, widget), entries)
    return find_heads(spec, widget, entries, aligned), learned_matches(widget, spec.finder_sentences, entries, aligned)


def stored_report(spec: Any, widget: Any, sha: str, entries: Mapping[str, Mapping], cache: Mapping) -> tuple[Any, Any] | None:
    """A lab's head finder report and learned-head matches as ``cache`` stores them, when its key
    is that of these inputs (``spec``: its ModelSpec; ``entries``: each sentence's real-heads entry
    by id, under checkpoint ``sha``; their numbers' text is what is digested, so they need not be
    decoded); else None, and the caller computes them (:func:`compute`, about 16 ms for a lab of
    lab 07's size). No note when computed: the numbers are the same either way."""
    if not isinstance(cache.get("report"), dict):  # none stored: its key is not worked out
        return None
    return stored(cache, inputs_for(spec, widget, sha, entries))


def report_of(spec: Any, widget: Any, sha: str, entries: Mapping[str, Mapping]) -> dict[str, Any]:
    """The ``report`` section ``labs heads`` stores for these entries (raises ContentError as the
    build would: a relation between words the model splits)."""
    finder, learned = compute(spec, widget, entries)
    return made(inputs_for(spec, widget, sha, entries), finder, learned)
