"""The attention kind: the spotlight over a designed model's heads, and a pretrained model's.

lab.yaml keys: ``widget`` (required; :mod:`.widget`) and ``model`` (optional; :mod:`.realmodel`).
Quiz type ``word``: click the word a query attends to most, checked against the weights.
Build option ``--model DIR``; commands ``labs heads`` and ``labs attention`` (:mod:`.commands`).
Its NumPy is in modules that know nothing of YAML or pages: :mod:`.teaching` (the designed model),
:mod:`.scaling`, :mod:`.shuffle`, :mod:`.agreement`, :mod:`.realheads`; the shared BERT is
:mod:`generator.models.bert`.
"""

from __future__ import annotations

import re

import argparse
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.kinds import (
    Computed, ContentError, Diagnostic, KindQuestion, Lab, LabKind, Option, PageData, Reader, did_you_mean,
    display_path)
from generator.kinds.attention.numbers import as_json
from generator.kinds.attention import inpage
from generator.kinds.attention.own import own_real_script, own_script
from generator.kinds.attention.realmodel import ModelSpec, compute_real, read_model
from generator.kinds.attention.reading import WidgetSpec, read_widget, read_word
from generator.kinds.attention.widget import check_claims, compute_widget, top_keys
from generator.kinds.helpers import compact_json, fingerprint, json_for_script, lazy_script, minified, shared_src

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
        from generator.kinds.attention.scaling import payload as sqrt_demo  # the ÷√d demo: sqrt.html, static/70-sqrt.js

        payload["sqrt"] = sqrt_demo()
        from generator.kinds.attention.pattern import shuffles  # what the pattern view's shuffle shows

        payload["shuffle"] = shuffles(spec.widget)
        problems = check_claims(spec.widget, payload) + _check_word_questions(lab, payload)
        notes: list[str] = []
        if spec.model is not None:
            try:
                payload["real"], notes, entries = compute_real(spec.model, spec.widget, options.get("model"))
                if spec.model.bundle is not None:  # how close the page's 8-bit model is (inpage.py); None: the
                    # bundle is of another checkpoint than this build's heads (--model): the page says so
                    payload["real"]["inpage"], drift_notes = inpage.accuracy(spec.model, spec.widget,
                                                                             payload["real"]["sha256"], entries)
                    notes += drift_notes
                else:
                    notes.append(f"{display_path(lab.source_dir / 'lab.yaml')}: the real model is not offered for a "
                                 f"learner's own sentence: {inpage.NO_BUNDLE}")
            except ContentError as exc:
                problems.extend(exc.diagnostics)
        return Computed(payload, problems, notes)

    def compute_inputs(self, lab: Lab, options: Mapping[str, Any]) -> tuple[bytes, Sequence[Path]]:
        """The spec (positions included: claim errors point into lab.yaml), the word questions, the
        model option and the model cache's bytes. A checkpoint folder is not hashed (gigabytes;
        serve passes none, and a lab's own checkpoint only fills sentences its cache lacks)."""
        data, _ = super().compute_inputs(lab, {"model": str(options.get("model"))})
        spec: AttentionSpec = lab.spec
        if spec.model is None:
            return data, ()
        bundle = (spec.model.bundle / "bundle.json",) if spec.model.bundle is not None else ()
        return data, (spec.model.cache, *bundle)  # bundle.json holds the SHA-256 of the bundle's other files

    def page(self, lab: Lab, payload: dict) -> PageData:
        """What the first paint needs is embedded: every sentence's words, and the default
        sentence's weights and percentages. The rest are scripts beside the page that the spotlight
        adds with ``<script src>`` when asked for or scrolled near: every sentence's full numbers
        (the four moves' vectors, scores and residuals; ``sentences.js``), the real model's
        attention (72 heads per sentence; ``real-heads.js``), the head finder's report
        (``finder.js``) and the spotlight's own code for the four moves, the model view's finder
        and the figure download (``spotlight-more.js``)."""
        payload = dict(payload)
        files: dict[str, bytes] = {}
        default = payload["default"]["sentence"]
        sentences = [{k: v for k, v in s.items() if k not in _UNREAD_SENTENCE_FIELDS} for s in payload["sentences"]]
        # A sentence's residual vectors (move 4) travel with its heads, inside its first head.
        first = payload["heads"][0]["id"]
        full = {s["id"]: {hid: _as_json({**H, "residual": _as_json(s["residual"])} if hid == first else H)
                          for hid, H in s["heads"].items()} for s in sentences}
        # The other sentences' notes travel with their heads: shown only once those have loaded.
        notes = {s["id"]: s["note"] for s in sentences if s["id"] != default and s.get("note")}
        # What a head does across two sentences is said only of a cross sentence: it travels with
        # their numbers too, unless the page opens on one.
        opens_cross = any(s["id"] == default and s["kind"] == "cross" for s in sentences)
        cross = {} if opens_cross else {m["id"]: m["cross"] for m in payload["heads"] if m.get("cross")}
        # The other sentences' words too: until they come, the Sentence list needs only their labels.
        words = {s["id"]: {k: s[k] for k in _WORD_FIELDS if k in s} for s in sentences if s["id"] != default}
        script = (lazy_script("sentences.js", "sentenceHeads", full)[1] + lazy_script("notes.js", "sentenceNotes", notes)[1]
                  + lazy_script("cross.js", "headsCross", cross)[1] + lazy_script("words.js", "sentenceWords", words)[1])
        name = fingerprint("sentences.js", script)
        files[name] = script
        payload["lazy"] = {"src": name, "ids": sorted(full)}
        payload["sentences"] = [
            {**{k: v for k, v in s.items() if k not in ("residual", "heads", "note", *_WORD_FIELDS) or s["id"] == default and k != "residual"},
             "heads": {hid: _first_paint(H, s["kind"]) for hid, H in s["heads"].items()} if s["id"] == default else None}
            for s in sentences]
        # What the four moves alone read of each head (its dimensions, its bias explained) and the
        # residual stream's dimensions: a script of their own, loaded with the moves.
        details = {"heads": {m["id"]: {k: m[k] for k in _DETAIL_FIELDS} for m in payload["heads"]},
                   "residual_dims": payload.pop("residual_dims")}
        name, files[name] = lazy_script("head-details.js", "headDetails", details)
        payload["details"] = {"src": name}
        payload["heads"] = [{k: v for k, v in m.items() if k not in _DETAIL_FIELDS and not (k == "cross" and cross)}
                            for m in payload["heads"]]
        real = payload.get("real")
        if real:
            # One script per sentence: opening the model view on a sentence fetches that sentence's
            # 72 heads only (each script adds its sentence to window.Labs.data.realHeads).
            srcs = {}
            for sid, heads in sorted(real["sentences"].items()):
                script = (f"(((window.Labs||={{}}).data||={{}}).realHeads||={{}})"
                          f"[{json_for_script(sid)}]={json_for_script(heads)};\n").encode()
                srcs[sid] = fingerprint(f"real-heads-{sid}.js", script)
                files[srcs[sid]] = script
            summary = {key: value for key, value in real.items()
                       if key not in ("sentences", "sha256", "per_mille", "finder", "learned", "inpage")}
            payload["real"] = {**summary, "srcs": srcs, "sentence_ids": sorted(real["sentences"])}
            if real.get("finder"):
                payload["real"]["finder_src"], script = lazy_script("finder.js", "headFinder", real["finder"])
                files[payload["real"]["finder_src"]] = script
        # Code (and lab-independent tables) every lab loads the same: shared_files, once per site.
        shared = _shared()
        src = {key: shared_src(self.name, name) for key, name in shared.names.items()}
        payload["more"] = {"src": src["more"], "css": src["later_css"]}
        # "Your sentence": the designed model in JavaScript, its tables and its UI (own.py).
        model = inpage.page_part(lab.spec.model, (real or {}).get("inpage"))
        payload["own"] = {"src": src["own"], "real_src": src["own_real"]}  # its styles come with spotlight-more.js, which it needs
        if "reason" in model:  # said as soon as the box opens
            payload["own"]["model"] = model
        else:  # where to load it and how close it is: loaded with own-real.js, off the first visit
            if (real or {}).get("finder"):  # a sentence through the model opens on the finder's best head
                model = {**model, "found": _found_heads(real["finder"])}
            name, files[name] = lazy_script("own-real-model.js", "ownRealModel", model)
            payload["own"]["model_src"] = name
        # The pattern view (every query of a head at once): its code, the shuffles and the closest
        # learned heads load when the learner opens it (pattern.py).
        from generator.kinds.attention.pattern import lazy_pattern

        payload["pattern"] = {**lazy_pattern(payload.pop("shuffle", {}), (real or {}).get("learned"), files),
                              "css": src["pattern_css"]}
        if "sqrt" in payload:  # the ÷√d demo: its code and numbers load when it nears the screen
            payload["sqrt"] = {"src": src["sqrt"], "css": src["sqrt_css"]}
        return PageData(payload, files)

    def shared_files(self) -> Mapping[str, bytes]:
        """The spotlight's further code, the "your sentence" model and UI, the ÷√d demo (its numbers
        do not depend on the lab) and the pattern view's stylesheet."""
        return _shared().files

    def site_files(self, labs: Sequence[Lab], options: Mapping[str, Any], store: Path | None) -> Mapping[str, bytes]:
        """The in-page model's runtime and weights (generator.runtime), once per site, for the labs
        whose ``model:`` names a ``bundle:``."""
        return inpage.site_files(lab.spec.model for lab in labs if lab.spec is not None)

    def heavy_part(self, lab: Lab, embedded: Any) -> tuple[Path, int, int, int] | None:
        """The first sentence: its numbers are the ones embedded in the page (n² per head)."""
        default = lab.spec.widget.default_sentence
        sentence = next((s for s in embedded.get("sentences", ()) if s.get("id") == default), None)
        if sentence is None:
            return None
        size = len(compact_json(sentence).encode())
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
        id_line = re.compile(rf"\s*(?:-\s+)?id:\s*['\"]?{re.escape(default)}['\"]?\s*")
        for i, line in enumerate(lines):
            if "id:" in line and default in line and id_line.fullmatch(line):  # the test in front: most lines fail it
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


