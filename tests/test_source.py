"""Reading authored files: UTF-8 text and YAML with positions."""

from __future__ import annotations

import pytest

from generator.errors import ContentError, Diagnostics
from generator.source import Reader, load_yaml, read_text


def _only(exc: pytest.ExceptionInfo) -> str:
    assert len(exc.value.diagnostics) == 1, exc.value.diagnostics
    return str(exc.value.diagnostics[0])


def test_missing_file(tmp_path):
    with pytest.raises(ContentError) as exc:
        read_text(tmp_path / "nope.yaml", tmp_path)
    assert _only(exc) == "nope.yaml:1:1: error: file not found"


def test_folder_where_a_file_should_be(tmp_path):
    (tmp_path / "quiz.yaml").mkdir()
    with pytest.raises(ContentError) as exc:
        read_text(tmp_path / "quiz.yaml", tmp_path)
    assert _only(exc) == "quiz.yaml:1:1: error: expected a file but found a folder"


def test_non_utf8_points_at_the_byte(tmp_path):
    (tmp_path / "a.md").write_bytes(b"line one\ncaf\xe9 au lait\n")
    with pytest.raises(ContentError) as exc:
        read_text(tmp_path / "a.md", tmp_path)
    assert _only(exc) == "a.md:2:4: error: file is not valid UTF-8 (byte 0xe9); save it as UTF-8"


@pytest.mark.parametrize("text", ["", "  \n\n"], ids=["empty", "blank"])
def test_empty_file(tmp_path, text):
    (tmp_path / "a.yaml").write_text(text)
    with pytest.raises(ContentError) as exc:
        read_text(tmp_path / "a.yaml", tmp_path)
    assert _only(exc) == "a.yaml:1:1: error: file is empty"


def test_bom_is_dropped(tmp_path):
    (tmp_path / "a.md").write_bytes("\ufeffhello".encode())
    assert read_text(tmp_path / "a.md") == "hello"


def test_yaml_syntax_error_position(tmp_path):
    (tmp_path / "a.yaml").write_text("title: ok\nitems: [1, 2\nnext: 3\n")
    with pytest.raises(ContentError) as exc:
        load_yaml(tmp_path / "a.yaml", tmp_path)
    message = _only(exc)
    assert message.startswith("a.yaml:2:8: error: invalid YAML:"), message  # the '[' never closed


TAB = "a tab character here; YAML indents with spaces only"


INDENT = "this line is indented differently from the lines above it; a key lines up with the other keys"


@pytest.mark.parametrize("text, where, message", [
    pytest.param("a: 1\n\tb: 2\n", "2:1", TAB, id="tab-before-a-key"),
    pytest.param("a:\n  - x\n\t- y\n", "3:1", TAB, id="tab-before-a-list-item"),
    pytest.param("a: 1\nc:\n  \t- 1\n", "3:3", TAB, id="tab-after-spaces"),
    pytest.param("a: 1\nb\nc: 2\n", "2:1", "this line has no ':'", id="line-without-colon"),
    pytest.param("a:\n  b: 1\n  c\n  d: 2\n", "3:3", "this line has no ':'", id="nested-line-without-colon"),
    pytest.param('a: "unclosed\nb: 2\n', "1:4", "this quoted value is never closed", id="unclosed-quote"),
    pytest.param("a: [1, 2\nb: 2\n", "1:4", "did not find expected ',' or ']'", id="unclosed-bracket"),
    pytest.param("a:\n  - x\n - y\nb: 1\n", "3:2", INDENT, id="under-indented-item"),
    # libyaml's "mapping values are not allowed" and "expected <block end>" say nothing of indentation
    pytest.param("title: x\ndescription: y\n topics: []\n", "3:8", INDENT, id="key-indented-one-space-too-far"),
    pytest.param("a:\n  b: 1\n c: 2\n", "3:2", INDENT, id="key-between-two-indents"),
    pytest.param("a:\n  - x\n - y\n", "3:2", INDENT, id="item-between-two-indents"),
    pytest.param("a: b: c\n", "1:5", INDENT, id="value-holding-colon-space"),
])
def test_yaml_syntax_errors_name_a_tab_and_point_at_the_wrong_line(tmp_path, text, where, message):
    path = tmp_path / "a.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ContentError) as exc:
        load_yaml(path, tmp_path)
    assert str(exc.value).startswith(f"a.yaml:{where}: error: invalid YAML: {message}"), str(exc.value)


