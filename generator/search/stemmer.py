"""lunr.js 2.3.9's English stemmer (``lunr.stemmer``), in Python, so that the build cuts a word
exactly as the page does.

lunr.py's own stemmer is Martin Porter's reference Python, and lunr.js's is a variant of the
Porter algorithm with the Porter2 rule for a final ``y`` (step 1c: ``y`` becomes ``i`` only after
a consonant that is not the word's first letter, so "key" stays "key" where lunr.py makes "kei",
and "try" becomes "tri" where lunr.py keeps "try"). An index built with lunr.py's stemmer would
not find "key" typed in the page. This is lunr.js's algorithm line for line: the same regular
expressions, the same order of steps (lunr.js is MIT-licensed: generator/search/vendor/).
tests/test_search.py holds it to lunr.js itself, run in Node, word for word.
"""

from __future__ import annotations

import re

_STEP2 = {"ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize", "bli": "ble",
          "alli": "al", "entli": "ent", "eli": "e", "ousli": "ous", "ization": "ize", "ation": "ate", "ator": "ate",
          "alism": "al", "iveness": "ive", "fulness": "ful", "ousness": "ous", "aliti": "al", "iviti": "ive",
          "biliti": "ble", "logi": "log"}
_STEP3 = {"icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "", "ness": ""}

_c = "[^aeiou]"  # consonant
_v = "[aeiouy]"  # vowel
_C = _c + "[^aeiouy]*"  # consonant sequence
_V = _v + "[aeiou]*"  # vowel sequence
_MGR0 = re.compile("^(" + _C + ")?" + _V + _C)  # [C]VC... is m>0
_MEQ1 = re.compile("^(" + _C + ")?" + _V + _C + "(" + _V + ")?$")  # [C]VC[V] is m=1
_MGR1 = re.compile("^(" + _C + ")?" + _V + _C + _V + _C)  # [C]VCVC... is m>1
_S_V = re.compile("^(" + _C + ")?" + _v)  # vowel in stem

_1A, _1A_2 = re.compile(r"^(.+?)(ss|i)es$"), re.compile(r"^(.+?)([^s])s$")
_1B, _1B_2 = re.compile(r"^(.+?)eed$"), re.compile(r"^(.+?)(ed|ing)$")
_LAST = re.compile(r".$")
_1B_AT, _1B_DOUBLE = re.compile(r"(at|bl|iz)$"), re.compile(r"([^aeiouylsz])\1$")
_CVC = re.compile("^" + _C + _v + "[^aeiouwxy]$")
_1C = re.compile(r"^(.+?[^aeiou])y$")
_2 = re.compile(r"^(.+?)(ational|tional|enci|anci|izer|bli|alli|entli|eli|ousli|ization|ation|ator|alism|iveness"
                r"|fulness|ousness|aliti|iviti|biliti|logi)$")
_3 = re.compile(r"^(.+?)(icate|ative|alize|iciti|ical|ful|ness)$")
_4 = re.compile(r"^(.+?)(al|ance|ence|er|ic|able|ible|ant|ement|ment|ent|ou|ism|ate|iti|ous|ive|ize)$")
_4_2 = re.compile(r"^(.+?)(s|t)(ion)$")
_5, _5_LL = re.compile(r"^(.+?)e$"), re.compile(r"ll$")


def stem(w: str) -> str:
    """The stem lunr.js gives the (lower-case, trimmed) word ``w``."""
    if len(w) < 3:
        return w
    first = w[0]
    if first == "y":
        w = "Y" + w[1:]
    # Step 1a
    if _1A.search(w):
        w = _1A.sub(r"\1\2", w, count=1)
    elif _1A_2.search(w):
        w = _1A_2.sub(r"\1\2", w, count=1)
    # Step 1b
    m = _1B.search(w)
    if m:
        if _MGR0.search(m.group(1)):
            w = _LAST.sub("", w, count=1)
    else:
        m = _1B_2.search(w)
        if m and _S_V.search(m.group(1)):
            w = m.group(1)
            if _1B_AT.search(w):
                w += "e"
            elif _1B_DOUBLE.search(w):
                w = _LAST.sub("", w, count=1)
            elif _CVC.search(w):
                w += "e"
    # Step 1c
    m = _1C.search(w)
    if m:
        w = m.group(1) + "i"
    # Step 2
    m = _2.search(w)
    if m and _MGR0.search(m.group(1)):
        w = m.group(1) + _STEP2[m.group(2)]
    # Step 3
    m = _3.search(w)
    if m and _MGR0.search(m.group(1)):
        w = m.group(1) + _STEP3[m.group(2)]
    # Step 4
    m = _4.search(w)
    if m:
        if _MGR1.search(m.group(1)):
            w = m.group(1)
    else:
        m = _4_2.search(w)
        if m and _MGR1.search(m.group(1) + m.group(2)):
            w = m.group(1) + m.group(2)
    # Step 5
    m = _5.search(w)
    if m:
        s = m.group(1)
        if _MGR1.search(s) or (_MEQ1.search(s) and not _CVC.search(s)):
            w = s
    if _5_LL.search(w) and _MGR1.search(w):
        w = _LAST.sub("", w, count=1)
    if first == "y":
        w = "y" + w[1:]
    return w
