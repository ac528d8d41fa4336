"""The attention kind: the spotlight over a designed model's heads, and a pretrained model's.

lab.yaml keys: ``widget`` (required; :mod:`.widget`) and ``model`` (optional; :mod:`.realmodel`).
Quiz type ``word``: click the word a query attends to most, checked against the weights.
Build option ``--model DIR``; commands ``labs heads`` and ``labs attention`` (:mod:`.commands`).
The NumPy it runs is in :mod:`generator.attention`, which knows nothing of YAML or pages.
"""

from __future__ import annotations

import json
import re

import argparse
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.errors import ContentError, Diagnostic, did_you_mean
from generator.kinds import Computed, KindQuestion, LabKind, PageData
from generator.kinds.attention.realmodel import ModelSpec, compute_real, read_model
from generator.kinds.attention.widget import WidgetSpec, check_claims, compute_widget, read_widget, read_word, top_keys
from generator.model import Lab, Option
from generator.render import lazy_script
from generator.source import Reader

# Fields of the computed payload that the page's script never reads stay out of the page.
_UNREAD_SENTENCE_FIELDS = ("roles_q",)


@dataclass(frozen=True)
class AttentionSpec:
    widget: WidgetSpec
    model: ModelSpec | None  # when the lab shows a pretrained model's heads


@dataclass(frozen=True)
class WordQuestion:
    """A ``word`` question: which key ``query_index`` attends to most in one head of one sentence."""

    sentence_id: str
    head_id: str
    query_index: int
    answer_at: tuple[str, int, int]  # where the answer key is written, for errors


class AttentionKind(LabKind):
    keys = ("widget", "model")
    required = ("widget",)
    question_types = ("word",)
    question_keys = {"word": (("sentence", "query", "answer"), ("head",))}
    widget_title = "The spotlight"
    description = "self-attention: click a word, see where its attention goes (designed and real heads)"

    def read(self, reader: Reader, lab_dir: Path) -> AttentionSpec | None:
        widget = read_widget(reader, ("widget",))
        has_model = "model" in (reader.value(()) or {})
        model = read_model(reader, ("model",), widget, lab_dir) if has_model else None
        if widget is None or (has_model and model is None):
            return None
        return AttentionSpec(widget, model)

    def read_question(self, reader: Reader, where: tuple, qtype: str, qid: str, spec: AttentionSpec) -> KindQuestion | None:
        widget = spec.widget
        sentence_id = reader.string(where + ("sentence",), multiline=False)
        sentence = widget.sentence(sentence_id) if sentence_id else None
        if sentence_id and sentence is None:
            ids = [s.id for s in widget.sentences]
            reader.error(where + ("sentence",), f"unknown sentence {sentence_id!r}{did_you_mean(sentence_id, ids)}; "
                         f"sentences are declared under 'widget' in lab.yaml")
            return None
        head = reader.string(where + ("head",), required=False, multiline=False) or widget.default_head
        if head not in widget.head_ids:
            reader.error(where + ("head",), f"unknown head {head!r}{did_you_mean(head, widget.head_ids)}")
            return None
        if sentence is None:
            return None
        query = reader.string(where + ("query",), multiline=False)
        answer = reader.string(where + ("answer",), multiline=False)
        query_index = read_word(reader, where + ("query",), query, sentence.queries) if query else None
        answer_index = read_word(reader, where + ("answer",), answer, sentence.keys) if answer else None
        if query_index is None or answer_index is None:
            return None
        options = tuple(Option(f"{qid}-w{j}", html.escape(word), word, j == answer_index, "")
                        for j, word in enumerate(sentence.keys))
        line, column = reader.doc.position(where + ("answer",))
        return KindQuestion(options, WordQuestion(sentence.id, head, query_index, (reader.doc.path, line, column)))

    def compute(self, lab: Lab, options: Mapping[str, Any]) -> Computed:
        spec: AttentionSpec = lab.spec
        payload = compute_widget(spec.widget)
        problems = check_claims(spec.widget, payload) + _check_word_questions(lab, payload)
        notes: list[str] = []
        if spec.model is not None:
            try:
                payload["real"], notes = compute_real(spec.model, spec.widget, options.get("model"))
            except ContentError as exc:
                problems.extend(exc.diagnostics)
        return Computed(payload, problems, notes)

    def compute_inputs(self, lab: Lab, options: Mapping[str, Any]) -> tuple[bytes, Sequence[Path]]:
        """The spec (positions included: claim errors point into lab.yaml), the word questions, the
        model option and the model cache's bytes. A checkpoint folder is not hashed (gigabytes;
        serve passes none, and a lab's own checkpoint only fills sentences its cache lacks)."""
        data, _ = super().compute_inputs(lab, {"model": str(options.get("model"))})
        spec: AttentionSpec = lab.spec
        return data, (spec.model.cache,) if spec.model is not None else ()

    def page(self, lab: Lab, payload: dict) -> PageData:
        """The default sentence's numbers are embedded; the other sentences' and the real model's
        (72 heads per sentence, most of a lab's data, which most visits never open) are scripts
        beside the page that the spotlight adds with ``<script src>`` when asked for."""
        payload = dict(payload)
        files: dict[str, bytes] = {}
        default = payload["default"]["sentence"]
        payload["sentences"] = [{k: v for k, v in s.items() if k not in _UNREAD_SENTENCE_FIELDS}
                                for s in payload["sentences"]]
        # A later sentence's residual vectors (move 4) travel with its heads, inside its first head.
        first = payload["heads"][0]["id"]
        later = {s["id"]: {**s["heads"], first: {**s["heads"][first], "residual": s["residual"]}}
                 for s in payload["sentences"] if s["id"] != default}
        if later:
            name, files[name] = lazy_script("sentences.js", "sentenceHeads", later)
            payload["sentences"] = [s if s["id"] == default else {**{k: v for k, v in s.items() if k != "residual"},
                                                                   "heads": None} for s in payload["sentences"]]
            payload["lazy"] = {"src": name, "ids": sorted(later)}
        real = payload.get("real")
        if real:
            name, files[name] = lazy_script("real-heads.js", "realHeads", real["sentences"])
            summary = {key: value for key, value in real.items() if key not in ("sentences", "sha256", "per_mille")}
            payload["real"] = {**summary, "src": name, "sentence_ids": sorted(real["sentences"])}
        return PageData(payload, files)

    def heavy_part(self, lab: Lab, embedded: Any) -> tuple[Path, int, int, int] | None:
        """The first sentence: its numbers are the ones embedded in the page (n² per head)."""
        default = lab.spec.widget.default_sentence
        sentence = next((s for s in embedded.get("sentences", ()) if s.get("id") == default), None)
        if sentence is None:
            return None
        size = len(json.dumps(sentence, separators=(",", ":"), ensure_ascii=False).encode())
        path, line, column = self._sentence_at(lab, default)
        return path, line, column, size

    @staticmethod
    def _sentence_at(lab: Lab, default: str) -> tuple[Path, int, int]:
        """Where the sentence ``default``'s text is written in lab.yaml (its top if not found)."""
        path = lab.source_dir / "lab.yaml"
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return path, 1, 1
        for i, line in enumerate(lines):
            if re.fullmatch(rf"\s*(?:-\s+)?id:\s*['\"]?{re.escape(default)}['\"]?\s*", line):
                for j in range(i + 1, min(i + 20, len(lines))):
                    m = re.match(r"\s*text:\s*", lines[j])
                    if m:
                        return path, j + 1, m.end() + 1
                return path, i + 1, 1
        return path, 1, 1

    def scaffold(self, slug: str, title: str) -> Mapping[str, str]:
        return {"lab.yaml": LAB_YAML, "questions": QUESTIONS}

    def add_build_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--model", type=Path, default=None, metavar="DIR",
                            help="attention labs: a local BERT-family checkpoint folder for real model heads "
                                 "(default: the lab's model.checkpoint, else its committed cache)")

    def add_commands(self, subparsers: Any) -> None:
        from generator.kinds.attention.commands import add_commands

        add_commands(subparsers)


