"""Reading authored files: text that must be UTF-8, and YAML that remembers where each value stood.

YAML is composed with PyYAML's *safe* loader into nodes (never constructing objects), then
walked into plain Python values while recording the line and column of every key and value.
Validation asks a :class:`Reader` for typed values by path — ``("sentences", 2, "text")`` —
and every complaint it makes carries the exact ``file:line:col`` of the offending text.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from generator.errors import ContentError, Diagnostic, Diagnostics, did_you_mean, display_path
from generator.yamlerrors import unclosed_quote, yaml_syntax_error
from generator.filepolicy import file_problem, link_outside, named_folder, outside_problem, regular_problem, walk_once  # noqa: F401 (re-exported)

Where = tuple  # a path into a YAML document: keys (str) and indexes (int)


def _line_col(text: str, index: int) -> tuple[int, int]:
    """1-based line and column (in characters) of ``text[index]``."""
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _diag(path: str, text: str, line: int, column: int, message: str, lines: list[str] | None = None) -> Diagnostic:
    """A diagnostic quoting its line of ``text`` (``lines``: text.splitlines(), if already made)."""
    lines = text.splitlines() if lines is None else lines
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    return Diagnostic(path, line, column, message, source_line)


def read_text(path: Path, root: Path | None = None, *, allow_empty: bool = False, inside: Path | None = None) -> str:
    """The UTF-8 text of ``path``; a :class:`ContentError` for a missing, unreadable,
    non-UTF-8 or empty file, or a folder where a file should be. With ``inside`` (the content
    folder), also for a file reached through a symbolic link that leads out of it."""
    def shown() -> str:  # only when there is an error to report: it resolves the path
        return display_path(path, root)

    problem = file_problem(path, inside, root)  # before opening it: a FIFO would block, /dev/zero never end
    if problem is not None:
        raise ContentError([problem])
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ContentError([Diagnostic(shown(), 1, 1, "file not found")]) from None
    except IsADirectoryError:
        raise ContentError([Diagnostic(shown(), 1, 1, "expected a file but found a folder")]) from None
    except OSError as exc:
        if path.is_dir():
            raise ContentError([Diagnostic(shown(), 1, 1, "expected a file but found a folder")]) from None
        raise ContentError([Diagnostic(shown(), 1, 1, f"cannot read file: {exc.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        # In characters, like every other column we print (the text before the bad byte is valid UTF-8).
        column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8").removeprefix("\ufeff")) + 1
        raise ContentError(
            [Diagnostic(shown(), line, column, f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save it as UTF-8")]
        ) from None
    text = text.removeprefix("\ufeff")
    nul = text.find("\0")
    if nul >= 0:  # a NUL byte: binary data or a broken save; YAML refuses it, Markdown would hide it
        line, column = _line_col(text, nul)
        raise ContentError([_diag(shown(), text, line, column, "a NUL byte (U+0000) is not allowed in a text file; "
                                                               "remove it")])
    if not allow_empty and not text.strip():
        raise ContentError([Diagnostic(shown(), 1, 1, "file is empty")])
    return text


@dataclass
class YamlDoc:
    """A parsed YAML file: plain data plus the position of every key and value."""

    path: str  # as shown to the author
    text: str
    data: Any
    value_marks: dict[Where, yaml.Mark] = field(default_factory=dict)
    value_ends: dict[Where, yaml.Mark] = field(default_factory=dict)
    key_marks: dict[Where, yaml.Mark] = field(default_factory=dict)
    raw: dict[Where, str] = field(default_factory=dict)  # source text of plain scalars
    styles: dict[Where, str | None] = field(default_factory=dict)

    def position(self, where: Where, *, key: bool = False) -> tuple[int, int]:
        """1-based (line, column) of the value (or its key) at ``where``; the nearest parent if absent."""
        marks = self.key_marks if key else self.value_marks
        probe = tuple(where)
        while probe:
            if probe in marks:
                m = marks[probe]
                return m.line + 1, m.column + 1
            if not key and probe in self.key_marks:
                m = self.key_marks[probe]
                return m.line + 1, m.column + 1
            probe = probe[:-1]
        m = self.value_marks.get((), None)
        return (m.line + 1, m.column + 1) if m else (1, 1)

    def locate(self, where: Where, needle: str, occurrence: int = 1) -> tuple[int, int]:
        """Position of the ``occurrence``-th ``needle`` inside the source text of the value at ``where``."""
        start, end = self.value_marks.get(tuple(where)), self.value_ends.get(tuple(where))
        if start is None or end is None:
            return self.position(where)
        chunk = self.text[start.index : end.index]
        at = -1
        for _ in range(occurrence):
            at = chunk.find(needle, at + 1)
            if at < 0:
                return self.position(where)
        index = start.index + at
        line = self.text.count("\n", 0, index) + 1
        column = index - (self.text.rfind("\n", 0, index) + 1) + 1
        return line, column

    @cached_property
    def lines(self) -> list[str]:
        """The text's lines, made once: a lab kind may make many diagnostics (for claims checked later)."""
        return self.text.splitlines()

    def diagnostic(self, where: Where, message: str, *, key: bool = False) -> Diagnostic:
        line, column = self.position(where, key=key)
        return _diag(self.path, self.text, line, column, message, self.lines)

    def diagnostic_at(self, line: int, column: int, message: str) -> Diagnostic:
        return _diag(self.path, self.text, line, column, message, self.lines)


