"""What a YAML syntax error means, in words an author can act on, at the line that is wrong.

libyaml reports where its scanner gave up, in its own terms ("mapping values are not allowed
here", "expected <block end>"): often a line or dozens of lines after the mistake, and never
saying that the mistake is a tab, an unclosed quote or a line indented one space too far.
"""

from __future__ import annotations

import re

import yaml

# libyaml's words for a line indented otherwise than its neighbours, said as what to do.
_INDENT_HINT = ("invalid YAML: this line is indented differently from the lines above it; a key lines up with the "
                "other keys of its mapping (the same number of spaces), a '- ' item with the other items of its "
                "list, and a value that holds ': ' is put in quotes")

# Where libyaml notices a mistake only on a later line, the line it was scanning is the wrong one:
# a line with no ':' (a mis-indented or unfinished key), an unclosed quote or bracket.
_LOOK_BACK = ("while scanning a simple key", "while scanning a quoted scalar", "while parsing a flow sequence",
              "while parsing a flow mapping", "while scanning a block scalar")


def yaml_syntax_error(exc: yaml.MarkedYAMLError, text: str) -> tuple[int, int, str]:
    """Line, column and message for a YAML syntax error: at the line that is wrong, naming a tab
    when one is in the way (YAML forbids tabs in indentation, and libyaml's message never says so)."""
    mark = exc.problem_mark or exc.context_mark
    context = exc.context_mark
    if mark is not None and context is not None and exc.context in _LOOK_BACK and context.line < mark.line:
        mark = context
    line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    problem = exc.problem or exc.context or "invalid YAML"
    lines = text.split("\n")
    for number in dict.fromkeys(m.line for m in (exc.problem_mark, context) if m is not None):
        source = lines[number] if number < len(lines) else ""
        indent = source[: len(source) - len(source.lstrip(" \t"))]
        at = indent.find("\t") if "\t" in indent else (source.find("\t") if "cannot start any token" in problem else -1)
        if at >= 0:
            return number + 1, at + 1, ("invalid YAML: a tab character here; YAML indents with spaces only — "
                                        "replace the tab with spaces")
    if exc.context == "while scanning a quoted scalar" and mark is context:
        return line, column, "invalid YAML: this quoted value is never closed"
    if exc.context == "while scanning a simple key" and mark is context:
        return line, column, ("invalid YAML: this line has no ':' — a key needs one, and a line that continues "
                              "a value must be indented more than its key")
    if ("mapping values are not allowed" in problem or problem.startswith("expected <block end>")
            or (problem == "did not find expected key" and exc.context == "while parsing a block mapping")):
        return line, column, f"{_INDENT_HINT} (the YAML parser says: {problem})"
    return line, column, f"invalid YAML: {problem}"


_QUOTED_VALUE = re.compile(r"""\s*(?:-\s+)*(?:[^\s#'"\-][^#]*?:\s+)?(["'])""")


def unclosed_quote(text: str, last_line: int) -> tuple[int, int] | None:
    """The first line up to ``last_line`` whose value opens a quote that it does not close, as
    (line, column of the quote). Lesson files write quoted values on one line; libyaml reports
    an unclosed one where it gave up, often dozens of lines later."""
    for number, line in enumerate(text.split("\n")[:last_line], start=1):
        m = _QUOTED_VALUE.match(line)
        if m is None:
            continue
        quote, i = m.group(1), m.end()
        closed = False
        while i < len(line):
            if quote == '"' and line[i] == "\\":
                i += 2
                continue
            if line[i] == quote:
                if quote == "'" and line[i + 1 : i + 2] == "'":  # '' is an escaped quote
                    i += 2
                    continue
                closed = True
                break
            i += 1
        if not closed:
            return number, m.start(1) + 1
    return None
