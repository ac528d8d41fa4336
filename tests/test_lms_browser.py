"""Lab 07's SCORM 1.2 package (``labs export scorm``) launched by a real SCORM 1.2 run-time in
Chromium: scorm-again's ``Scorm12API`` as ``window.API`` on an LMS page, the package's launch page
(the href its imsmanifest.xml gives) in a frame below it, as an LMS launches a SCO. The quiz is
answered in the frame; the run-time holds the score and the lesson status the page reported.
The package's page also works with no LMS at all.

scorm-again comes from the npm registry at test setup (scripts/setup-tests, into .cache/npm).
Needs Chromium (tests/conftest.py); these tests fail without it or scorm-again, never skip."""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import ROOT, HeadersHost, watched_page

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import expect
    expect.set_options(timeout=15_000)
except ImportError:  # pragma: no cover - the browser fixture reports it
    pass

SCORM_AGAIN = ROOT / ".cache" / "npm" / "node_modules" / "scorm-again" / "dist" / "scorm12.min.js"
IMSCP = "{http://www.imsproject.org/xsd/imscp_rootv1p1p2}"

# The LMS page's own script: the run-time as window.API, every call the SCO makes recorded, then
# the SCO's launch page in a frame. ?mastery=N gives the run-time a mastery score, as an LMS
# does from the manifest or its own settings.
LMS_JS = """
const query = new URLSearchParams(location.search);
window.calls = [];
window.API = new Scorm12API({ autocommit: false, logLevel: 5 });
if (query.has("mastery")) API.loadFromJSON({ student_data: { mastery_score: query.get("mastery") } });
for (const name of ["LMSInitialize", "LMSCommit", "LMSFinish"]) API.on(name, () => calls.push(name));
API.on("LMSSetValue.cmi.*", (element, value) => calls.push([element, String(value)]));
addEventListener("DOMContentLoaded", () => {
  const frame = document.createElement("iframe");
  frame.id = "sco";
  frame.title = "The lab";
  frame.style.cssText = "width: 1200px; height: 800px";
  frame.src = query.get("launch");
  document.body.append(frame);
});
"""
LMS_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>An LMS</title><link rel="icon" href="data:,">
<script src="scorm12.min.js"></script><script src="lms.js"></script></head><body><h1>Course</h1></body></html>
"""


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> tuple[Path, str]:
    """Lab 07's package unzipped, as an LMS stores it, with the LMS page beside it: (folder, launch href)."""
    from generator.export.run import export

    assert SCORM_AGAIN.is_file(), f"no scorm-again at {SCORM_AGAIN}: run scripts/setup-tests"
    out = tmp_path_factory.mktemp("scorm")
    written = export("scorm", ROOT / "content", None, out / "zips")
    folder = out / "lms"
    with zipfile.ZipFile(out / "zips" / "attention.zip") as z:
        assert z.testzip() is None
        z.extractall(folder)
    assert [p.name for p in written].count("attention.zip") == 1
    manifest = ElementTree.parse(folder / "imsmanifest.xml").getroot()
    (sco,) = [r for r in manifest.iter(f"{IMSCP}resource")
              if r.get("{http://www.adlnet.org/xsd/adlcp_rootv1p2}scormtype") == "sco"]
    shutil.copy(SCORM_AGAIN, folder / "scorm12.min.js")
    (folder / "lms.js").write_text(LMS_JS, encoding="utf-8")
    (folder / "lms.html").write_text(LMS_HTML, encoding="utf-8")
    return folder, sco.get("href")


@pytest.fixture(scope="module")
def lms(package):
    folder, launch = package
    served = HeadersHost(folder)  # no _headers in a package: served as it is
    yield f"{served.origin}/lms.html?launch={launch}"
    served.close()


@pytest.fixture
def page(browser):
    with watched_page(browser, height=900) as page:
        yield page


def cmi(page, element: str) -> str:
    return page.evaluate(f"String(API.LMSGetValue({element!r}))")


def answer_the_quiz(frame, wrong: set[str]) -> int:
    """Answer every question of the quiz in ``frame`` once: rightly, or wrongly for the question
    ids in ``wrong``. The number of questions."""
    frame.locator("#quick-check-title").scroll_into_view_if_needed()
    expect(frame.locator("#quiz-score")).to_be_visible()
    questions = frame.locator("#quiz fieldset.quiz-q")
    for q in questions.all():
        right = q.get_attribute("id").removeprefix("quiz-") not in wrong
        choose = "[data-correct]" if right else ":not([data-correct])"
        q.scroll_into_view_if_needed()
        if q.locator(".quiz-choices").count():  # a kind's own question: its buttons answer at once
            q.locator(f".quiz-choices button[data-option]{choose}").first.click()
        else:
            inputs = q.locator(f"input{choose}")
            for i in range(inputs.count() if right else 1):
                inputs.nth(i).check()
            q.get_by_role("button", name="Check").click()
        expect(q.locator(".quiz-feedback[role=status]")).to_have_text(
            "Correct!" if right else re.compile(r"^Not quite"))
    return questions.count()


@pytest.mark.parametrize("mastery,wrong,status", [
    (None, {"quadratic"}, "completed"),  # no mastery score: completed once every question is answered
    ("80", {"quadratic"}, "passed"),
    ("90", {"quadratic"}, "failed"),
    ("80", {"quadratic", "qkv"}, "failed"),
])
def test_the_lms_gets_the_score_and_the_status(page, lms, mastery, wrong, status):
    page.goto(lms + (f"&mastery={mastery}" if mastery else ""))
    frame = page.frame_locator("#sco")
    page.wait_for_function("calls.includes('LMSInitialize')")
    assert cmi(page, "cmi.core.lesson_status") == "incomplete"  # launched, nothing answered yet
    assert cmi(page, "cmi.core.score.raw") == ""
    total = answer_the_quiz(frame, wrong)
    assert total == 7
    expected = round(100 * (total - len(wrong)) / total)
    expect(frame.locator("#quiz-score")).to_have_text(f"{total - len(wrong)} / {total} right first time")
    assert cmi(page, "cmi.core.score.raw") == str(expected)
    assert (cmi(page, "cmi.core.score.min"), cmi(page, "cmi.core.score.max")) == ("0", "100")
    assert cmi(page, "cmi.core.lesson_status") == status
    calls = page.evaluate("calls")
    statuses = [value for call in calls if isinstance(call, list) and call[0] == "cmi.core.lesson_status"
                for value in call[1:]]
    assert statuses == ["incomplete", status], statuses  # incomplete at the launch, decided at the last answer
    assert calls.count("LMSCommit") >= 1 + total  # committed at the launch and after each answer
    # The learner leaves: the session ends.
    page.evaluate("document.getElementById('sco').src = 'about:blank'")
    page.wait_for_function("calls.includes('LMSFinish')")
    assert page.evaluate("API.isTerminated()")


def test_the_package_page_works_without_an_lms(page, package):
    folder, launch = package
    page.goto((folder / launch).as_uri())
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
    total = answer_the_quiz(page, {"scaling"})
    expect(page.locator("#quiz-score")).to_have_text(f"{total - 1} / {total} right first time")
