"""The sampling kind: how a language model picks its next word — temperature, top-k, top-p.

Author-facing syntax (``lab.yaml``)::

    sampling:
      prompt: Turn the dial and watch the bars.          # optional, one line above the widget
      temperatures: {min: 0.1, max: 3, step: 0.1}         # required: the dial's grid; min >= 0.01,
                                                          # max <= 100, max - min a whole number of
                                                          # steps, at most 100 points
      default: {context: cat, temperature: 1}             # optional; default: the first context and
                                                          # T = 1 (or the grid point nearest to 1)
      seed: 42                                            # optional: the sampler's first seed (0 … 2³²−1)
      contexts:                                           # required, 1 to 6
        - id: cat                                         # lower-case letters, digits, '-', '_'; unique
          text: The cat sat on the                        # the words before the one being predicted
          note: One line shown under the context.         # optional
          logits: {mat: 4.1, sofa: 3.2, floor: 2.9}       # optional: a designed toy, 2 to 12 words: a
                                                          # mapping word → logit, or a list of {word: mat,
                                                          # logit: 4.1}; finite numbers within ±100.
                                                          # Without it: SmolLM2's logits over its whole
                                                          # vocabulary, from decoded.json (real.py)
          chat: false                                     # the model only: wrap the text in its chat template
          claims:                                         # optional: what the page's text relies on
            - at T=0.5: mat >= 80%
            - "at T=1: top-3 = mat, sofa, floor"          # quote it or not: both forms read the same

Words are case-sensitive, without spaces or any of ``, : = < > % #``. The page lists them from
the highest logit down (temperature never changes that order). A model's token is written as the
page shows it, a leading space as ␣ (``␣cat``); the page lists its ten likeliest and "all other
tokens", whose parts load on the first cut (``PageData.files``).

Claims and conditions
    A claim is ``at T=<t>: <condition>`` — ``<t>`` a point of the grid — and a condition is one of

    ``mat >= 80%``                  the word's probability (also ``>``, ``<=``, ``<``; exact, unrounded);
    ``top-3 = mat, sofa, floor``    the 3 most likely words are these (any order; as many words as k);
    ``top-p 90% = mat, sofa``       the nucleus at p = 90 % is exactly these words.

    The build computes every claim and fails at its line, with the computed number, if one
    does not hold, or if a share claim holds but the dial's whole-percent figure would make it
    look false (moon at 5.196 % reads "5%": write ``moon >= 5%``, not ``moon > 5%``). A dial
    question's explanation quotes the dial's own figure, with decimals only where that figure
    would contradict the verdict. Top-k and top-p conditions are checked on the page's rounded probabilities
    (whole parts of 100 000), so they hold for exactly what the learner sees.

Quiz type ``dial``: "set the dial so that …"::

    - type: dial
      prompt: Which temperature gives *mat* at least 80%?
      context: cat             # optional; default: the default context
      condition: mat >= 80%    # a condition as above
      choices: [0.3, 1, 2]     # 2 to 6 temperatures of the grid, shown as buttons
      answer: 0.3              # optional: the choice(s) the explanation assumes; checked

    The correct choices are the ones whose temperature satisfies the condition, computed when
    the lab is read; a condition that every choice or no choice satisfies is an error at its
    line. With several correct choices, any one of them is a right answer (``match="any"``).

What is computed where
    At build (:mod:`generator.models.decoding`, NumPy): softmax(logits / T) for every temperature of the grid,
    rounded to whole parts of 100 000 by largest remainder (``contexts[].p``, ``[t][n]``).
    In the page (``static/10-core.js``, integer arithmetic that mirrors :mod:`generator.models.decoding`): the
    top-k and top-p cut-offs on the chosen row, the renormalised percentages (largest remainder,
    adding to exactly 100), and the draws of mulberry32(seed).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from generator.kinds import (Computed, ContentError, Diagnostic, KindQuestion, Lab, LabKind, ModelUse, Option, PageData, Reader,
                             did_you_mean)
from generator.kinds.helpers import lazy_script
from generator.kinds.sampling import live, real
from generator.models import decoding
from generator.runtime import decoded
from generator.kinds.sampling.designed import MAX_WORDS
from generator.kinds.sampling.reading import (Condition, DialQuestion, SamplingSpec, format_t, read_condition,
                                              read_sampling, read_temperature, share_text)

# -- computing --------------------------------------------------------------------------------------
def evaluate(condition: Condition, probs) -> tuple[bool, str]:  # probs [n] floats
    """Whether ``condition`` holds of one distribution, and what it found, in words."""
    if condition.kind == "share":
        j = condition.words[0]
        p = float(probs[j])
        ok = {">=": p >= condition.value, "<=": p <= condition.value,
              ">": p > condition.value, "<": p < condition.value}[condition.op]
        return ok, f"{100 * p:.2f}%"
    parts = decoding.to_parts(probs)  # what the page shows
    if condition.kind == "top-k":
        got = set(decoding.rank(parts)[: int(condition.value)].tolist())
    else:
        got = set(decoding.top_p_keep(parts, int(condition.value)).nonzero()[0].tolist())
    return got == set(condition.words), "{" + ", ".join(str(j) for j in sorted(got)) + "}"


def _holds(value: float, op: str, bound: float) -> bool:
    return {">=": value >= bound, "<=": value <= bound, ">": value > bound, "<": value < bound}[op]


def _reads_as(text: str, op: str, bound: float) -> bool | None:
    """Whether a shown figure ("5%", "5.2%", "<1%", ">99%") visibly meets ``op bound`` (a percentage):
    True or False when the figure decides it, None when it cannot ("<1%" against "> 0.5%")."""
    number, below = float(text.strip("<>%")), op in ("<", "<=")
    if text.startswith("<"):  # somewhere in (0, number)
        return (True if number <= bound else None) if below else (True if bound <= 0 else False if number <= bound else None)
    if text.startswith(">"):  # somewhere in (number, 100)
        return (True if number >= bound else False if bound >= 100 else None) if not below else (
            True if bound >= 100 else False if number >= bound else None)
    return _holds(number, op, bound)


def dial_figure(probs, j: int) -> str:
    """Word ``j``'s chance as the dial writes it: whole percentages by largest remainder of the
    page's parts, with "<1%" and ">99%" (:func:`.reading.share_text`, ``pctText`` in the page)."""
    parts = decoding.to_parts(probs)
    if len(parts) > MAX_WORDS:  # a model's vocabulary: the page rounds its top tokens and "all other tokens"
        top = real.top_tokens(probs)
        if j not in top:
            return f"{100 * parts[j] / decoding.PARTS:.3f}%"
        parts = np.append(parts[top], decoding.PARTS - parts[top].sum())
        j = top.index(j)
    return share_text(int(decoding.shares(parts)[j]), int(parts[j]), decoding.PARTS)


