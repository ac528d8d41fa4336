"""The embeddings kind: a real sentence-embedding model's vectors — similarity, neighbours, a map, search.

Author-facing syntax (``lab.yaml``)::

    embeddings:
      prompt: Click a sentence to see its neighbours.  # optional, one line above the widget
      store: embeddings.json       # optional (default embeddings.json): the stored vectors, in the lab
                                   # folder, written by `labs embed`
      neighbours: 5                # optional (1 to 10, default 5): neighbours listed per item
      items:                       # required, 3 to 40
        - id: cat                  # lower-case letters, digits, '-', '_'; unique among items and queries
          text: A cat is sleeping on the sofa.   # one line, at most 200 characters
          group: animals           # optional: the matrix is ordered by group
      queries:                     # optional, up to 12: searches the learner can pick without the model
        - id: q-pet
          text: a furry animal
      rag: {query: q-pet, k: 3}    # optional: the retrieval example, k from 1 to 10 (default 3)
      runtime: ../../models/all-minilm-l6-v2  # optional: a model bundle folder; the page offers
                                   # live search with it, loaded only when the learner asks
      claims:                      # optional: what the page's text relies on, checked at build
        - '"cat" is closer to "kitten" than to "car"'

Claims (ids in double quotes; ``OP`` is ``>=``, ``<=``, ``>`` or ``<``)::

    "a" is closer to "b" than to "c"           cosine(a, b) > cosine(a, c); any item or query
    "q" finds "x" in its top K                 x is among the K items nearest to q (q itself excluded)
    cosine of "a" and "b" OP N                 e.g. cosine of "like" and "not-like" >= 0.7
    "x" is in the top K of at least N items    hubness: N items have x among their K nearest
    mean cosine across groups OP N             over every pair of items in different groups
    mean [CLS] cosine across groups OP N       the same with the raw [CLS] vectors (anisotropy)
    the map explains OP N%                     the two PCA axes' share of the variance
    the map disagrees for OP N% of items       items whose nearest on the map is not their nearest

A hubness claim, and a mean claim with > or >=, also fails when random points would make it true
(:mod:`.chance`): it would say nothing about the model.

Quiz type ``nearest``: click the item closest to X::

    - type: nearest
      of: q-pet                    # an item or a query
      choices: [kitten, car, bread]  # 2 to 6 items
      answer: kitten               # optional; checked: the choice with the highest cosine

The vectors are computed once by ``labs embed`` (NumPy forward pass of all-MiniLM-L6-v2, mean
pooling over the attention mask, L2 normalisation, as sentence-transformers does) and stored;
the build reads them, so it needs no checkpoint. A text without a stored vector is an error at
its line naming that command.
"""

from __future__ import annotations

import html
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.kinds import (
    Computed, ContentError, Diagnostic, KindQuestion, Lab, LabKind, Option, PageData, Reader, did_you_mean)
from generator.kinds.embeddings import compute, store
from generator.kinds.embeddings.reading import EmbeddingsSpec, read_embeddings
from generator.kinds.helpers import lazy_script

TIE = 0.005  # cosines closer than this are a tie: a question must not hinge on one


@dataclass(frozen=True)
class NearestQuestion:
    of: str
    choices: tuple[str, ...]


def stored_numbers(spec: EmbeddingsSpec) -> tuple[compute.Numbers | None, list[Diagnostic]]:
    where = {e.text: e.at for e in (*spec.items, *spec.queries)}
    vectors, problems = store.load(spec.store, spec.texts(), spec.at, where, spec.runtime_checkpoint)
    if problems:
        return None, problems
    nums = compute.numbers(spec, vectors)
    if nums is None:
        return None, [Diagnostic(spec.at.path, spec.at.line, spec.at.column, "the items' stored vectors are all the "
                                 "same point: there is no spread for a map or a neighbour to show", spec.at.source_line)]
    return nums, []


