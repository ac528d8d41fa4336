"""The ``dot`` lab kind: the dot product and cosine similarity of two small vectors.

A reference for writing a lab kind of your own (see README.md). Its part of lab.yaml::

    dot:
      prompt: Move one number of a and watch the cosine.   # optional, one line above the widget
      a: [3, 1, 2]      # 2 to 8 numbers, each finite and within ±1000
      b: [1, 2, 2]      # as many numbers as a; neither vector all zeros
      cosine: 0.80      # optional: a claim the lab's text relies on, checked to 2 decimals

Hooks: :meth:`DotKind.read` validates that section (every mistake at its ``file:line:col``),
:meth:`DotKind.compute` works out the numbers with NumPy at build and checks the claim, and
:meth:`DotKind.scaffold` gives ``labs new SLUG --kind dot`` its starting lab.yaml. Every other
hook keeps :class:`~generator.kinds.LabKind`'s default: ``page()`` embeds the payload as the
page's ``#lab-data``, which ``static/dot.js`` reads and recomputes as the learner moves a number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from generator.kinds import Computed, Diagnostic, Lab, LabKind, Reader

MIN_SIZE, MAX_SIZE = 2, 8  # a vector a learner can read in one row
MAX_ABS = 1000.0  # numbers a learner can read; also keeps squares far from overflow
CLAIM_TOLERANCE = 0.005  # a claim is written to 2 decimals


@dataclass(frozen=True)
class DotSpec:
    """What :meth:`DotKind.read` returns: picklable, as every spec must be."""

    prompt: str
    a: tuple[float, ...]
    b: tuple[float, ...]
    cosine: float | None = None  # the claimed cosine, if any
    cosine_at: Diagnostic | None = None  # where it is written; the message is filled in if it fails


class DotKind(LabKind):
    keys = ("dot",)
    required = ("dot",)
    widget_title = "Dot product"
    description = "dot product and cosine similarity: move one number, watch the angle (example plugin)"

    def read(self, reader: Reader, lab_dir: Path) -> DotSpec | None:
        where = ("dot",)
        if reader.mapping(where, required=("a", "b"), optional=("prompt", "cosine")) is None:
            return None
        prompt = reader.string(where + ("prompt",), required=False, multiline=False) or ""
        a, b = _vector(reader, where + ("a",)), _vector(reader, where + ("b",))
        claimed = "cosine" in reader.value(where)
        cosine = _number(reader, where + ("cosine",), "'cosine'") if claimed else None
        if cosine is not None and not -1 <= cosine <= 1:
            reader.error(where + ("cosine",), f"a cosine is between -1 and 1, not {cosine:g}")
            return None
        if a is None or b is None or (claimed and cosine is None):
            return None
        if len(a) != len(b):
            reader.error(where + ("b",), f"'b' must have as many numbers as 'a' ({len(a)}), not {len(b)}")
            return None
        at = reader.doc.diagnostic(where + ("cosine",), "") if cosine is not None else None
        return DotSpec(prompt, a, b, cosine, at)

    def compute(self, lab: Lab, options: Mapping[str, Any]) -> Computed:
        spec: DotSpec = lab.spec
        a, b = np.array(spec.a), np.array(spec.b)  # [n], [n]
        dot, norm_a, norm_b = float(a @ b), float(np.linalg.norm(a)), float(np.linalg.norm(b))
        cosine = dot / (norm_a * norm_b)  # read() refused zero vectors
        problems = []
        if spec.cosine is not None and abs(cosine - spec.cosine) > CLAIM_TOLERANCE:
            problems.append(replace(spec.cosine_at, message=f"the cosine of a and b is {cosine:.4f}, "
                                                             f"not {spec.cosine:g} (a · b = {dot:g}, "
                                                             f"|a| = {norm_a:.4f}, |b| = {norm_b:.4f})"))
        payload = {"a": list(spec.a), "b": list(spec.b), "dot": dot, "norm_a": norm_a, "norm_b": norm_b,
                   "cosine": cosine, "range": slider_range(spec.a + spec.b)}
        return Computed(payload, problems)

    def scaffold(self, slug: str, title: str) -> Mapping[str, str]:
        return {"lab.yaml": LAB_YAML}


def slider_range(numbers: tuple[float, ...]) -> dict[str, float]:
    """The slider's bounds and step: twice the largest number either way, in about 100 steps."""
    limit = max(1.0, math.ceil(2 * max(abs(x) for x in numbers)))
    step = 10.0 ** (math.floor(math.log10(limit)) - 1)
    return {"min": -limit, "max": limit, "step": step}


def _number(reader: Reader, where: tuple, what: str) -> float | None:
    """A finite number within ±MAX_ABS at ``where``, else an error there and None."""
    value = reader.value(where)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        # The Reader keeps .inf and .nan as the text they are written as: never numbers.
        shown = repr(reader.doc.raw[where]) if where in reader.doc.raw else "a list or a mapping"
        reader.error(where, f"{what} must be a finite number, not {shown}")
        return None
    if abs(value) > MAX_ABS:
        reader.error(where, f"{what} must be between -{MAX_ABS:g} and {MAX_ABS:g}, not {value:g}")
        return None
    return float(value)


def _vector(reader: Reader, where: tuple) -> tuple[float, ...] | None:
    items = reader.sequence(where)
    if items is None:
        return None
    numbers = [_number(reader, where + (i,), f"number {i + 1} of '{where[-1]}'") for i in range(len(items))]
    if None in numbers:
        return None
    if not MIN_SIZE <= len(numbers) <= MAX_SIZE:
        reader.error(where, f"'{where[-1]}' must have {MIN_SIZE} to {MAX_SIZE} numbers, not {len(numbers)}")
        return None
    if not any(numbers):
        reader.error(where, f"'{where[-1]}' is all zeros: it has no direction, so no cosine")
        return None
    return tuple(numbers)


LAB_YAML = """\
dot:
  prompt: Move one number of a and watch the dot product and the cosine.
  a: [3, 1, 2]
  b: [1, 2, 2]
  # Checked at build: the cosine of a and b, to 2 decimals.
  cosine: 0.80
"""