def share_figure(condition: Condition, probs) -> str:
    """The chance a ``share`` condition is about, written for the page: the dial's own figure
    when it visibly agrees with whether the condition holds (so a quiz says "93%" beside a dial
    that says 93%), otherwise the fewest decimals that do (moon at 5.196% against "> 5%" reads
    "5.2%", never "5%")."""
    j, p = condition.words[0], 100 * float(probs[condition.words[0]])
    truth = _holds(p, condition.op, 100 * condition.value)
    shown = dial_figure(probs, j)
    for decimals in range(1, 7):
        if _reads_as(shown, condition.op, 100 * condition.value) == truth:
            return shown
        shown = f"{p:.{decimals}f}%"
    return shown


def describe(condition: Condition, probs, words, *, shown: bool = False) -> str:
    """What a condition's quantity is at one distribution, e.g. "mat gets 91.23%" (for the
    author's messages), or with ``shown`` as the page writes it, e.g. "mat gets 91%"."""
    ok, found = evaluate(condition, probs)
    if condition.kind == "share":
        return f"{words[condition.words[0]]} gets {share_figure(condition, probs) if shown else found}"
    parts = decoding.to_parts(probs)
    if condition.kind == "top-k":
        got = decoding.rank(parts)[: int(condition.value)]
        return f"the top {int(condition.value)} are {', '.join(words[j] for j in got)}"
    keep = decoding.top_p_keep(parts, int(condition.value))
    got = [int(j) for j in decoding.rank(parts)[: int(keep.sum())]]
    more = f" and {len(got) - 10:,} more tokens" if len(got) > 12 else ""
    return f"the top-p {int(condition.value)}% set is {', '.join(words[j] for j in got[:10 if more else None])}{more}"


def compute_payload(spec: SamplingSpec) -> dict[str, Any]:
    contexts = []
    for c in spec.contexts:
        probs = decoding.softmax(c.logits, spec.temperatures)  # [t, n]
        parts = decoding.to_parts(probs)  # [t, n] ints summing to PARTS
        if c.model:  # n = the whole vocabulary: the top tokens by name, the rest as runs
            entry = {"id": c.id, "text": c.text, "chat": c.chat, "tokens": list(c.prompt_tokens),
                     **real.real_payload(c.words, c.logits, parts)}
        else:
            entry = {"id": c.id, "text": c.text, "designed": True, "words": list(c.words),
                     "logits": [round(x, 4) for x in c.logits], "p": parts.tolist()}
        if c.note:
            entry["note"] = c.note
        contexts.append(entry)
    return {"temps": list(spec.temperatures), "parts": decoding.PARTS, "seed": spec.seed,
            "default": {"context": spec.default_context, "t": spec.default_t}, "contexts": contexts}


