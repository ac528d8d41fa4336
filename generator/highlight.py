"""Fenced code highlighted exactly as Python-Markdown's codehilite does it, for less.

codehilite builds a Pygments lexer and an HTML formatter for every block (the formatter alone is a
tenth of a block's cost), and Pygments' regex lexers try a state's rules one after the other from
Python — the Python lexer makes some forty attempts per token. Here the lexer and formatter for
our configuration are made once per process, and each state's rules are joined into one regular
expression whose first matching alternative names the rule Pygments would have taken (then that
rule's own pattern is matched again, so callbacks get the match they expect). States whose rules
cannot be joined without changing their meaning (back-references, flags of their own) keep
Pygments' loop. tests/test_highlight.py compares the HTML with codehilite's, and the tokens with
Pygments', on many blocks and lexers.
"""

from __future__ import annotations

import re
from functools import partial

from markdown.extensions.codehilite import CodeHilite, CodeHiliteExtension
from pygments import highlight
from pygments.formatters import get_formatter_by_name
from pygments.lexer import RegexLexer
from pygments.lexers import get_lexer_by_name
from pygments.token import Error, Whitespace, _TokenType


class Highlighter:
    """``codehilite`` with ``config``, for fenced blocks without attributes or hl_lines."""

    def __init__(self, config: dict):
        local = CodeHiliteExtension(**config).getConfigs()  # as the fenced-code step copies it
        self._make = partial(CodeHilite, style=local.pop("pygments_style", "default"), **local)
        probe = self._make("")
        self.options = probe.options
        # Only the plain case is done here; anything else is left to codehilite itself.
        self.plain = (probe.use_pygments and not probe.guess_lang and isinstance(probe.pygments_formatter, str))
        self.formatter = get_formatter_by_name(probe.pygments_formatter, **self.options) if self.plain else None
        self.lexers: dict[str | None, object] = {}

    def html(self, code: str, lang: str | None) -> str:
        """What ``CodeHilite(code, lang=lang, …).hilite(shebang=False)`` returns."""
        if not self.plain:
            return self._make(code, lang=lang).hilite(shebang=False)
        if lang not in self.lexers:
            try:
                lexer = get_lexer_by_name(lang, **self.options)
            except ValueError:  # (guess_lang is off)
                lexer = get_lexer_by_name("text", **self.options)
            if type(lexer).get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed:
                lexer.get_tokens_unprocessed = partial(_tokens, lexer)
            self.lexers[lang] = lexer
        return highlight(code.strip("\n"), self.lexers[lang], self.formatter)


_JOINED: dict[tuple[type, str], tuple | None] = {}
_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")
_BACK_REFERENCE = re.compile(r"\\[1-9]|\(\?P=")


def _joined(lexer_class: type, state: str, rules: list) -> tuple | None:
    """(match, {group: rule index}) for one regular expression trying ``rules`` in order, or None."""
    key = (lexer_class, state)
    if key not in _JOINED:
        _JOINED[key] = None
        patterns, flags = [], getattr(lexer_class, "flags", None)
        for rexmatch, _, _ in rules:
            pattern = rexmatch.__self__.pattern
            if not isinstance(flags, int) or re.compile(pattern, flags).flags != rexmatch.__self__.flags:
                return None  # not compiled with the lexer's flags
            own = _GLOBAL_FLAGS.match(pattern)
            if own:  # "(?i)rest" means "(?i:rest)" for the rule alone
                pattern = f"(?{own.group(1)}:{pattern[own.end():]})"
            if _BACK_REFERENCE.search(pattern):
                return None
            patterns.append(pattern)
        if not rules:
            return None
        try:
            joined = re.compile("|".join(f"({p})" for p in patterns), flags)
        except re.error:
            return None
        groups, at = {}, 1
        for index, rule in enumerate(rules):
            groups[at] = index
            at += 1 + rule[0].__self__.groups
        if at - 1 != joined.groups:
            return None
        _JOINED[key] = (joined.match, groups)
    return _JOINED[key]


def _tokens(lexer, text, stack=("root",)):
    """``RegexLexer.get_tokens_unprocessed`` (Pygments 2), each state's rules tried in one match."""
    pos = 0
    tokendefs = lexer._tokens
    statestack = list(stack)
    statetokens = tokendefs[statestack[-1]]
    while 1:
        joined = _joined(type(lexer), statestack[-1], statetokens)
        if joined is not None:
            found = joined[0](text, pos)
            candidates = (statetokens[joined[1][found.lastindex]],) if found else ()
        else:
            candidates = statetokens
        for rexmatch, action, new_state in candidates:
            m = rexmatch(text, pos)
            if m:
                if action is not None:
                    if type(action) is _TokenType:
                        yield pos, action, m.group()
                    else:
                        yield from action(lexer, m)
                pos = m.end()
                if new_state is not None:
                    # state transition
                    if isinstance(new_state, tuple):
                        for state in new_state:
                            if state == '#pop':
                                if len(statestack) > 1:
                                    statestack.pop()
                            elif state == '#push':
                                statestack.append(statestack[-1])
                            else:
                                statestack.append(state)
                    elif isinstance(new_state, int):
                        # pop, but keep at least one state on the stack
                        if abs(new_state) >= len(statestack):
                            del statestack[1:]
                        else:
                            del statestack[new_state:]
                    elif new_state == '#push':
                        statestack.append(statestack[-1])
                    else:
                        raise AssertionError(f"wrong state def: {new_state!r}")
                    statetokens = tokendefs[statestack[-1]]
                break
        else:
            # no rule matched here
            try:
                if text[pos] == '\n':
                    # at EOL, reset state to "root"
                    statestack = ['root']
                    statetokens = tokendefs['root']
                    yield pos, Whitespace, '\n'
                    pos += 1
                    continue
                yield pos, Error, text[pos]
                pos += 1
            except IndexError:
                break