# libyaml's safe parser is much faster than the pure-Python one and gives the same marks
# (line, column and index count characters); PyYAML wheels ship it.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp")}
_STR = "tag:yaml.org,2002:str"
_SCALAR_CONSTRUCTORS = {tag: yaml.constructor.SafeConstructor.yaml_constructors[tag]
                        for tag in (f"tag:yaml.org,2002:{t}" for t in ("int", "float", "bool", "null", "timestamp"))}
_CONSTRUCTOR = yaml.constructor.SafeConstructor()  # their functions keep nothing in it


_FLOAT_MAX = int(sys.float_info.max)
_TOO_LARGE = object()


def _walk(doc: YamlDoc, node: yaml.Node, where: Where, diags: Diagnostics, seen: set[int] | None = None) -> Any:
    seen = set() if seen is None else seen
    if id(node) in seen:  # reached a second time: through an alias (*name), maybe recursive
        m = node.start_mark
        diags.add(doc.diagnostic_at(m.line + 1, m.column + 1, "this value is reused through a YAML alias (&name … "
                                    "*name), which lesson files do not support; write it out where it is needed"))
        return None
    seen.add(id(node))
    if node.tag not in _PLAIN_TAGS:
        m = node.start_mark
        diags.add(doc.diagnostic_at(m.line + 1, m.column + 1, f"YAML tag {node.tag!r} is not allowed; write plain values"))
        return None
    doc.value_marks[where] = node.start_mark
    doc.value_ends[where] = node.end_mark
    if isinstance(node, yaml.ScalarNode):
        doc.styles[where] = node.style
        doc.raw[where] = node.value
        if node.tag == _STR:
            value = node.value
        elif node.tag in _SCALAR_CONSTRUCTORS:  # called as construct_object would, without its memo
            try:
                value = _SCALAR_CONSTRUCTORS[node.tag](_CONSTRUCTOR, node)
            except ValueError:  # an integer of more digits than Python converts (4300)
                value = _TOO_LARGE
            if value is _TOO_LARGE or (isinstance(value, int) and not isinstance(value, bool)
                                       and abs(value) > _FLOAT_MAX):
                m = node.start_mark
                diags.add(doc.diagnostic_at(m.line + 1, m.column + 1, "this number is too large: a number in a lab "
                                            "must be at most about 1.8e308 (the largest a float holds)"))
                return None
        else:  # A fresh constructor: a shared one keeps every node it ever built.
            value = yaml.constructor.SafeConstructor().construct_object(node, deep=True)
        if isinstance(value, float) and not math.isfinite(value):
            value = node.value  # '.nan'/'.inf' are text to us, never numbers
        return value
    if isinstance(node, yaml.SequenceNode):
        return [_walk(doc, item, where + (i,), diags, seen) for i, item in enumerate(node.value)]
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                diags.add(doc.diagnostic_at(key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                                            "a key must be plain text"))
                continue
            key = key_node.value
            if key in out:
                diags.add(doc.diagnostic_at(key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                                            f"duplicate key {key!r}"))
                continue
            doc.key_marks[where + (key,)] = key_node.start_mark
            out[key] = _walk(doc, value_node, where + (key,), diags, seen)
        return out
    raise AssertionError(f"unknown YAML node {node!r}")