def check_claims(spec: SamplingSpec) -> list[Diagnostic]:
    problems = []
    for c in spec.contexts:
        if not c.claims:
            continue
        probs = decoding.softmax(c.logits, spec.temperatures)  # [t, n]
        for claim in c.claims:
            row, t = probs[claim.t_index], format_t(spec.temperatures[claim.t_index])
            ok, _ = evaluate(claim.condition, row)
            if not ok:
                problems.append(replace(claim.at, message=f"claim {claim.text!r} fails: at T = {t}, "
                                                          f"{describe(claim.condition, row, c.words)}"))
            elif claim.condition.kind == "share":
                figure = dial_figure(row, claim.condition.words[0])
                if not _reads_as(figure, claim.condition.op, 100 * claim.condition.value):
                    word = c.words[claim.condition.words[0]]
                    problems.append(replace(claim.at, message=(
                        f"claim {claim.text!r} holds ({describe(claim.condition, row, c.words)}) but the dial "
                        f"shows {word} {figure} at T = {t}, where it does not look true: write a bound the "
                        f"shown figure meets too")))
    return problems


# -- the kind ---------------------------------------------------------------------------------------
class SamplingKind(LabKind):
    keys = ("sampling",)
    required = ("sampling",)
    question_types = ("dial",)
    question_keys = {"dial": (("condition", "choices"), ("context", "answer", "shuffle"))}
    shuffled_question_types = ("dial",)  # a few temperatures to pick from, not a scale to read
    widget_title = "The dial"
    description = "next-word sampling: turn the temperature dial, cut with top-k and top-p, draw with a seed"

    def read(self, reader: Reader, lab_dir: Path) -> SamplingSpec | None:
        store: list[decoded.Store] = []
        damage: list[Diagnostic] = []

        def stored(text: str, chat: bool, at: Diagnostic):  # a context on the model: from decoded.json
            if not store:
                try:
                    store.append(decoded.load(lab_dir))
                except ContentError as exc:  # said once; the spec still names what labs decode rewrites
                    damage.extend(exc.diagnostics)
                    store.append(decoded.Store(decoded.path_for(lab_dir), None, None, {}, exists=False))
                    requests, _, _ = real.stored_context(store[0], text, chat, at)
                    return requests, None, list(damage)
            requests, data, problems = real.stored_context(store[0], text, chat, at)
            return requests, data, [] if damage else problems

        return read_sampling(reader, ("sampling",), stored)

    def models(self, lab: Lab) -> tuple[ModelUse, ...]:
        requests = tuple(r for c in (lab.spec.contexts if lab.spec else ()) for r in c.requests)
        return (ModelUse(real.MODEL, requests),) if requests else ()

    def read_question(self, reader: Reader, where: tuple, qtype: str, qid: str, spec: SamplingSpec) -> KindQuestion | None:
        written = reader.string(where + ("context",), required=False, multiline=False)
        context = spec.context(written or spec.default_context)
        if context is None:
            reader.error(where + ("context",), f"unknown context {written!r}"
                         f"{did_you_mean(written, [c.id for c in spec.contexts])}; contexts are declared under "
                         f"'sampling' in lab.yaml")
            return None
        if context.model and not context.words:  # its stored result is missing: already an error at the context
            return None
        cond_text = reader.string(where + ("condition",), multiline=False)
        condition = read_condition(reader, where + ("condition",), cond_text, 0, context.words) if cond_text else None
        choices: list[int] = []
        items = reader.sequence(where + ("choices",)) or []
        for i, _ in enumerate(items):
            index = read_temperature(reader, where + ("choices", i), spec.temperatures)
            if index is not None and index in choices:
                reader.error(where + ("choices", i), f"T = {format_t(spec.temperatures[index])} is listed twice")
            elif index is not None:
                choices.append(index)
        if items and not 2 <= len(items) <= 6:
            reader.error(where + ("choices",), f"a dial question offers 2 to 6 temperatures, not {len(items)}")
            return None
        if condition is None or len(choices) != len(items) or not choices:
            return None
        probs = decoding.softmax(context.logits, [spec.temperatures[i] for i in choices])  # [choices, n]
        results = [evaluate(condition, row)[0] for row in probs]
        found = "; ".join(f"at T = {format_t(spec.temperatures[i])}, {describe(condition, row, context.words)}"
                          for i, row in zip(choices, probs))
        if not any(results) or all(results):
            reader.error(where + ("condition",), f"{'no' if not any(results) else 'every'} choice satisfies "
                         f"{cond_text!r}, so the question has {'no right' if not any(results) else 'no wrong'} "
                         f"answer: {found}")
            return None
        if reader.value(where + ("answer",)) is not None:
            answer_where = where + ("answer",)
            listed = reader.value(answer_where)
            wheres = [answer_where + (i,) for i in range(len(listed))] if isinstance(listed, list) else [answer_where]
            answer = [read_temperature(reader, w, spec.temperatures) for w in wheres]
            if None in answer:
                return None
            right = {choices[j] for j, ok in enumerate(results) if ok}
            if set(answer) - set(choices):
                reader.error(answer_where, "the answer must be one of the choices")
                return None
            if set(answer) != right:
                shown = ", ".join(format_t(spec.temperatures[i]) for i in sorted(answer))
                truly = ", ".join(format_t(spec.temperatures[i]) for i in sorted(right))
                reader.error(answer_where, f"answer key {shown} is wrong: {cond_text!r} holds at T = {truly} "
                                           f"({found})")
                return None
        options = []
        for j, (index, row, ok) in enumerate(zip(choices, probs, results)):
            t = format_t(spec.temperatures[index])
            why = html.escape(describe(condition, row, context.words, shown=True))
            options.append(Option(f"{qid}-t{j}", f"T = {t}", f"T = {t}", ok, why[:1].upper() + why[1:] + "."))
        match = "any" if sum(results) > 1 else "all"
        return KindQuestion(tuple(options), DialQuestion(context.id, tuple(choices), cond_text), match)

    def compute(self, lab: Lab, options: Mapping[str, Any]) -> Computed:
        spec: SamplingSpec = lab.spec
        return Computed(payload=compute_payload(spec), problems=check_claims(spec))

    def page(self, lab: Lab, payload: Any) -> PageData:
        """A real context's tail (the other tokens' parts, as runs) is a file the page loads on the
        first cut, and its top tokens' parts at every temperature another (``rows_src``), loaded
        as soon as the learner reaches for a control: a first visit carries the parts of the one
        row the dial opens on, and each context's tokens and logits (the menu, the arithmetic)."""
        tails = {c["id"]: c["tail"] for c in payload["contexts"] if "tail" in c}
        payload = {**payload, "acts": live.acts(self.name)}
        if not tails:
            return PageData(payload)
        name, script = lazy_script("sampling-tail.js", "samplingTail", tails)
        rows = {c["id"]: c["p"] for c in payload["contexts"] if "tail" in c}
        first = (payload["default"]["context"], payload["default"]["t"])

        def opening(c):  # the parts the dial opens on; null where they load with the rows
            return [row if (c["id"], t) == first else None for t, row in enumerate(c["p"])]

        rows_name, rows_script = lazy_script("sampling-rows.js", "samplingRows", rows)
        embedded = {**payload, "tail_src": name, "rows_src": rows_name, "live": live.page_part(self.name),
                    "contexts": [{k: opening(c) if k == "p" and c["id"] in rows else v for k, v in c.items() if k != "tail"}
                                 for c in payload["contexts"]]}
        return PageData(embedded, {name: script, rows_name: rows_script})

    def shared_files(self) -> Mapping[str, bytes]:
        """The dial's acts, and "Your prompt"'s code and styles (static/later/): none on a first visit."""
        return live.files()

    def site_files(self, labs: Sequence[Lab], options: Mapping[str, Any], store: Path | None) -> Mapping[str, bytes]:
        """The decoder's runtime and weights, once per site, when a lab samples from the model and
        the model is fetched (a build without it still builds; the page then says why)."""
        return live.site_files(any(c.model for lab in labs if lab.spec for c in lab.spec.contexts))

    def jsonld_question_type(self, qtype: str) -> str:
        return "Multiple choice"

    def scaffold(self, slug: str, title: str) -> Mapping[str, str]:
        return {"lab.yaml": LAB_YAML, "questions": QUESTIONS}


LAB_YAML = """\
legend:
  - term: Logit
    meaning: the model's raw score for a word
  - term: Temperature
    meaning: divides the logits before the softmax

sampling:
  prompt: Turn the dial and watch the bars.
  temperatures: {min: 0.1, max: 3, step: 0.1}
  default: {context: example, temperature: 1}
  contexts:
    - id: example
      text: The cat sat on the
      # Hand-written scores (the page says so). Without `logits`, a context is SmolLM2's real
      # next-token distribution: run `labs decode` to store it (docs/kinds/sampling.md).
      logits: {mat: 4.1, sofa: 3.2, floor: 2.9, roof: 1.5, moon: -0.5}
      claims:
        - at T=0.5: mat >= 75%
"""

QUESTIONS = """\
  - type: dial
    prompt: Which temperature gives **mat** at least 75%?
    context: example
    condition: mat >= 75%
    choices: [0.5, 1, 2]
    answer: 0.5
"""
