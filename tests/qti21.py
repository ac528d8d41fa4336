"""What IMS QTI 2.1 requires of the parts of an item and a test that ``labs export qti`` writes,
checked element by element, for tests/test_export.py.

No package registry ships the QTI 2.1 XSD (imsqti_v2p1.xsd), so the export cannot be validated
against it in a test (docs/lms.md says what was searched). This holds the exported documents
instead to the content model of the QTI 2.1 Information Model and XSD for the elements they use:
each element's required and allowed attributes and their value types, the order and number of its
children, which content may stand where (block and inline XHTML in QTI's namespace, MathML in its
own), and that every identifier an item or a test uses is declared. It is written from the
specification, not from the exporter, and knows nothing of what the exporter emits: an element
that is not here is an error, even where QTI would allow it, so the checker grows with the
exporter rather than passing what it does not know.

``problems(root)`` lists what is wrong with an ``assessmentItem`` or an ``assessmentTest``."""

from __future__ import annotations

import re
from xml.etree.ElementTree import Element

QTI = "{http://www.imsglobal.org/xsd/imsqti_v2p1}"
MATHML = "{http://www.w3.org/1998/Math/MathML}"
XSI_LOCATION = "{http://www.w3.org/2001/XMLSchema-instance}schemaLocation"

# Value types of the XSD (imsqti_v2p1.xsd's simple types).
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")  # identifier.Type: an xsd:NCName
BOOLEAN = {"true", "false"}
CARDINALITY = {"single", "multiple", "ordered", "record"}
BASE_TYPE = {"identifier", "boolean", "integer", "float", "string", "point", "pair", "directedPair", "duration",
             "file", "uri", "intOrIdentifier"}


def _integer(v: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", v) is not None


def _float(v: str) -> bool:
    return re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?INF|NaN", v) is not None


TYPES = {"identifier": IDENTIFIER.match, "boolean": BOOLEAN.__contains__, "integer": _integer, "float": _float,
         "cardinality": CARDINALITY.__contains__, "baseType": BASE_TYPE.__contains__, "string": lambda v: True,
         "uri": lambda v: bool(v.strip()), "showHide": {"show", "hide"}.__contains__,
         "navigationMode": {"linear", "nonlinear"}.__contains__,
         "submissionMode": {"individual", "simultaneous"}.__contains__}

# element: (required attributes, optional attributes), each name -> its type.
ATTRIBUTES: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "assessmentItem": ({"identifier": "string", "title": "string", "adaptive": "boolean", "timeDependent": "boolean"},
                       {"label": "string", "toolName": "string", "toolVersion": "string"}),
    "responseDeclaration": ({"identifier": "identifier", "cardinality": "cardinality"}, {"baseType": "baseType"}),
    "outcomeDeclaration": ({"identifier": "identifier", "cardinality": "cardinality"},
                           {"baseType": "baseType", "normalMaximum": "float", "normalMinimum": "float"}),
    "defaultValue": ({}, {"interpretation": "string"}), "correctResponse": ({}, {"interpretation": "string"}),
    "value": ({}, {"fieldIdentifier": "identifier", "baseType": "baseType"}),
    "mapping": ({"defaultValue": "float"}, {"lowerBound": "float", "upperBound": "float"}),
    "mapEntry": ({"mapKey": "string", "mappedValue": "float"}, {"caseSensitive": "boolean"}),
    "itemBody": ({}, {}), "prompt": ({}, {}),
    "choiceInteraction": ({"responseIdentifier": "identifier", "shuffle": "boolean", "maxChoices": "integer"},
                          {"minChoices": "integer"}),
    "simpleChoice": ({"identifier": "identifier"}, {"fixed": "boolean", "templateIdentifier": "identifier",
                                                    "showHide": "showHide"}),
    "responseProcessing": ({}, {"template": "uri", "templateLocation": "uri"}),
    "responseCondition": ({}, {}), "responseIf": ({}, {}), "responseElseIf": ({}, {}), "responseElse": ({}, {}),
    "setOutcomeValue": ({"identifier": "identifier"}, {}),
    "match": ({}, {}), "sum": ({}, {}), "variable": ({"identifier": "identifier"}, {"weightIdentifier": "identifier"}),
    "correct": ({"identifier": "identifier"}, {}), "mapResponse": ({"identifier": "identifier"}, {}),
    "baseValue": ({"baseType": "baseType"}, {}),
    "modalFeedback": ({"outcomeIdentifier": "identifier", "showHide": "showHide", "identifier": "identifier"},
                      {"title": "string"}),
    "assessmentTest": ({"identifier": "string", "title": "string"}, {"toolName": "string", "toolVersion": "string"}),
    "testPart": ({"identifier": "identifier", "navigationMode": "navigationMode", "submissionMode": "submissionMode"}, {}),
    "assessmentSection": ({"identifier": "identifier", "title": "string", "visible": "boolean"},
                          {"required": "boolean", "fixed": "boolean", "keepTogether": "boolean"}),
    "assessmentItemRef": ({"identifier": "identifier", "href": "uri"}, {"category": "string", "required": "boolean",
                                                                      "fixed": "boolean"}),
    "outcomeProcessing": ({}, {}),
    "testVariables": ({"variableIdentifier": "identifier"}, {"weightIdentifier": "identifier", "baseType": "baseType"}),
}

