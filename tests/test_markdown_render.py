"""Authors' Markdown: highlighting, math, sanitising and internal links."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.prose import markdown_render
from generator.prose.markdown_fast import simple_markdown
from generator.prose.markdown_render import render_markdown
from generator.prose.mathml import MATH_TOKEN_RE, MathState


def test_code_is_highlighted_with_classes_not_styles():
    out = render_markdown("```python\nimport numpy as np\n```\n")
    assert '<div class="codehilite">' in out.html
    assert '<span class="kn">import</span>' in out.html
    assert "style=" not in out.html


def test_inline_and_display_math_become_mathml():
    out = render_markdown("Scale by $\\sqrt{d_k}$.\n\n$$\nQK^\\top\n$$\n")
    assert '<math display="inline"><msqrt>' in out.html  # no xmlns, no outer <mrow>: HTML needs neither
    assert '<div class="math-display"><math' in out.html
    assert "<msqrt>" in out.html
    assert "<p><div" not in out.html


def test_a_formula_alone_in_a_paragraph_stays_inline():
    out = render_markdown("$x^2$\n")
    assert out.html == '<p><math display="inline"><msup><mi>x</mi><mn>2</mn></msup></math></p>'


def test_mathml_writes_plain_characters_but_escapes_markup():
    out = render_markdown("$(a) < b$")
    assert "<mo stretchy=\"false\">(</mo>" in out.html and "&lt;" in out.html


def test_whitespace_spans_of_pygments_are_dropped():
    out = render_markdown("```python\nx = 1\n```\n")
    assert '<span class="w">' not in out.html and '<span class="n">x</span> <span class="o">=</span>' in out.html


def test_dollars_in_code_stay_code():
    out = render_markdown("Use `$x$` literally.")
    assert "<code>$x$</code>" in out.html
    assert "<math" not in out.html


def test_bad_tex_is_reported():
    out = render_markdown("Broken $x^$ here.")
    assert [p.message for p in out.math_problems] == ["cannot convert math $x^$ to MathML: missing super script or subscript"]


def test_raw_html_is_sanitised():
    out = render_markdown('Hi <script>alert(1)</script><b onclick="x()" style="color:red">b</b>'
                          '<iframe src="https://example.org"></iframe>')
    assert "<script" not in out.html and "alert(1)" not in out.html
    assert "onclick" not in out.html and "style=" not in out.html and "<iframe" not in out.html
    assert "<b>b</b>" in out.html


def test_javascript_urls_are_dropped():
    out = render_markdown("[x](javascript:alert(1))")
    assert "javascript:" not in out.html


def test_headings_start_at_h2_with_ids():
    out = render_markdown("# Four moves\n")
    assert out.html.strip() == '<h2 id="four-moves">Four moves</h2>'


def test_internal_links_are_collected_and_rewritten():
    out = render_markdown("See [FAQ](lab:attention#faq) and [hub](topic:llm).",
                          resolve_link=lambda h: "REWRITTEN" if h.startswith(("lab:", "topic:")) else None)
    assert out.links == ["lab:attention#faq", "topic:llm"]
    assert out.html.count('href="REWRITTEN"') == 2


def test_plain_text_for_descriptions():
    out = render_markdown("A **bold** claim & more.")
    assert out.text == "A bold claim & more."


@pytest.mark.parametrize("source, text", [
    (r"Why are the scores divided by $\sqrt{d_k}$ before the softmax?",
     r"Why are the scores divided by \sqrt{d_k} before the softmax?"),
    ("When $a < b$ and $b$ is\n\n$$\nx^2 +\n  y\n$$\n\nthen", r"When a < b and b is x^2 + y then"),
    ("Twice: $d$ and $d$.", "Twice: d and d."),
])
def test_plain_text_keeps_each_formula_as_its_tex(source, text):
    """The plain text (JSON-LD, the search index, a quiz's option texts) reads a formula as the TeX
    it was written in: dropping it made lab 07's question "divided by before the softmax?"."""
    assert render_markdown(source).text == text


_ALPHABET = st.sampled_from(
    list("abc XYZ.,;:'\"!?()-+=#%@^/0123456789é—√Σ*_`[]<>&$\n\\ \u00a0\u2028\x0b\x0c")
    + ["...", "http://x.org", " 1. ", "  ", "www.x.com", "a@b.c", "\r\n", "- ", "# "]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=14).map("".join))