# What the first paint reads of the default sentence's heads; the rest comes with sentences.js.
_FIRST_PAINT_FIELDS = ("weights", "weights_unscaled", "pct", "pct_unscaled")
# What the page embeds of the default sentence only; the others' come with sentences.js.
_WORD_FIELDS = ("queries", "keys", "key_label", "query", "roles_k")
# What only the four moves read of a head's description (head-details.js).
_DETAIL_FIELDS = ("q_dims", "k_dims", "v_dims", "o_dims", "bias")


def _first_paint(head: dict, kind: str) -> dict:
    """A head as the page embeds it: the rows the spotlight paints, ``scores`` only where null
    marks a masked key (a causal sentence), and ``bias`` as 1 or null (whether the head adds one;
    the matrix comes with the rest)."""
    fields = _FIRST_PAINT_FIELDS + (("scores",) if kind == "causal" else ())
    return {**{k: as_json(head[k]) for k in fields}, "bias": 1 if head.get("bias") else None}


def _found_heads(reports: list[dict]) -> list[dict]:
    """The head finder's heads, best first (those that beat both rules, then by held-out hit
    rate): ``[{"head": "L<layer>H<head>", "relation"}]``. A learner's sentence through the model
    opens on the first (own-ui.js, with the real model's page data); the Head list marks them from
    the whole report, which loads with the model view (finder.js)."""
    found = [f for f in reports if f["head"]]
    found.sort(key=lambda f: (not f["beats_baseline"], -f["head"]["held_hit"], f["relation"]))
    return [{"head": f"L{f['head']['layer']}H{f['head']['head']}", "relation": f["relation"]} for f in found]


