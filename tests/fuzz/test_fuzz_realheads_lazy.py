"""Fuzz over lab 07's real-heads file, read the way a build reads it: its numbers left as text
until used, the stored head finder report read when its key matches (cache.load_cache_arrays with
``lazy``, headreport). Each case changes a few bytes of one line (an entry's numbers or words, a
shown sentence's or a finder-only one's, the report, the drift figures) and compares the build's
reading with a reading that decodes and checks every number first: the same error at the same
line, or the same numbers, report and 8-bit figure. The lazy reading may skip work, never a check."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from generator.content import load_lab, load_site
from generator.errors import BuildError, ContentError
from generator.kinds.attention import cache as cachefile, inpage, realmodel
from generator.kinds.attention.headfinder import model_sentences, sentence_text

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261207
CASES = 80


def _same(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


def _read(spec, widget, lazy: bool, monkeypatch) -> tuple:
    """What the build's compute reads from the file: ('error', diagnostics) or ('ok', payload,
    notes, the 8-bit figure)."""
    monkeypatch.setattr(cachefile, "_LOADED", [])
    load = cachefile.load_cache_arrays
    with monkeypatch.context() as m:
        if not lazy:  # every number decoded and checked before anything reads them
            m.setattr(cachefile, "load_cache_arrays", lambda path, lazy=False: load(path))
        try:
            payload, notes, by_text = realmodel.compute_real(spec, widget, None)
            figure = inpage.accuracy(spec, widget, payload["sha256"], by_text)
        except ContentError as exc:
            return ("error", [(d.path, d.line, d.column, d.message) for d in exc.diagnostics])
        except BuildError as exc:
            return ("build-error", str(exc))
    return ("ok", payload, notes, figure)


def _mutations(text: str, shown: set[str], finder: set[str]) -> list[tuple[str, str]]:
    """(what, the file's text with one change), CASES of them, the same every run."""
    rng = random.Random(SEED)
    lines = text.split("\n")
    places = {"shown": [], "finder": [], "report": [], "drift": []}
    for i, line in enumerate(lines):
        if line.startswith('"report": '):
            places["report"].append(i)
        elif line.startswith('"') and ': {"attention":' in line:
            sentence = line[1:line.index('": {"attention":')]
            places["shown" if sentence in shown else "finder" if sentence in finder else "drift"].append(i)
        elif line.startswith('"') and line.rstrip(",")[-1:].isdigit():
            places["drift"].append(i)
    cases = []
    kinds = ("digit", "delete", "insert", "swap", "words")
    for n in range(CASES):
        where = ("shown", "finder", "report", "drift")[n % 4]
        i = rng.choice(places[where])
        line = lines[i]
        how = kinds[rng.randrange(len(kinds))]
        if how == "words" and '"words":' in line:
            at = line.index('"words":') + len('"words":["') + rng.randrange(3)
        elif '"attention":[[[[' in line and how != "words":
            at = line.index('"attention":[[[[') + len('"attention":[[[[') + rng.randrange(2000)
        else:
            at = rng.randrange(1, len(line) - 1)
        if how == "digit":
            at = next((k for k in range(at, len(line)) if line[k].isdigit()), at)
            new = line[:at] + str((int(line[at]) + 1 + rng.randrange(9)) % 10 if line[at].isdigit() else 7) + line[at + 1:]
        elif how == "delete":
            new = line[:at] + line[at + 1:]
        elif how == "insert":
            new = line[:at] + rng.choice("[],0123456789 \"x") + line[at:]
        elif how == "swap":
            new = line[:at] + line[at + 1:at + 2] + line[at:at + 1] + line[at + 2:]
        else:  # a word's letter
            new = line[:at] + ("Q" if line[at] != "Q" else "R") + line[at + 1:]
        if new != line:
            cases.append((f"{where}-{how}-line{i + 1}-at{at}", "\n".join([*lines[:i], new, *lines[i + 1:]])))
    return cases


@pytest.fixture(scope="module")
def lab07(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lazy")
    shutil.copytree(ROOT / "content", folder / "content")
    lab, problems = load_lab(load_site(folder / "content"), "attention")
    assert lab is not None and not problems, problems
    return lab


def test_the_build_reads_every_changed_file_as_a_reading_that_checks_every_number_first(lab07, monkeypatch):
    spec, widget = lab07.spec.model, lab07.spec.widget
    path = spec.cache
    text = path.read_text(encoding="utf-8")
    shown = {sentence_text(s) for s in model_sentences(widget)}
    finder = {sentence_text(s) for s in spec.finder_sentences}
    outcomes: dict[str, int] = {}
    try:
        assert _read(spec, widget, True, monkeypatch)[0] == "ok"
        cases = _mutations(text, shown, finder)
        assert len(cases) >= CASES * 0.9
        for name, mutated in cases:
            path.write_text(mutated, encoding="utf-8")
            lazy, careful = _read(spec, widget, True, monkeypatch), _read(spec, widget, False, monkeypatch)
            assert _same(lazy, careful), (name, lazy[:2], careful[:2])
            if lazy[0] == "error":
                assert all(line >= 1 for _, line, _, _ in lazy[1]), (name, lazy)
            outcomes[lazy[0]] = outcomes.get(lazy[0], 0) + 1
    finally:
        path.write_text(text, encoding="utf-8")
    # The corpus reaches both outcomes: changes the file's checks refuse, and changes they accept.
    assert outcomes.get("error", 0) >= 10 and outcomes.get("ok", 0) >= 10, outcomes