def test_short_texts_come_out_of_the_shortcut_as_out_of_the_converter(source):
    fast = render_markdown(source)
    original = markdown_render.simple_markdown
    markdown_render.simple_markdown = lambda *_: None  # (Hypothesis runs the test many times: no monkeypatch)
    try:
        slow = render_markdown(source)
    finally:
        markdown_render.simple_markdown = original
    assert (fast.html, fast.text, fast.links) == (slow.html, slow.text, slow.links)


def test_the_shortcut_is_taken_for_plain_sentences(monkeypatch):
    monkeypatch.setattr(markdown_render, "_converter", lambda: pytest.fail("converter used for plain text"))
    assert render_markdown("The softmax divides by the total.\n").html == "<p>The softmax divides by the total.</p>"


@pytest.mark.parametrize("tex", [
    r"\text{<script>alert(1)</script>}",
    r"\href{javascript:alert(1)}{x}",
    r"\style{color:red}{x}",
], ids=["text-script", "href-javascript", "style-attribute"])
def test_math_cannot_smuggle_html(tex):
    html = render_markdown(f"${tex}$").html
    assert "<script" not in html and "alert(1)" not in html and "javascript:" not in html
    assert "style=" not in html and "href=" not in html
    assert html.startswith('<p><math display="inline">')


def test_text_in_math_is_escaped():
    html = render_markdown(r"$\text{R&D} a<b$").html
    assert "<mtext>R&amp;D</mtext>" in html and "<mo>&lt;</mo>" in html


# -- input that once crashed or fooled the renderer -------------------------------------------------


def test_a_list_nested_a_thousand_levels_is_refused_at_its_deepest_line():
    from generator.prose.markdown_render import MarkdownLimit

    source = "Intro.\n\n" + "- " * 1000 + "deep\n"  # "- - x" is a list inside a list
    with pytest.raises(MarkdownLimit) as exc:
        render_markdown(source)
    assert exc.value.offset == len("Intro.\n\n")
    assert exc.value.message == "lists or quotes are nested too deeply for the Markdown parser; flatten them"


def test_the_nesting_limit_holds_whatever_the_recursion_limit_and_after_pygments_plugins_load():
    """The limit is measured, not left to the interpreter's recursion limit: a fenced block in an
    unknown language makes Pygments load its plugins (one of them, jedi, raises the recursion
    limit to 3,000), and here the limit is raised to 100,000 besides."""
    import sys

    from generator.prose.markdown_render import MarkdownLimit

    render_markdown("```no-such-language-here\nx\n```\n")  # Pygments looks among its plugins
    source = "Intro.\n\n" + "- " * 1000 + "deep\n"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10**5)
    try:
        with pytest.raises(MarkdownLimit) as exc:
            render_markdown(source)
    finally:
        sys.setrecursionlimit(limit)
    assert (exc.value.offset, exc.value.message) == (len("Intro.\n\n"), _TOO_DEEP)


@pytest.mark.parametrize("shape", [
    lambda n: "".join("    " * i + "- x\n" for i in range(n)),  # the costliest for the parser
    lambda n: "> " * n + "x\n",
    lambda n: "1. " * n + "x\n",
], ids=["indented-lists", "quotes", "inline-lists"])
def test_markdown_nested_up_to_the_limit_renders_and_one_more_level_is_refused(shape):
    from generator.prose.markdown_render import MAX_NESTING, MarkdownLimit, nesting

    assert nesting(shape(MAX_NESTING))[0] <= MAX_NESTING
    html = render_markdown(shape(MAX_NESTING)).html
    assert html.count("<li>") + html.count("<blockquote>") >= MAX_NESTING
    deeper = shape(MAX_NESTING + 1)
    assert nesting(deeper)[0] > MAX_NESTING
    with pytest.raises(MarkdownLimit):
        render_markdown(deeper)


def test_fenced_code_does_not_count_as_nesting():
    from generator.prose.markdown_render import MAX_NESTING

    source = "```\n" + "> " * (MAX_NESTING + 10) + "\n```\n"
    assert "<pre" in render_markdown(source).html


_TOO_DEEP = "lists or quotes are nested too deeply for the Markdown parser; flatten them"


@pytest.mark.parametrize("text", ["\ue000math0\ue001", "<abbr title=\"\ue000math0\ue001\">x</abbr> $x$",
                                  "\ue000math9\ue001"], ids=["bare", "in-an-attribute", "out-of-range"])