def _as_json(arrays: dict) -> dict:
    """``arrays`` with each list of numbers as the JSON text it carries (numbers.as_json)."""
    return {key: as_json(value) for key, value in arrays.items()}


def _more_script() -> tuple[str, bytes]:
    """static/later/spotlight-more.js and spotlight-model.js (which adds to it), minified and
    fingerprinted as one script: code the spotlight loads on demand."""
    later = Path(__file__).parent / "static" / "later"
    data = "".join(minified(later / name) + "\n" for name in ("spotlight-more.js", "spotlight-model.js")).encode()
    return fingerprint("spotlight-more.js", data), data


def _later_style() -> tuple[str, bytes]:
    """static/later/spotlight-later.css, minified and fingerprinted: the styles of what the later
    code builds (the model view's grid, "your sentence"'s panel), loaded with it."""
    style = (minified(Path(__file__).parent / "static" / "later" / "spotlight-later.css") + "\n").encode()
    return fingerprint("spotlight-later.css", style), style


@dataclass(frozen=True)
class _Shared:
    names: dict[str, str]  # what a page refers to -> file name
    files: dict[str, bytes]  # file name -> bytes


def _shared() -> _Shared:
    """The kind's shared files (:meth:`AttentionKind.shared_files`), and which is which. Made from
    the files as they are now: each part keeps what it made for the process while its sources stay
    the same (minified, own_script), so asking once per lab costs little."""
    from generator.kinds.attention.scaling import payload as sqrt_numbers
    from generator.kinds.attention.pattern import pattern_style
    from generator.kinds.attention.sqrtdemo import demo_files

    names: dict[str, str] = {}
    files: dict[str, bytes] = {}
    parts = {"more": _more_script(), "own": own_script(), "own_real": own_real_script(), "pattern_css": pattern_style(),
             "later_css": _later_style()}
    parts["sqrt"], parts["sqrt_css"] = demo_files(sqrt_numbers())
    for key, (name, data) in parts.items():
        names[key], files[name] = name, data
    return _Shared(names, files)


def _check_word_questions(lab: Lab, payload: dict) -> list[Diagnostic]:
    problems = []
    for q in lab.quiz.questions:
        if q.type != "word":
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
    # head: syntax   (optional) the head whose weights decide the answer; without it, the
    #                widget's default head (its default: head, else the first head listed)
"""