def test_a_tab_inside_a_quoted_value_is_fine(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text('a: "x\ty"\n', encoding="utf-8")
    assert load_yaml(path, tmp_path).data == {"a": "x\ty"}


def test_duplicate_key_is_an_error(tmp_path):
    (tmp_path / "a.yaml").write_text("title: one\nother: 2\ntitle: two\n")
    with pytest.raises(ContentError) as exc:
        load_yaml(tmp_path / "a.yaml", tmp_path)
    assert _only(exc) == "a.yaml:3:1: error: duplicate key 'title'"


def test_yaml_is_loaded_safely(tmp_path):
    (tmp_path / "a.yaml").write_text("x: !!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(ContentError) as exc:
        load_yaml(tmp_path / "a.yaml", tmp_path)
    assert _only(exc) == "a.yaml:1:4: error: YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed; write plain values"


def _reader(tmp_path, text):
    (tmp_path / "a.yaml").write_text(text)
    diags = Diagnostics()
    return Reader(load_yaml(tmp_path / "a.yaml", tmp_path), diags), diags


def test_unknown_key_suggests_the_closest(tmp_path):
    r, diags = _reader(tmp_path, "title: x\ntagilne: y\n")
    r.mapping((), required=("title",), optional=("tagline",))
    assert [str(d) for d in diags.items] == ["a.yaml:2:1: error: unknown key 'tagilne' (did you mean 'tagline'?)"]


def test_missing_required_key(tmp_path):
    r, diags = _reader(tmp_path, "items:\n  - a: 1\n")
    r.mapping(("items", 0), required=("a", "b"))
    assert [str(d) for d in diags.items] == ["a.yaml:2:5: error: missing required key 'b' in item 1 of 'items'"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("v: yes\n", "yes"), ("v: 07\n", "07"), ("v: 1.50\n", "1.50"), ("v: 'quoted'\n", "quoted")],
    ids=["yes-stays-text", "leading-zero", "float-as-written", "quoted"],
)
def test_plain_scalars_are_text_as_written(tmp_path, text, expected):
    r, diags = _reader(tmp_path, text)
    assert r.string(("v",)) == expected
    assert not diags


def test_wrong_type_and_empty_text(tmp_path):
    r, diags = _reader(tmp_path, "a: [1]\nb: ''\nc: x\n")
    assert r.string(("a",)) is None
    assert r.string(("b",)) is None
    assert r.integer(("c",)) is None
    assert [str(d) for d in diags.items] == [
        "a.yaml:1:4: error: 'a' must be text, not a list",
        "a.yaml:2:4: error: 'b' must not be empty",
        "a.yaml:3:4: error: 'c' must be a whole number, not text",
    ]


def test_locate_finds_a_word_inside_a_value(tmp_path):
    r, _ = _reader(tmp_path, "s:\n  text: The cat sat on the mat\n")
    assert r.doc.locate(("s", "text"), "the", 1) == (2, 24)
    assert r.doc.locate(("s", "text"), "cat") == (2, 13)


@pytest.mark.parametrize("text", ["extra: &x [*x]\n", "a: &v [1, 2]\nb: *v\n"], ids=["recursive", "reused"])
def test_yaml_aliases_are_refused_at_the_anchor(tmp_path, text):
    (tmp_path / "a.yaml").write_text(text)
    with pytest.raises(ContentError) as exc:
        load_yaml(tmp_path / "a.yaml", tmp_path)
    message = _only(exc)
    assert message.startswith(f"a.yaml:{text.count(chr(10), 0, text.index('&'))+1}:")
    assert "reused through a YAML alias" in message


_SCALARS = ["yes", "No", "~", "null", "", "1", "0x1F", "0o17", "1_000", "-3", "1.5", ".inf", "-.Inf", ".nan", "1e3",
            "2001-12-14", "2001-12-14t21:59:43.10-05:00", "true", "FALSE", "on", "07", "0b101", "+12", "1:20", "a",
            "'q'", '"x"', "685.230_15e+03", "190:20:30.15", "!!str 3", "!!int 3", "!!bool yes", "!!float 1"]


def test_scalars_are_read_as_pyyaml_constructs_them(tmp_path):
    import math

    import yaml

    (tmp_path / "a.yaml").write_text("".join(f"k{i}: {v}\n" for i, v in enumerate(_SCALARS)))
    doc = load_yaml(tmp_path / "a.yaml", tmp_path)
    expected = yaml.load((tmp_path / "a.yaml").read_text(), Loader=yaml.SafeLoader)
    for key, value in expected.items():
        if isinstance(value, float) and not math.isfinite(value):  # text to us (see _walk)
            continue
        assert (doc.data[key], type(doc.data[key])) == (value, type(value)), key