def load_yaml(path: Path, root: Path | None = None, *, inside: Path | None = None) -> YamlDoc:
    """Parse ``path`` safely. Raises :class:`ContentError` with the position of any syntax error
    (or, with ``inside``, for a file reached through a link out of that folder)."""
    text = read_text(path, root, inside=inside)
    shown = display_path(path, root)
    try:
        node = yaml.compose(text, Loader=_SAFE_LOADER)
    except yaml.MarkedYAMLError as exc:
        line, column, message = yaml_syntax_error(exc, text)
        opened = unclosed_quote(text, line) if "tab character" not in message else None
        if opened is not None and opened[0] < line:  # a quote left open earlier ran on to here
            message = (f"invalid YAML: this quote is not closed on its line (the YAML parser only noticed at "
                       f"line {line}: {exc.problem or exc.context or 'invalid YAML'})")
            line, column = opened
        raise ContentError([_diag(shown, text, line, column, message)]) from None
    except yaml.reader.ReaderError as exc:  # a control character the reader refuses, at its place
        char = exc.character if isinstance(exc.character, str) else chr(exc.character)
        at = text.find(char)  # libyaml's position counts bytes; the first such character is the one refused
        line, column = _line_col(text, at) if at >= 0 else (1, 1)
        raise ContentError([_diag(shown, text, line, column, f"invalid YAML: the control character "
                                  f"U+{ord(char):04X} is not allowed; remove it")]) from None
    except yaml.YAMLError as exc:
        raise ContentError([_diag(shown, text, 1, 1, f"invalid YAML: {' '.join(str(exc).split())}")]) from None
    doc = YamlDoc(shown, text, None)
    if node is None:
        raise ContentError([_diag(shown, text, 1, 1, "file has no YAML content")])
    diags = Diagnostics()
    doc.data = _walk(doc, node, (), diags)
    diags.raise_if_any()
    return doc


_TYPE_NAMES = {dict: "a mapping", list: "a list", str: "text", int: "a whole number", bool: "true or false"}


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


