"""The next-token kind: inside a real language model's forward pass — every token's probability and
surprise, the text's cross-entropy and perplexity, the logit lens where each token was predicted,
causal attention with shared key/value heads, and the KV cache step by step with its size by formula.

Author-facing syntax (``lab.yaml``; docs/kinds/next-token.md has every key)::

    next-token:
      prompt: Click a token to see what the model expected there.   # optional, one line
      texts:                                   # required, 1 to 6
        - id: capital                          # lower-case letters, digits, '-', '_'; unique
          text: The capital of France is Paris.
          note: A fact the model has seen many times.   # optional
      default: {text: capital, token: " Paris"}  # optional: the text and token the page opens on;
                                               # default: the first text, and the guess after it
      cache:                                   # optional
        text: capital                          # the prompt stepped through (default: the first text)
        steps: 6                               # tokens decoded after it, greedily (1 to 12; default 6)
        bytes: 2                               # bytes per value in the size table (1, 2 or 4; default 2)
        tokens: [8192, 131072]                 # the table's context lengths (default these two)
        models:                                # published configs, for the size by formula (0 to 4)
          - {id: llama-3.1-8b, name: Llama 3.1 8B, layers: 32, heads: 32, kv_heads: 8, head_dim: 128,
             context: 131072, source: "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"}
      your-text: true                          # optional: offer to load the model (130 MB) and score
                                               # the learner's own text in the page (default false)
      claims:                                  # optional, checked at build (reading.CLAIM_FORMS)
        - perplexity of "capital" < 30
        - after "capital", " Paris" is the top guess from layer 30 on

The numbers come from the NumPy decoder (:mod:`generator.models.llama`, SmolLM2-135M-Instruct's
GGUF) through :mod:`.compute`, one record per text, and the claims and answer keys are checked
against those records (:mod:`.claims`, :mod:`.questions`). The learner's own text is scored in the
page by the same GGUF (:mod:`generator.runtime`, its decoder), loaded only when the learner asks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from generator.kinds import (Computed, ContentError, Diagnostic, KindQuestion, Lab, LabKind, ModelUse,
                             PageData, Reader)
from generator.kinds.helpers import lazy_script
from generator.kinds.nexttoken import payload as pages
from generator.kinds.nexttoken import questions, records
from generator.kinds.nexttoken.claims import Numbers, check_claims
from generator.kinds.nexttoken.reading import MODEL, NextTokenSpec, read_next_token
from generator.runtime import decoded


def _numbers(spec: NextTokenSpec) -> tuple[Numbers | None, list[Diagnostic]]:
    try:
        return records.numbers(spec), []
    except ContentError as exc:
        return None, list(exc.diagnostics)


def _layout_problems(spec: NextTokenSpec, nums: Numbers) -> list[Diagnostic]:
    """What the author wrote that the model's shape or the texts' tokens contradict."""
    problems = []
    _, why = pages.default_position(spec, nums)
    if why:
        problems.append(replace(spec.at, message=f"default: {why}"))
    return problems


class NextTokenKind(LabKind):
    keys = ("next-token",)
    required = ("next-token",)
    question_types = ("surprise", "cache-size")
    question_keys = {"surprise": (("text",), ("answer",)),
                     "cache-size": (("tokens", "choices"), ("model", "answer"))}
    shuffled_question_types = ("cache-size",)  # sizes to pick from; a surprise question keeps the text's order
    widget_title = "Inside the forward pass"
    description = ("a real language model's next-token probabilities, perplexity, logit lens, causal attention "
                   "and KV cache")

    def read(self, reader: Reader, lab_dir: Path) -> NextTokenSpec | None:
        return read_next_token(reader, ("next-token",), lab_dir)

    def read_question(self, reader: Reader, where: tuple, qtype: str, qid: str, spec: NextTokenSpec) -> KindQuestion | None:
        if spec is None:
            return None
        nums, _ = _numbers(spec)  # compute() reports why they are missing, so the page is never built unchecked
        if qtype == "surprise":
            return questions.read_surprise(reader, where, qid, spec, nums)
        return questions.read_cache_size(reader, where, qid, spec, nums)

    def compute(self, lab: Lab, options: Mapping[str, Any]) -> Computed:
        spec: NextTokenSpec = lab.spec
        nums, problems = _numbers(spec)
        if nums is None:
            raise ContentError(problems)
        problems = _layout_problems(spec, nums)
        if problems:
            raise ContentError(problems)
        lens = {t.id: pages.lens_file(nums.texts[t.id]) for t in spec.texts}
        attention = {t.id: nums.attention[t.id]["weights"] for t in spec.texts}
        return Computed(payload={**pages.payload(spec, nums), "lens_files": lens, "attention_files": attention},
                        problems=check_claims(spec, nums))

    def page(self, lab: Lab, payload: Any) -> PageData:
        data = {k: v for k, v in payload.items() if k not in ("lens_files", "attention_files")}
        files: dict[str, bytes] = {}
        for key, variable in (("lens_files", "nextTokenLens"), ("attention_files", "nextTokenAttention")):
            names = []
            for i, (ident, content) in enumerate(payload[key].items()):  # texts' order: Labs.data.<variable><i>
                name, script = lazy_script(f"{key.split('_')[0]}-{ident}.js", f"{variable}{i}", content)
                files[name] = script
                names.append(name)
            data[key] = names
        if lab.spec.your_text:
            data["live"] = _live()
        return PageData(data, files)

    def site_files(self, labs: Sequence[Lab], options: Mapping[str, Any], store: Path | None) -> Mapping[str, bytes]:
        path = _model_path()
        if path is None or not any(lab.spec.your_text for lab in labs):
            return {}
        from generator.runtime.site import decoder_site_files

        return decoder_site_files(path)

    def compute_inputs(self, lab: Lab, options: Mapping[str, Any]) -> tuple[bytes, Sequence[Path]]:
        data, _ = super().compute_inputs(lab, options)
        return data, (decoded.path_for(lab.spec.lab_dir),)

    def models(self, lab: Lab) -> Sequence[ModelUse]:
        return (ModelUse(MODEL, tuple(records.requests(lab.spec))),)

    def jsonld_question_type(self, qtype: str) -> str:
        return "Multiple choice"

    def scaffold(self, slug: str, title: str) -> Mapping[str, str]:
        # The example's results, computed by `labs decode` like any lab's, so the new lab builds at once.
        stored = (Path(__file__).parent / "scaffold-decoded.json").read_text(encoding="utf-8")
        return {"lab.yaml": LAB_YAML, "questions": QUESTIONS, decoded.FILE_NAME: stored}


def _model_path() -> Path | None:
    from generator.runtime.site import fetched_decoder

    return fetched_decoder(MODEL)


def _live() -> dict[str, Any]:
    """What the page needs to load the model for the learner's own text, or why it cannot."""
    path = _model_path()
    if path is None:
        return {"reason": f"This copy of the site was built without the model ({MODEL}), so your own text "
                          f"cannot be scored here; the texts above were computed when it was built."}
    from generator.runtime.site import decoder_page_ref

    return decoder_page_ref(path)


LAB_YAML = """\
legend:
  - term: Probability
    meaning: what the model gave a token before seeing it
  - term: Surprise
    meaning: −log₂ of that probability, in bits

next-token:
  prompt: Click a token to see what the model expected there.
  texts:
    - id: capital
      text: The capital of France is Paris.
    - id: fox
      text: The quick brown fox jumps over the lazy dog.
  default: {text: capital, token: " Paris"}
  cache:
    text: capital
    steps: 4
  claims:
    - perplexity of "fox" < 30
    - the cache for 1,000 tokens is 23.0 MB
"""

QUESTIONS = """\
  - type: surprise
    prompt: Which token of **The quick brown fox jumps over the lazy dog.** did the model find least likely?
    text: fox
  - type: cache-size
    prompt: How big is this model's KV cache for 1,000 tokens at 16 bits a value?
    tokens: 1000
    choices: [2.3 MB, 23 MB, 230 MB]
"""
