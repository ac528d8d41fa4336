"""generator.pickling: records pickle as the call that makes them, and come back equal."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, fields, is_dataclass

import pytest

from conftest import ROOT

from generator.content import load_site, load_lab
from generator.pickling import pickled_as_call


def _records(obj, seen=None):
    """Every dataclass instance reachable from ``obj`` through fields, tuples, lists and dicts."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if is_dataclass(obj) and not isinstance(obj, type):
        yield obj
        for f in fields(obj):
            yield from _records(getattr(obj, f.name), seen)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _records(x, seen)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _records(x, seen)


@pytest.mark.parametrize("content", ["project", "repo"])
def test_a_loaded_lab_comes_back_from_pickle_equal_field_by_field(content, request):
    source = load_site(ROOT / "content" if content == "repo" else request.getfixturevalue("project") / "content")
    for slug in source.order:
        lab = load_lab(source, slug)
        back = pickle.loads(pickle.dumps(lab, pickle.HIGHEST_PROTOCOL))
        assert back == lab
        before, after = list(_records(lab)), list(_records(back))
        assert [type(r) for r in after] == [type(r) for r in before] and len(before) > 10
        for a, b in zip(before, after):  # fields that do not take part in == (a diagnostic's source line) too
            assert [getattr(a, f.name) for f in fields(a)] == [getattr(b, f.name) for f in fields(b)]


def test_the_lab_records_pickle_as_calls_not_as_dataclass_state():
    source = load_site(ROOT / "content")  # lab 07: words, a finder's relations, a quiz
    lab = load_lab(source, "attention")
    slotted = {type(r) for r in _records(lab) if hasattr(type(r), "__slots__")}
    assert {"Lab", "Word", "Relation", "Option"} <= {c.__name__ for c in slotted}
    for cls in slotted:
        record = next(r for r in _records(lab) if type(r) is cls)
        made, values = record.__reduce__()
        assert made is cls and values == tuple(getattr(record, f.name) for f in fields(cls)), cls


def test_one_field_records_and_subclasses():
    @pickled_as_call
    @dataclass(frozen=True, slots=True)
    class One:
        x: int

    assert One(3).__reduce__() == (One, (3,))

    @dataclass(frozen=True, slots=True)
    class More(One):
        y: int = 0

    with pytest.raises(TypeError):  # undecorated: the call gets one value short, never a wrong object
        More(1, 2).__reduce__()[0](*More(1, 2).__reduce__()[1][:0])
    assert More(1, 2).__reduce__() == (More, (1,))  # the base's fields only: decorate subclasses too


def test_the_decorator_refuses_a_record_whose_init_changes_its_values():
    @dataclass(frozen=True)
    class Checked:
        x: int

        def __post_init__(self):
            pass

    with pytest.raises(AssertionError):
        pickled_as_call(Checked)