# element: its children as a regular expression over their names, in the XSD's sequence order.
CHILDREN = {
    "assessmentItem": r"(responseDeclaration )*(outcomeDeclaration )*(templateDeclaration )*(templateProcessing )?"
                      r"(stylesheet )*(itemBody )?(responseProcessing )?(modalFeedback )*",
    "responseDeclaration": r"(defaultValue )?(correctResponse )?(mapping )?(areaMapping )?",
    "outcomeDeclaration": r"(defaultValue )?(matchTable |interpolationTable )?",
    "defaultValue": r"(value )+", "correctResponse": r"(value )+", "value": r"", "mapping": r"(mapEntry )+",
    "mapEntry": r"", "choiceInteraction": r"(prompt )?(simpleChoice )+",
    "responseProcessing": r"((responseCondition |setOutcomeValue |exitResponse |lookupOutcomeValue ))*",
    "responseCondition": r"responseIf (responseElseIf )*(responseElse )?",
    "responseIf": r"EXPR ((responseCondition |setOutcomeValue |exitResponse ))*",
    "responseElseIf": r"EXPR ((responseCondition |setOutcomeValue |exitResponse ))*",
    "responseElse": r"((responseCondition |setOutcomeValue |exitResponse ))*",
    "setOutcomeValue": r"EXPR ", "match": r"EXPR EXPR ", "sum": r"(EXPR )+",
    "variable": r"", "correct": r"", "mapResponse": r"", "baseValue": r"", "testVariables": r"",
    "assessmentTest": r"(outcomeDeclaration )*(timeLimits )?(testPart )+(outcomeProcessing )?(testFeedback )*",
    "testPart": r"(preCondition )*(branchRule )*(itemSessionControl )?(timeLimits )?"
                r"((assessmentSection |assessmentSectionRef ))+(testFeedback )*",
    "assessmentSection": r"(preCondition )*(branchRule )*(itemSessionControl )?(timeLimits )?(selection )?"
                         r"(ordering )?(rubricBlock )*((assessmentItemRef |assessmentSection |assessmentSectionRef ))*",
    "assessmentItemRef": r"(preCondition )*(branchRule )*(itemSessionControl )?(timeLimits )?(variableMapping )*"
                         r"(weight )*(templateDefault )*",
    "outcomeProcessing": r"((outcomeCondition |setOutcomeValue |exitTest |lookupOutcomeValue ))*",
}
EXPRESSIONS = {"match", "sum", "variable", "correct", "mapResponse", "baseValue", "testVariables"}