class EmbeddingsKind(LabKind):
    keys = ("embeddings",)
    required = ("embeddings",)
    question_types = ("nearest",)
    question_keys = {"nearest": (("of", "choices"), ("answer",))}
    shuffled_question_types = ("nearest",)  # authors list the nearest first; a learner would learn to click it
    widget_title = "The map of meaning"
    description = "sentence embeddings: a real model's vectors, cosine similarity, neighbours, a 2-D map, search"

    def read(self, reader: Reader, lab_dir: Path) -> EmbeddingsSpec | None:
        return read_embeddings(reader, ("embeddings",), lab_dir)

    def read_question(self, reader: Reader, where: tuple, qtype: str, qid: str, spec: EmbeddingsSpec) -> KindQuestion | None:
        if spec is None:
            return None
        ids = [e.id for e in (*spec.items, *spec.queries)]
        items = [e.id for e in spec.items]
        of = reader.string(where + ("of",), multiline=False)
        if of is not None and of not in ids:
            reader.error(where + ("of",), f"unknown item or query {of!r}{did_you_mean(of, ids)}")
            return None
        choices = []
        listed = reader.sequence(where + ("choices",)) or []
        for i, _ in enumerate(listed):
            c = reader.string(where + ("choices", i), multiline=False)
            if c is None:
                return None
            if c not in items or c == of or c in choices:
                why = "is listed twice" if c in choices else "is the item asked about" if c == of else \
                    f"is not an item{did_you_mean(c, items)}"
                reader.error(where + ("choices", i), f"choice {c!r} {why}")
                return None
            choices.append(c)
        if listed and not 2 <= len(listed) <= 6:
            reader.error(where + ("choices",), f"a nearest question offers 2 to 6 items, not {len(listed)}")
            return None
        if of is None or not choices:
            return None
        nums, _ = stored_numbers(spec)
        if nums is None:  # compute() reports the missing vectors, so the page is never built unchecked;
            # `labs embed` must still be able to read the lab to fill them in.
            return KindQuestion(tuple(Option(f"{qid}-{c}", html.escape(c), c, False, "") for c in choices),
                                NearestQuestion(of, tuple(choices)), "all")
        row, _ = nums.row(of)
        cos = {c: float(row[nums.ids.index(c)]) for c in choices}
        ranked = sorted(choices, key=lambda c: -cos[c])
        found = ", ".join(f"{c} {cos[c]:.3f}" for c in ranked)
        if cos[ranked[0]] - cos[ranked[1]] < TIE:
            reader.error(where + ("choices",), f"{ranked[0]!r} and {ranked[1]!r} are within {TIE} of each other "
                                               f"(cosines: {found}): the question has no clear answer")
            return None
        answer = reader.string(where + ("answer",), required=False, multiline=False)
        if answer is not None and answer != ranked[0]:
            reader.error(where + ("answer",), f"answer key {answer!r} is wrong: the nearest to {of!r} is "
                                              f"{ranked[0]!r} (cosines: {found})")
            return None
        options = tuple(Option(f"{qid}-{c}", html.escape(spec.entry(c).text), c, c == ranked[0],
                               html.escape(f"cosine {cos[c]:.3f} with “{spec.entry(of).text}”.")) for c in choices)
        return KindQuestion(options, NearestQuestion(of, tuple(choices)), "all")

    def compute_inputs(self, lab: Lab, options: Mapping[str, Any]) -> tuple[bytes, Sequence[Path]]:
        own = tuple(q for q in lab.quiz.questions if q.type in self.question_types)
        return pickle.dumps((lab.spec, own), pickle.HIGHEST_PROTOCOL), (lab.spec.store,)

    def compute(self, lab: Lab, options: Mapping[str, Any]) -> Computed:
        spec: EmbeddingsSpec = lab.spec
        nums, problems = stored_numbers(spec)
        if nums is None:
            raise ContentError(problems)
        return Computed(payload=compute.payload(spec, nums), problems=compute.check_claims(spec, nums))

    def page(self, lab: Lab, payload: Any) -> PageData:
        """The item vectors go into a script of their own, loaded with the model: live search is
        the only thing that needs them, and they would be most of the first visit."""
        payload = dict(payload)
        vectors = payload.pop("vectors")
        spec: EmbeddingsSpec = lab.spec
        if spec.runtime is None:
            return PageData(payload)
        from generator.runtime.site import bundle_at, page_ref

        name, data = lazy_script("item-vectors.js", "embeddingVectors", vectors)
        bundle = bundle_at(spec.runtime, spec.content)
        measured = bundle.meta.get("accuracy")  # what the page says of its 8-bit model: measured at export
        expect = {**measured["embedding"], "count": measured["sentences"]["count"]} if measured else None
        payload["live"] = {"vectors": name, **page_ref(bundle), "expect": expect}
        return PageData(payload, {name: data})

    def site_files(self, labs: Sequence[Lab], options: Mapping[str, Any], store: Path | None) -> Mapping[str, bytes]:
        from generator.runtime.site import bundle_at, site_files

        files: dict[str, bytes] = {}
        for folder, content in sorted({(lab.spec.runtime, lab.spec.content) for lab in labs if lab.spec.runtime is not None}):
            files.update(site_files(bundle_at(folder, content)))
        return files

    def add_commands(self, subparsers: Any) -> None:
        store.add_commands(subparsers)

    def scaffold(self, slug: str, title: str) -> Mapping[str, str]:
        # The example's vectors, computed by `labs embed` like any lab's, so the new lab builds at once.
        stored = (Path(__file__).parent / "scaffold.json").read_text(encoding="utf-8")
        return {"lab.yaml": LAB_YAML, "questions": QUESTIONS, store.DEFAULT_NAME: stored}


LAB_YAML = """\
legend:
  - term: Embedding
    meaning: a sentence as a point in 384 dimensions
  - term: Cosine
    meaning: how closely two of those points line up

# The vectors are stored in embeddings.json beside this file: after changing a text, run
#   labs embed
# (after `labs models fetch all-minilm-l6-v2`, or with --model DIR, a local all-MiniLM-L6-v2 folder).
embeddings:
  prompt: Click a sentence to see its nearest neighbours.
  items:
    - {id: cat, text: A cat is sleeping on the sofa., group: animals}
    - {id: kitten, text: A small kitten is playing with a ball of yarn., group: animals}
    - {id: car, text: I parked the car outside the garage., group: vehicles}
    - {id: bus, text: The bus to the city centre was late again., group: vehicles}
  queries:
    - {id: q-pet, text: a furry animal}
  rag: {query: q-pet, k: 2}
  claims:
    - '"cat" is closer to "kitten" than to "car"'
"""

QUESTIONS = """\
  - type: nearest
    prompt: Which sentence is nearest to **a furry animal**?
    of: q-pet
    choices: [kitten, car, bus]
    answer: kitten
"""
