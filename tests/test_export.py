"""``labs export qti|scorm`` on the shipped course: packages byte for byte the same from a second
run (this one through the build cache), and what each package holds checked against the lab's
quiz.yaml and the manifests' own references. The SCORM package under a real run-time:
tests/test_lms_browser.py."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
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