# The XHTML of QTI 2.1's content model (in QTI's namespace): what each element may hold, and the
# attributes each may carry beyond bodyElement's id, class, xml:lang and label.
INLINE = set("a abbr acronym b big br cite code dfn em i img kbd q samp small span strong sub sup tt var".split())
BLOCK = set("address blockquote div dl h1 h2 h3 h4 h5 h6 hr ol p pre table ul".split())
HOLDS = {"inline": INLINE, "block": BLOCK, "flow": INLINE | BLOCK, "li": {"li"}, "dl": {"dt", "dd"},
         "table": {"caption", "col", "colgroup", "thead", "tfoot", "tbody", "tr"}, "rows": {"tr"},
         "cells": {"td", "th"}, "cols": {"col"}, None: set()}
NO_TEXT = {"block", "li", "dl", "table", "rows", "cells", "cols", None}
CONTENT = {"prompt": "inline", "simpleChoice": "flow", "modalFeedback": "flow", "itemBody": "block",
           **{name: "inline" for name in INLINE | {"p", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "address", "dt",
                                                   "caption"}},
           "div": "flow", "li": "flow", "dd": "flow", "td": "flow", "th": "flow", "blockquote": "block",
           "ol": "li", "ul": "li", "dl": "dl", "table": "table", "thead": "rows", "tbody": "rows", "tfoot": "rows",
           "tr": "cells", "colgroup": "cols", "br": None, "img": None, "hr": None, "col": None}
XHTML_ATTRIBUTES = {"a": {"href", "type"}, "img": {"src", "alt", "longdesc", "height", "width"},
                    "q": {"cite"}, "blockquote": {"cite"}, "col": {"span"}, "colgroup": {"span"},
                    "td": {"headers", "scope", "abbr", "axis", "rowspan", "colspan"},
                    "th": {"headers", "scope", "abbr", "axis", "rowspan", "colspan"}, "table": {"summary"}}
BODY_ATTRIBUTES = {"id", "class", "label", "{http://www.w3.org/XML/1998/namespace}lang"}


def _name(element: Element) -> str:
    return element.tag.removeprefix(QTI)


def _attributes(element: Element, where: str) -> list[str]:
    name, found = _name(element), []
    required, optional = ATTRIBUTES[name]
    for attr in required:
        if attr not in element.attrib:
            found.append(f"{where}: {name} lacks its required attribute {attr}")
    for attr, value in element.attrib.items():
        kind = required.get(attr) or optional.get(attr)
        if attr == XSI_LOCATION and name in ("assessmentItem", "assessmentTest"):
            continue
        if kind is None:
            found.append(f"{where}: {name} may not carry {attr}")
        elif not TYPES[kind](value):
            found.append(f"{where}: {name}'s {attr}={value!r} is not of type {kind}")
    return found


def _content(element: Element, model: str | None, where: str) -> list[str]:
    """The XHTML (and MathML) inside ``element``, whose content model is ``model``."""
    found, name = [], _name(element)
    texts = [element.text] + [child.tail for child in element]
    if model in NO_TEXT and any((t or "").strip() for t in texts):
        found.append(f"{where}: text stands directly in {name}, which holds {model or 'nothing'}")
    for child in element:
        if child.tag == MATHML + "math":  # inline math, or display math where a block may stand
            if model not in ("inline", "flow") and not (model == "block" and child.get("display") == "block"):
                found.append(f"{where}: math stands in {name}, which holds {model or 'nothing'}")
            continue
        if not child.tag.startswith(QTI):
            found.append(f"{where}: {child.tag} is in neither QTI's namespace nor MathML's")
            continue
        inner = _name(child)
        if inner == "choiceInteraction" and model == "block":  # a block interaction
            found += check(child, where)
        elif inner not in HOLDS[model]:
            found.append(f"{where}: {inner} may not stand in {name}, which holds {model or 'nothing'}")
        else:
            found += [f"{where}: {inner} may not carry {attr}" for attr in child.attrib
                      if attr not in BODY_ATTRIBUTES | XHTML_ATTRIBUTES.get(inner, set())]
            found += _content(child, CONTENT[inner], where)
    return found