def test_the_math_placeholder_characters_are_refused(text):
    from generator.prose.markdown_render import MarkdownLimit

    with pytest.raises(MarkdownLimit) as exc:
        render_markdown(text)
    assert exc.value.message == ("the private-use character U+E000 is reserved for the generator's own use; "
                                 "remove it")


def test_mathml_is_in_place_before_sanitising_and_survives_it():
    html = render_markdown('<abbr title="$x$">a</abbr> and $\\sqrt{d}$ <span onclick="x()">b</span>').html
    assert "<msqrt>" in html and "onclick" not in html
    assert 'title="<math' not in html  # MathML never lands unescaped inside an attribute


@pytest.mark.parametrize("source, problem", [
    pytest.param(r"Root $\sqr{d}$ here", ("\\sqr{d}", 0, "unknown TeX command \\sqr"), id="unknown-command"),
    pytest.param(r"Frac $\frac{a}{b$ x", ("\\frac{a}{b", 8, "this '{' is never closed"), id="unclosed-brace"),
    pytest.param(r"Brace $a}$", ("a}", 1, "this '}' closes nothing"), id="stray-brace"),
    pytest.param("Costs $5 only", ("$5 only", 0, "unclosed $"), id="unclosed-dollar"),
    pytest.param("a\n\n$$\nx^2\n", ("$$", 0, "unclosed $$"), id="unclosed-display-math"),
])
def test_tex_mistakes_are_problems_with_their_offset(source, problem):
    (found,) = render_markdown(source).math_problems
    assert (found.tex.strip(), found.offset) == problem[:2] and problem[2] in found.message


@pytest.mark.parametrize("source, html", [
    pytest.param(r"Price \$5, or \$x\$", "<p>Price $5, or $x$</p>", id="escaped-dollars"),
    pytest.param("US$5 and `$x` in code", "<p>US$5 and <code>$x</code> in code</p>", id="no-math"),
    pytest.param("```\nx = $5\n```", None, id="fenced-code"),
    pytest.param(r"Set \{a\} is $\{a\}$", None, id="escaped-braces"),
])
def test_dollars_and_braces_that_are_not_mistakes(source, html):
    rendered = render_markdown(source)
    assert rendered.math_problems == []
    if html is not None:
        assert rendered.html == html


@pytest.mark.parametrize("html", [
    '<p>a <em>b</em> &amp; c\u00a0d <script>x</script><a href="javascript:y">z</a><a href="lab:x" rel="me">l</a></p>',
    '<div class="math-display"><math display="block"><mi>x</mi><mo>&lt;</mo></math></div><iframe src="x"></iframe>',
    '<p style="color:red" onclick="x()">t<br>u<img src="data:x" alt="a"></p><unknown>v</unknown><!-- c -->',
])
def test_the_reusable_sanitiser_gives_what_nh3_clean_gives(html):
    import nh3

    from generator.prose import sanitise

    policy = dict(tags=sanitise.HTML_TAGS | sanitise.MATHML_TAGS, url_schemes=sanitise.URL_SCHEMES,
                  attributes=sanitise.ALL_ATTRIBUTES, link_rel="noopener noreferrer")
    assert sanitise.clean_html(html) == nh3.clean(html, **policy)
    mathml_policy = dict(tags=sanitise.MATHML_TAGS, attributes=sanitise.MATHML_ATTRIBUTES)
    assert sanitise.clean_mathml(html) == nh3.clean(html, **mathml_policy)


_INLINE = st.sampled_from(
    list("ab XY.,;:'\"!?()-+#%/0é—√“”*_`[]<>&$\n\\ \u00a0") + ["**", "*", "`", "$x$", "$a_1 \\le b$", "$\\sqrt{d}$",
    "[a](lab:x#y)", "[*b* `c`](#d)", "[t](https://x.org/a_b)", "](", "W_Q", "a_b", "\n\n", "\n\n\n", "  \n", "1. ",
    "&amp;", "&c", "- ", "# ", "$$", "```", "x*", "*x", " * ", "***", "~~~", "\t", "\\$", "[TOC]", "$5", "\n- ",
    "\n1. ", "\n2. ", "\n   ", "\n  ", "\n    ", "## ", "\n\n```python\nx = 1  # $y$ <b>\n```\n\n", "\n```\n"]
)


