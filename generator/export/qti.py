"""``labs export qti``: each lab's quiz as an IMS QTI 2.1 content package (docs/lms.md).

A package (``<slug>.zip``) holds ``imsmanifest.xml`` (IMS Content Packaging 1.1: one resource per
item, of type ``imsqti_item_xmlv2p1``, and the test, ``imsqti_test_xmlv2p1``), ``assessment.xml``
(an ``assessmentTest`` that lists the items in the page's order and sums their scores) and
``items/<question>.xml``, one ``assessmentItem`` per question:

- ``responseDeclaration`` RESPONSE (identifier; ``single``, or ``multiple`` for tick-all-that-apply)
  with the right choices as its ``correctResponse``; a question right with any one of several
  right choices maps each to 1 (``mapping``), as its ``correctResponse`` can name only one;
- ``outcomeDeclaration`` SCORE (0 or 1), MAXSCORE (1), FEEDBACK (the choices picked, to show what
  is said of each) and EXPLAIN (to show the explanation once answered);
- ``itemBody``: the prompt (a ``prompt`` inside the interaction, or blocks before it when it has
  blocks), the question's context, and one ``choiceInteraction`` of ``simpleChoice`` s in the
  page's order (``shuffle="false"``: the build already chose it; a kind's choices may be the words
  of a sentence);
- ``responseProcessing`` that scores, then sets FEEDBACK and EXPLAIN; ``modalFeedback`` for each
  choice's why and for the explanation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from xml.etree.ElementTree import Element, SubElement, tostring

from generator.export.qtihtml import MATHML, QTI, Converter, blocks_of, is_block, qname
from generator.export.quizpage import PageQuestion
from generator.export.htmltree import text_of

XSI = "http://www.w3.org/2001/XMLSchema-instance"
IMSCP = "http://www.imsglobal.org/xsd/imscp_v1p1"
QTI_SCHEMA = f"{QTI} http://www.imsglobal.org/xsd/qti/qtiv2p1/imsqti_v2p1.xsd"
CP_SCHEMA = (f"{IMSCP} http://www.imsglobal.org/xsd/imscp_v1p1.xsd "
             f"{QTI} http://www.imsglobal.org/xsd/qti/qtiv2p1/imsqti_v2p1.xsd")
ITEM_TYPE, TEST_TYPE = "imsqti_item_xmlv2p1", "imsqti_test_xmlv2p1"
TITLE_CHARS = 120


def identifier(text: str, prefix: str) -> str:
    """An NCName (what QTI's identifiers are) made of ``text``: ``prefix`` + its letters, digits,
    ``_``, ``-`` and ``.``, anything else as ``_``."""
    return prefix + re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def _xml(root: Element, namespace: str, schemas: str) -> bytes:
    """A document whose root declares ``namespace`` as the default one, and XML Schema instance's
    (for ``xsi:schemaLocation``): its elements are written bare, in that namespace."""
    attrs = {"xmlns": namespace, "xmlns:xsi": XSI, "xsi:schemaLocation": schemas, **root.attrib}
    root.attrib.clear()
    root.attrib.update(attrs)
    return tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def _value(parent: Element, tag: str, attrs: dict[str, str], values: Iterable[str]) -> Element:
    holder = SubElement(parent, qname(tag), attrs)
    for v in values:
        SubElement(holder, qname("value")).text = v
    return holder


def _outcome(parent: Element, ident: str, cardinality: str, base: str, default: str | None = None) -> None:
    attrs = {"identifier": ident, "cardinality": cardinality, "baseType": base}
    if default is None:
        SubElement(parent, qname("outcomeDeclaration"), attrs)
    else:
        _value(SubElement(parent, qname("outcomeDeclaration"), attrs), "defaultValue", {}, [default])


def _set(parent: Element, ident: str, expression: Element) -> None:
    SubElement(parent, qname("setOutcomeValue"), {"identifier": ident}).append(expression)


def _float(value: str) -> Element:
    e = Element(qname("baseValue"), {"baseType": "float"})
    e.text = value
    return e


def item(q: PageQuestion, item_id: str, convert: Converter) -> bytes:
    """One question as an ``assessmentItem``."""
    ids: dict[str, str] = {}
    for choice in q.choices:  # unique NCNames, in the page's order
        base = identifier(choice.id, "c_")
        ids[choice.id] = base if base not in ids.values() else f"{base}_{len(ids)}"
    right = [ids[c.id] for c in q.choices if c.correct]
    title = text_of(q.prompt)
    root = Element(qname("assessmentItem"), {
        "identifier": item_id,
        "title": title if len(title) <= TITLE_CHARS else title[:TITLE_CHARS - 1].rstrip() + "…",
        "adaptive": "false", "timeDependent": "false"})
    cardinality = "multiple" if q.multiple else "single"
    response = SubElement(root, qname("responseDeclaration"),
                          {"identifier": "RESPONSE", "cardinality": cardinality, "baseType": "identifier"})
    _value(response, "correctResponse", {}, right[:1] if cardinality == "single" else right)
    if q.match_any:
        mapping = SubElement(response, qname("mapping"), {"defaultValue": "0"})
        for r in right:
            SubElement(mapping, qname("mapEntry"), {"mapKey": r, "mappedValue": "1"})
    _outcome(root, "SCORE", "single", "float", "0")
    _outcome(root, "MAXSCORE", "single", "float", "1")
    _outcome(root, "FEEDBACK", cardinality, "identifier")
    _outcome(root, "EXPLAIN", "single", "identifier")

    body = SubElement(root, qname("itemBody"))
    prompt = convert.into(Element(qname("prompt")), q.prompt)
    inline_prompt = not any(is_block(e) for e in prompt.iter() if e is not prompt)
    if not inline_prompt:
        body.extend(blocks_of(prompt))
    for part in q.context:
        body.extend(blocks_of(convert.into(Element("holder"), _wrapped(part))))
    interaction = SubElement(body, qname("choiceInteraction"), {
        "responseIdentifier": "RESPONSE", "shuffle": "false", "maxChoices": "0" if q.multiple else "1"})
    if inline_prompt:
        interaction.append(prompt)
    for choice in q.choices:
        convert.into(SubElement(interaction, qname("simpleChoice"), {"identifier": ids[choice.id]}), choice.content)

    processing = SubElement(root, qname("responseProcessing"))
    if q.match_any:
        _set(processing, "SCORE", Element(qname("mapResponse"), {"identifier": "RESPONSE"}))
    else:
        condition = SubElement(processing, qname("responseCondition"))
        when = SubElement(condition, qname("responseIf"))
        match = SubElement(when, qname("match"))
        SubElement(match, qname("variable"), {"identifier": "RESPONSE"})
        SubElement(match, qname("correct"), {"identifier": "RESPONSE"})
        _set(when, "SCORE", _float("1"))
        _set(SubElement(condition, qname("responseElse")), "SCORE", _float("0"))
    _set(processing, "FEEDBACK", Element(qname("variable"), {"identifier": "RESPONSE"}))
    explained = Element(qname("baseValue"), {"baseType": "identifier"})
    explained.text = "explanation"
    _set(processing, "EXPLAIN", explained)

    for choice in q.choices:
        if choice.why is not None and text_of(choice.why):
            feedback = SubElement(root, qname("modalFeedback"), {
                "outcomeIdentifier": "FEEDBACK", "showHide": "show", "identifier": ids[choice.id]})
            convert.into(feedback, choice.why)
    if q.explanation is not None and text_of(q.explanation):
        convert.into(SubElement(root, qname("modalFeedback"), {
            "outcomeIdentifier": "EXPLAIN", "showHide": "show", "identifier": "explanation"}), q.explanation)
    return _xml(root, QTI, QTI_SCHEMA)


def _wrapped(part: Element) -> Element:
    """A context element as content to convert: the element itself inside a holder."""
    holder = Element("holder")
    holder.append(part)
    return holder


def package(lab_slug: str, title: str, questions: list[PageQuestion], page_url: str) -> dict[str, bytes]:
    """The files of one lab's QTI package, by path inside it."""
    convert = Converter(page_url)
    files: dict[str, bytes] = {}
    refs: list[tuple[str, str]] = []
    for q in questions:
        item_id = identifier(f"{lab_slug}-{q.id}", "q_")
        href = f"items/{identifier(q.id, '')}.xml"
        files[href] = item(q, item_id, convert)
        refs.append((item_id, href))
    test_id = identifier(lab_slug, "test_")
    test = Element(qname("assessmentTest"), {"identifier": test_id, "title": f"{title}: quick check"})
    _outcome(test, "SCORE", "single", "float", "0")
    _outcome(test, "MAXSCORE", "single", "float", str(len(refs)))
    part = SubElement(test, qname("testPart"), {"identifier": "part", "navigationMode": "nonlinear",
                                                "submissionMode": "individual"})
    section = SubElement(part, qname("assessmentSection"), {"identifier": "section", "title": title, "visible": "true"})
    for item_id, href in refs:
        SubElement(section, qname("assessmentItemRef"), {"identifier": item_id, "href": href})
    outcome = SubElement(test, qname("outcomeProcessing"))
    total = Element(qname("sum"))
    SubElement(total, qname("testVariables"), {"variableIdentifier": "SCORE"})
    _set(outcome, "SCORE", total)
    files["assessment.xml"] = _xml(test, QTI, QTI_SCHEMA)

    manifest = Element("manifest", {"identifier": identifier(lab_slug, "manifest_")})
    metadata = SubElement(manifest, "metadata")
    SubElement(metadata, "schema").text = "QTIv2.1 Package"
    SubElement(metadata, "schemaversion").text = "1.0.0"
    SubElement(manifest, "organizations")
    resources = SubElement(manifest, "resources")
    test_res = SubElement(resources, "resource", {"identifier": f"res_{test_id}", "type": TEST_TYPE,
                                                        "href": "assessment.xml"})
    SubElement(test_res, "file", {"href": "assessment.xml"})
    for item_id, _ in refs:
        SubElement(test_res, "dependency", {"identifierref": f"res_{item_id}"})
    for item_id, href in refs:
        res = SubElement(resources, "resource", {"identifier": f"res_{item_id}", "type": ITEM_TYPE, "href": href})
        SubElement(res, "file", {"href": href})
    files["imsmanifest.xml"] = _xml(manifest, IMSCP, CP_SCHEMA)
    return files