def check(element: Element, where: str) -> list[str]:
    """What is wrong with ``element`` and everything under it."""
    name = _name(element)
    if not element.tag.startswith(QTI) or name not in ATTRIBUTES:
        return [f"{where}: {element.tag} is not an element this checker knows QTI 2.1 to allow here"]
    found = _attributes(element, where)
    if name in CONTENT:  # content: XHTML and MathML
        return found + _content(element, CONTENT[name], where)
    names = "".join(("EXPR" if _name(c) in EXPRESSIONS else _name(c)) + " " for c in element)
    if not re.fullmatch(CHILDREN[name], names):
        found.append(f"{where}: {name}'s children ({names.strip() or 'none'}) break its content model {CHILDREN[name]}")
    if not CHILDREN[name] and (element.text or "").strip() and name not in ("value", "baseValue", "mapEntry"):
        found.append(f"{where}: {name} holds text")
    for child in element:
        found += check(child, where)
    return found


def _declared(root: Element) -> list[str]:
    """Every identifier used is declared, of the right kind, and declared once."""
    where, found = root.get("identifier"), []
    responses = {d.get("identifier"): d for d in root.iter(QTI + "responseDeclaration")}
    outcomes = {d.get("identifier"): d for d in root.iter(QTI + "outcomeDeclaration")}
    declared = [d.get("identifier") for d in root.iter() if d.tag in (QTI + "responseDeclaration", QTI + "outcomeDeclaration")]
    found += [f"{where}: {i} is declared twice" for i in set(declared) if declared.count(i) > 1]
    for e in root.iter():
        name, ident = _name(e), e.get("identifier")
        if name in ("correct", "mapResponse", "choiceInteraction") and (e.get("responseIdentifier") or ident) not in responses:
            found.append(f"{where}: {name} names {e.get('responseIdentifier') or ident}, no response declared")
        if name in ("setOutcomeValue",) and ident not in outcomes:
            found.append(f"{where}: setOutcomeValue names {ident}, no outcome declared")
        if name == "variable" and ident not in responses | outcomes:
            found.append(f"{where}: variable {ident} is not declared")
        if name == "modalFeedback" and outcomes.get(e.get("outcomeIdentifier"), Element("x")).get("baseType") != "identifier":
            found.append(f"{where}: modalFeedback shows on {e.get('outcomeIdentifier')}, not an identifier outcome")
    for d in list(responses.values()) + list(outcomes.values()):
        single = d.get("cardinality") == "single"
        for values in d.findall(QTI + "defaultValue") + d.findall(QTI + "correctResponse"):
            vs = values.findall(QTI + "value")
            if single and len(vs) != 1:
                found.append(f"{where}: {d.get('identifier')} is single but its {_name(values)} has {len(vs)} values")
            found += [f"{where}: {d.get('identifier')}'s value {v.text!r} is not of type {d.get('baseType')}"
                      for v in vs if not TYPES.get(d.get("baseType"), lambda _: True)((v.text or "").strip())]
    choices = [c.get("identifier") for c in root.iter(QTI + "simpleChoice")]
    found += [f"{where}: choice {c} twice" for c in set(choices) if choices.count(c) > 1]
    for d in responses.values():
        for v in d.iter(QTI + "value"):
            if d.get("baseType") == "identifier" and v.text not in choices:
                found.append(f"{where}: the right answer {v.text} is no choice")
    return found


def problems(root: Element) -> list[str]:
    """Everything wrong with an exported ``assessmentItem`` or ``assessmentTest``."""
    if root.tag not in (QTI + "assessmentItem", QTI + "assessmentTest"):
        return [f"the root is {root.tag}, not a QTI 2.1 assessmentItem or assessmentTest"]
    return check(root, root.get("identifier") or "?") + _declared(root)