def _with_and_without_shortcuts(source):
    fast = render_markdown(source, lambda href: "R" if href.startswith("lab:") else None)
    original = markdown_render.simple_markdown
    markdown_render.simple_markdown = lambda *_: None
    try:
        slow = render_markdown(source, lambda href: "R" if href.startswith("lab:") else None)
    finally:
        markdown_render.simple_markdown = original
    return [(r.html, r.text, r.links, [(p.tex, p.message, p.offset) for p in r.math_problems]) for r in (fast, slow)]


@settings(max_examples=1500, deadline=None)
@given(st.lists(_INLINE, max_size=16).map("".join))
def test_simple_markdown_shortcut_gives_what_the_converter_gives(source):
    fast, slow = _with_and_without_shortcuts(source)
    assert fast == slow


@pytest.mark.parametrize("source", [
    "A *b* c **d** `e&f` $x$ [l](lab:x#y) W_Q, and *it*” or “**it**”.",
    "First line\nsecond *line*.\n\nA second paragraph with $\\sqrt{d_k}$ and (**strong**).",
    "*em across\nlines* and **strong across\nlines**", "See [**b** and `c`](#anchor) then $a$, $b$.",
    "Intro.\n\n# Moves\n\n1. **One.** $a$ then\n   more *text*\n2. Two [x](lab:y)\n\n## More\n\n- $b$\n  c\n- d",
    "Code:\n\n```python\ndef f(x):  # $x$ & <y>\n\n    return x\n```\n\nAfter $c$.",
    "- $\\frac{1}{$ first\n\nThen $\\sqrt{$ second\n\n1. $\\left($ third",
])
def test_simple_markdown_shortcut_is_taken_and_exact(source, monkeypatch):
    assert simple_markdown(source, MathState(), []) is not None
    fast, slow = _with_and_without_shortcuts(source)
    assert fast == slow


@pytest.mark.parametrize("source", [
    "a *b **c** d*", "a * b * c", "*a", "x_y_ z", "_a_", "`a` `b", "$5 and", "\\*a\\*", "[a]", "[a](b c)",
    "a &amp; b", "a <b>c</b>", "line\n- item", "# Title *em*", "#Title", "# A\n\n# A", "a  \nb", "a\n\n\nb",
    "![i](x.png)", "a | b", "- a\n\n- b", "2. a", "- a\n    b", "- a\n  - b", "1. a\nb", "a\n```\nb\n```",
    "```\nb\n```\nc", "```\n```", "> quote", "&#0", "&#169 x", "a &#x41 b", "&copy;",
])
def test_simple_markdown_shortcut_declines_what_it_does_not_know(source):
    assert simple_markdown(source, MathState(), []) is None


@pytest.mark.parametrize("html", [
    "a &nbsp; b", "<br>", "<p>x</p>", "a<!-- c -->b", "<![CDATA[x<y]]>", "<?pi x?>y", "<svg:rect/>", "&unknown;",
    '<a xlink:href="x">t</a>', "&amp;lt;", "&#39;q&#x27;", "a\r\nb", "a\rb", '<a href="x>y">z</a>', "<!DOCTYPE x>",
    "<p>a</p>\n<p>b</p>", "<x:y xmlns:x='u'>k</x:y>", "<p a='1' a='2'>x</p>", "</div><div>", "<p>\ue000math0\ue001 x</p>",
])
def test_plain_text_reads_what_elementtree_reads(html):
    import xml.etree.ElementTree as etree

    try:
        text = "".join(etree.fromstring(f"<div>{html}</div>").itertext())
    except etree.ParseError:
        text = markdown_render.re.sub(r"<[^>]+>", " ", html)
    text = MATH_TOKEN_RE.sub("", markdown_render.unescape(text))
    assert markdown_render.plain_text(html) == markdown_render.re.sub(r"\s+", " ", text).strip()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("[]()<>x\n") + ["\n\n"]), max_size=40).map("".join))
def test_texts_with_few_brackets_skip_a_scan_that_could_not_refuse_them(source):
    import unittest.mock

    with unittest.mock.patch.object(markdown_render, "MAX_SCAN_CHARS", 60):
        try:
            markdown_render._check_scans(source)
            refused = None
        except markdown_render.MarkdownLimit as exc:
            refused = exc.offset
        try:
            markdown_render.check_limits(source)
            assert refused is None
        except markdown_render.MarkdownLimit as exc:
            assert exc.offset == refused