def _check_word_questions(lab: Lab, payload: dict) -> list[Diagnostic]:
    problems = []
    for q in lab.quiz.questions:
        if q.kind != "word":
            continue
        data: WordQuestion = q.data
        top = top_keys(payload, data.sentence_id, data.head_id, data.query_index, k=1)[0]
        answer = next(i for i, o in enumerate(q.options) if o.correct)
        if top != answer:
            sentence = next(s for s in payload["sentences"] if s["id"] == data.sentence_id)
            row = sentence["heads"][data.head_id]["pct"][data.query_index]
            word = sentence["queries"][data.query_index]
            path, line, column = data.answer_at
            problems.append(Diagnostic(
                path, line, column,
                f"answer key {q.options[answer].text!r} is wrong: in head {data.head_id!r}, {word!r} attends most to "
                f"{sentence['keys'][top]!r} ({row[top]}%), not {q.options[answer].text!r} ({row[answer]}%)"))
    return problems


LAB_YAML = """\
legend:
  - term: Query
    meaning: what a word looks for
  - term: Key
    meaning: what a word offers

widget:
  prompt: Click any word to make it the query.
  default: {sentence: example, head: syntax, query: sat}
  sentences:
    - id: example
      # Tag content words as word/ROLE; function words (the, on, …) are known already.
      text: The cat/NOUN sat/VERB on the mat/NOUN
      claims:
        syntax:
          - sat -> cat, mat
"""

QUESTIONS = """\
  - type: word
    prompt: Click the word that **sat** attends to most.
    sentence: example
    query: sat
    answer: cat
"""