# The control characters a text may not hold: C0 but tab and newline, DEL and C1.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Reader:
    """Typed, positioned access to a :class:`YamlDoc`. Each getter records a diagnostic and
    returns ``None`` on a mistake, so validation goes on and reports every error of a run.
    ``content``: the content folder the document belongs to (None: not known), which every
    folder it names (:meth:`folder`) must stay inside."""

    def __init__(self, doc: YamlDoc, diags: Diagnostics, content: Path | None = None):
        self.doc = doc
        self.diags = diags
        self.content = content

    def folder(self, where: Where, base: Path, what: str) -> Path | None:
        """The folder the text at ``where`` names relative to ``base``, resolved; None after an
        error at ``where`` (:func:`generator.filepolicy.named_folder` says what is refused)."""
        written = self.string(where, multiline=False)
        if written is None:
            return None
        folder, problem = named_folder(written, base, self.content, what)
        if problem is not None:
            self.error(where, problem)
        return folder

    def value(self, where: Where) -> Any:
        node: Any = self.doc.data
        for part in where:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                return None
        return node

    def error(self, where: Where, message: str, *, key: bool = False) -> None:
        self.diags.add(self.doc.diagnostic(where, message, key=key))

    def error_at(self, line: int, column: int, message: str) -> None:
        self.diags.add(self.doc.diagnostic_at(line, column, message))

    def mapping(self, where: Where, required: tuple[str, ...] = (), optional: tuple[str, ...] = ()) -> dict | None:
        """The mapping at ``where``; unknown keys and missing required keys are errors."""
        value = self.value(where)
        label = _label(where)
        if not isinstance(value, dict):
            self.error(where, f"{label} must be a mapping of keys to values, not {_kind(value)}")
            return None
        allowed = set(required) | set(optional)
        for key in value:
            if key not in allowed:
                hint = did_you_mean(key, allowed) or f" (allowed: {', '.join(sorted(allowed))})"
                self.error(where + (key,), f"unknown key {key!r}{hint}", key=True)
        for key in required:
            if key not in value:
                self.error(where, f"missing required key {key!r} in {label}")
        return value

    def string(self, where: Where, *, required: bool = True, multiline: bool = True) -> str | None:
        """Text at ``where``. Plain scalars are taken as written, so ``yes`` or ``07`` stay text."""
        value = self.value(where)
        if value is None and (where in self.doc.raw and self.doc.raw[where].strip() not in ("", "~", "null", "Null", "NULL")):
            value = self.doc.raw[where]
        if value is None:
            if required:
                if where in self.doc.value_marks:
                    self.error(where, f"{_label(where)} must not be empty")
            return None
        if isinstance(value, (dict, list)):
            self.error(where, f"{_label(where)} must be text, not {_kind(value)}")
            return None
        text = self.doc.raw.get(where, str(value)) if not isinstance(value, str) else value
        control = _CONTROL.search(text)
        if control:  # from an escape such as "\0", "\a" or "\x1b": it would reach <title> as it is
            self.error(where, f"{_label(where)} holds the control character U+{ord(control.group()):04X} "
                              "(written as an escape); remove it")
            return None
        if not text.strip():
            self.error(where, f"{_label(where)} must not be empty")
            return None
        if not multiline and "\n" in text.strip():
            self.error(where, f"{_label(where)} must be a single line")
            return None
        return text.strip() if not multiline else text

    def integer(self, where: Where, *, required: bool = True, minimum: int | None = None,
                maximum: int | None = None) -> int | None:
        value = self.value(where)
        if value is None:
            if required and where in self.doc.value_marks:  # written, but empty or null
                self.error(where, f"{_label(where)} must be a whole number, not nothing")
            return None
        digits = value.strip() if isinstance(value, str) else ""
        if digits.isascii() and digits.isdigit() and len(digits) <= 18:  # ASCII only: '٧' and '²' are not 7 and 2
            value = int(digits)
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(where, f"{_label(where)} must be a whole number, not {_kind(value)}")
            return None
        if minimum is not None and value < minimum:
            self.error(where, f"{_label(where)} must be at least {minimum}")
            return None
        if maximum is not None and value > maximum:
            self.error(where, f"{_label(where)} must be at most {maximum}")
            return None
        return value

    def boolean(self, where: Where) -> bool | None:
        value = self.value(where)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.error(where, f"{_label(where)} must be true or false, not {_kind(value)}")
            return None
        return value

    def sequence(self, where: Where, *, nonempty: bool = True) -> list | None:
        value = self.value(where)
        if value is None and where not in self.doc.value_marks:
            return None
        if not isinstance(value, list):
            self.error(where, f"{_label(where)} must be a list, not {_kind(value)}")
            return None
        if nonempty and not value:
            self.error(where, f"{_label(where)} must not be an empty list")
            return None
        return value


def _label(where: Where) -> str:
    """How an author would name the value at ``where``: 'title', item 2 of 'options', …"""
    if not where:
        return "the document"
    last = where[-1]
    if isinstance(last, int):
        parent = next((p for p in reversed(where[:-1]) if isinstance(p, str)), None)
        return f"item {last + 1} of '{parent}'" if parent else f"item {last + 1}"
    return f"'{last}'"
