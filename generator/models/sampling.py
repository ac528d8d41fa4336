"""Seeded sampling from the decoder's next-token distribution, defined so the page can repeat it exactly.

One step, from the logits ``z`` (``[V]``) of the next token, with temperature ``T``, top-k ``k``,
top-p ``p`` (a whole percentage) and a seed:

1. ``T = 0`` is greedy: the most likely token (the lower id among equals); nothing is drawn.
2. Otherwise ``softmax(z / T)`` in float64, the maximum subtracted, turned into whole parts of
   :data:`PARTS` by largest remainder (``decoding.to_parts``).
3. Top-k, then top-p on what top-k kept, on those whole parts (``decoding.cut``: the sampling lab's
   integer rules, so every comparison is exact).
4. A draw with mulberry32, the sampling lab's generator: step ``i`` (counting from 0) takes output
   ``i + 1`` of ``mulberry32(seed)``, ``u``, and picks the first token, in id order, whose running
   total of parts exceeds ``floor(u · total / 2^32)`` (``decoding.draw``). The same seed gives the
   same tokens; JavaScript's ``Labs.code.sampling.mulberry32`` and ``draw`` repeat steps 3-4 bit
   for bit on the same parts.

Whole parts cost a little resolution: a token below half a part (2.4e-7) can only be drawn if
largest remainder rounds it up. The parts of a step, the chosen token's share of them and its
probability under the model (``T = 1``, nothing cut) are all returned, so a page can show them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from generator.models import decoding
from generator.models import llama

# The largest whole total for which u · total (u < 2^32) is an exact integer in a double (< 2^53):
# JavaScript's draw computes floor(u · total / 2^32) in doubles and must land where NumPy does.
PARTS = 2 ** 21


@dataclass(frozen=True)
class Settings:
    """How to sample; the defaults sample the model's own distribution."""

    temperature: float = 1.0  # 0: greedy
    top_k: int = 0  # 0: off
    top_p: int = 100  # whole percent; 100: off
    seed: int = 0  # mulberry32's seed, 0 … 2^32 - 1

    def __post_init__(self) -> None:
        assert self.temperature >= 0, "temperature must be 0 (greedy) or positive"
        assert self.top_k >= 0, "top-k must be 0 (off) or positive"
        assert 1 <= self.top_p <= 100, "top-p is a whole percentage from 1 to 100"
        assert 0 <= self.seed < 2 ** 32, "the seed is an unsigned 32-bit number"


@dataclass(frozen=True)
class Step:
    """One sampled token."""

    token_id: int
    probability: float  # under the model: softmax(z) at T = 1, nothing cut
    share: float  # its share of the parts the draw used (1.0 when greedy)


def step_parts(logits: np.ndarray, settings: Settings) -> np.ndarray:  # [V] -> [V] int64
    """Whole parts of :data:`PARTS` after temperature, top-k and top-p; cut tokens have 0."""
    probs = decoding.softmax(logits, [settings.temperature])[0]  # [V] float64
    return decoding.cut(decoding.to_parts(probs, PARTS), settings.top_k, settings.top_p)


def sample_step(logits: np.ndarray, settings: Settings, step: int) -> Step:  # [V] -> Step
    """Step ``step`` (from 0) of a seeded generation, from the next token's logits."""
    model_p = llama.probabilities(logits)  # [V]
    if settings.temperature == 0:
        token = int(np.argmax(logits))
        return Step(token, float(model_p[token]), 1.0)
    parts = step_parts(logits, settings)
    token = int(decoding.draw(parts, settings.seed, step + 1)[step])
    return Step(token, float(model_p[token]), float(parts[token] / parts.sum()))


@dataclass(frozen=True)
class Generation:
    prompt_ids: tuple[int, ...]
    steps: tuple[Step, ...]
    stopped: str  # "length", or the special token that ended it

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(s.token_id for s in self.steps)


def generate(model: llama.LlamaModel, prompt_ids: Sequence[int], n: int, settings: Settings) -> Generation:
    """Sample up to ``n`` tokens after ``prompt_ids``: one prefill, then one decode step per token
    with the KV cache. Stops early after a control token (``<|im_end|>``, ``<|endoftext|>`` …)."""
    assert n >= 1 and len(prompt_ids) >= 1, "generate needs a prompt and at least one token to sample"
    logits, cache = llama.next_token_logits(model, prompt_ids)
    steps: list[Step] = []
    stopped = "length"
    for i in range(n):
        step = sample_step(logits, settings, i)
        steps.append(step)
        if model.tokenizer.token_types[step.token_id] == 3:  # a control token ends the text
            stopped = model.tokenizer.tokens[step.token_id]
            break
        if i + 1 < n:
            logits, cache = llama.next_token_logits(model, [step.token_id], cache)
    return Generation(prompt_ids=tuple(prompt_ids), steps=tuple(steps), stopped=stopped)
