"""Rendering helpers: the JSON-for-script serialiser, asset fingerprints and parts kept for later."""

from __future__ import annotations

import json
import re

import jinja2
import pytest
from bs4 import BeautifulSoup

from generator.errors import BuildError
from generator.kinds.helpers import EncodedArray, fingerprint, json_for_script, minified
from generator.theme import Theme, later


def test_json_for_script_cannot_close_the_script_element():
    text = str(json_for_script({"s": "</script><script>alert(1)</script>", "amp": "a & b"}))
    assert "</script" not in text and "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"s": "</script><script>alert(1)</script>", "amp": "a & b"}


def test_json_for_script_escapes_line_separators():
    text = str(json_for_script({"s": "a\u2028b\u2029c"}))
    assert "\u2028" not in text and "\u2029" not in text
    assert json.loads(text)["s"] == "a\u2028b\u2029c"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")], ids=["nan", "inf", "-inf"])
def test_json_for_script_refuses_nan(bad):
    with pytest.raises(BuildError):
        json_for_script({"x": [1.0, bad]})


def test_json_for_script_is_deterministic():
    assert str(json_for_script({"b": 1, "a": [0.1, 2]})) == '{"a":[0.1,2],"b":1}'


def test_fingerprint_changes_with_content():
    a, b = fingerprint("site.css", b"x"), fingerprint("site.css", b"y")
    assert a != b and a.startswith("site.") and a.endswith(".css") and len(a) == len("site.12345678.css")


@pytest.mark.parametrize("name, text, expected", [
    ("a.js", "var  a = 1 ;  /* c */\n", "var a=1;"),
    ("a.css", "a  {  color : red ; }\n", "a{color:red}"),
], ids=["js", "css"])
def test_minified_is_the_minifier_s_output_and_follows_the_file(tmp_path, name, text, expected):
    import os

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert minified(path) == expected and minified(path) == expected
    path.write_text(text.replace("1", "22").replace("red", "blue"), encoding="utf-8")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))  # a later edit
    assert minified(path) == expected.replace("1", "22").replace("red", "blue")


def test_an_encoded_array_is_written_as_its_text_and_only_as_a_whole():
    import numpy as np

    a = np.arange(12, dtype=np.int16).reshape(2, 2, 3)
    text = json.dumps(a.tolist(), separators=(",", ":"))
    encoded = EncodedArray.of(a, text)
    data = {"b": [encoded, {"c": encoded[1]}], "a": "x"}
    assert json_for_script(data) == json_for_script({"b": [a.tolist(), {"c": a[1].tolist()}], "a": "x"})
    assert not encoded.flags.writeable and (encoded + 1).json is None
    mark = json.loads(str(json_for_script({"k": encoded, "s": "x"})).replace(text, '"?"'))
    assert mark == {"k": "?", "s": "x"}
    from generator import webfiles as helpers

    # A string in the data that looks like the stand-in for the text is written as it is.
    tricky = {"k": encoded, "s": helpers._ENCODED_MARK + "0"}
    assert json.loads(json_for_script(tricky)) == {"k": a.tolist(), "s": helpers._ENCODED_MARK + "0"}


def test_later_wraps_a_part_in_a_noscript_that_only_its_own_end_closes():
    # Sanitised Markdown may keep "<" in an attribute value; with JavaScript a browser reads a
    # <noscript> as text up to the first "</noscript", so that one must not end the part early.
    part = '<p><abbr title="</NoScript><img src=x>">y</abbr> a &lt;/noscript&gt; b</p>'
    text = str(later(part))
    assert text.startswith("<noscript data-later>") and text.endswith("</noscript>")
    assert [m.start() for m in re.finditer("</noscript", text, re.IGNORECASE)] == [len(text) - len("</noscript>")]
    inner = BeautifulSoup(text[len("<noscript data-later>"):-len("</noscript>")], "html.parser")
    assert inner.abbr["title"] == "</NoScript><img src=x>" and inner.find("img") is None
    assert inner.p.get_text() == "y a </noscript> b"


def test_later_names_the_script_a_part_brings():
    assert str(later("<p>x</p>", 'a/"q".js')) == '<noscript data-later data-script="a/&#34;q&#34;.js"><p>x</p></noscript>'


def test_a_template_is_compiled_once_a_process_and_again_when_its_source_changes(tmp_path, monkeypatch):
    """A second Theme renders with the code the first compiled (builds in one process: labs serve,
    the tests); a template edited under the same path is compiled anew and renders its new text."""
    from generator import theme as theme_module

    compiled = []
    compile_ = jinja2.Environment.compile
    monkeypatch.setattr(theme_module, "_COMPILED", theme_module._CompiledOnce())
    monkeypatch.setattr(jinja2.Environment, "compile",
                        lambda env, source, name=None, *a, **k: (compiled.append(name), compile_(env, source, name, *a, **k))[1])
    page = tmp_path / "custom" / "templates" / "mine.html"
    page.parent.mkdir(parents=True)
    page.write_text("one {{ x }}", encoding="utf-8")
    assert Theme(tmp_path / "custom").render("mine.html", x=1) == "one 1"
    assert Theme(tmp_path / "custom").render("mine.html", x=2) == "one 2"
    assert compiled == ["mine.html"]
    page.write_text("two {{ x }}", encoding="utf-8")
    assert Theme(tmp_path / "custom").render("mine.html", x=3) == "two 3"
    assert compiled == ["mine.html", "mine.html"]
