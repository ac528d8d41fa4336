"""The spotlight's numbers: rounded lists made for many arrays at once, and the JSON text they carry."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.errors import BuildError
from generator.kinds.attention.numbers import TABLE_RANGE, Numbers, as_json, rounded_list, rounded_lists
from generator.kinds.helpers import JSONText, compact_json, json_for_script


def one_at_a_time(a, decimals, mask=None) -> list:
    """The rounding as it was written for one array at a time: the reference for rounded_lists."""
    rounded = np.round(np.asarray(a, dtype=np.float64), decimals) + 0.0
    if mask is not None:
        rounded = np.where(mask, rounded, np.nan)
    out = rounded.astype(object)
    whole = np.isfinite(rounded) & (rounded == np.floor(rounded))
    out[whole] = rounded[whole].astype(np.int64).astype(object)
    out[np.isnan(rounded)] = None
    return out.tolist()


EDGES = [0.0, -0.0, 0.0005, -0.0005, 0.00049, 2.5, -7.0, 1e15, -1e15, 123456.789, 1e-5, 16.384, -16.384, 16.3845,
         TABLE_RANGE / 1000 + 0.001, 0.1 + 0.2, 1 / 3]
numbers = st.one_of(st.floats(-1e6, 1e6), st.floats(-20, 20), st.integers(-200, 200).map(lambda k: k / 8),
                    st.sampled_from(EDGES))
shapes = st.one_of(st.tuples(st.integers(0, 6)), st.tuples(st.integers(0, 6), st.integers(0, 6)),
                   st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)))


@st.composite
def arrays(draw):
    shape = draw(shapes)
    size = int(np.prod(shape))
    a = np.array(draw(st.lists(numbers, min_size=size, max_size=size)), dtype=np.float64).reshape(shape)
    mask = None
    if draw(st.booleans()):
        mask = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)), dtype=bool).reshape(shape)
    return a, mask


def test_the_edges_are_written_as_json_writes_them():
    for decimals in range(7):
        got = rounded_list(np.array([EDGES, EDGES[::-1]]), decimals)
        assert got == one_at_a_time(np.array([EDGES, EDGES[::-1]]), decimals)
        if decimals <= 4:
            assert got.json == json.dumps(got, separators=(",", ":"))


@settings(max_examples=300, deadline=None)
@given(st.lists(arrays(), max_size=8), st.integers(0, 6))
def test_rounded_lists_are_each_array_rounded_alone_and_carry_their_json(items, decimals):
    lists = rounded_lists(items, decimals)
    alone = [one_at_a_time(a, decimals, mask) for a, mask in items]
    assert json.dumps(lists) == json.dumps(alone)  # None and ints where the one-at-a-time code had them
    assert [type(x) for x in _flat(lists)] == [type(x) for x in _flat(alone)]
    for got, (a, _) in zip(lists, items, strict=True):
        assert isinstance(got, Numbers)
        if got.json is not None:
            assert got.json == json.dumps(got, separators=(",", ":"))
        else:  # declined: more decimals than the table knows, an empty or a three-dimensional array
            assert decimals > 4 or a.size == 0 or a.ndim == 3


def _flat(x):
    for item in x:
        if isinstance(item, list):
            yield from _flat(item)
        else:
            yield item


def test_an_infinity_gets_no_text_and_the_page_refuses_it_as_before():
    got = rounded_list(np.array([[1.0, np.inf]]), 3)
    assert got.json is None and as_json(got) is got
    with pytest.raises(BuildError, match="cannot embed data"):
        json_for_script({"x": as_json(got)})


def test_the_page_writes_the_carried_text_where_the_list_was():
    data = {"b": as_json(rounded_list(np.array([[0.25, 1.0], [2.0, -0.125]]), 3)), "a": "</script>"}
    assert str(json_for_script(data)) == '{"a":"\\u003c/script\\u003e","b":[[0.25,1],[2,-0.125]]}'
    assert compact_json(data) == '{"b":[[0.25,1],[2,-0.125]],"a":"</script>"}'


def test_a_string_that_looks_like_the_mark_does_not_confuse_it():
    from generator.webfiles import _ENCODED_MARK

    data = {"s": f"{_ENCODED_MARK}0", "n": JSONText("[1,2]")}
    assert json.loads(str(json_for_script(data))) == {"s": f"{_ENCODED_MARK}0", "n": [1, 2]}


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_numbers_keep_their_text_through_pickle_and_copy(protocol):
    numbers = rounded_list(np.array([[0.5, 1.0], [2.25, -3.0]]), 3)
    for other in (pickle.loads(pickle.dumps(numbers, protocol=protocol)), copy.deepcopy(numbers), copy.copy(numbers)):
        assert type(other) is Numbers and other == numbers and other.json == numbers.json == "[[0.5,1],[2.25,-3]]"
