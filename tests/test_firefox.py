"""A second engine: every lab of the shipped site in Debian's Firefox ESR, driven through
Marionette (PyPI marionette-driver), over http under the site's CSP. Each lab loads without a
console error or an uncaught exception, and its kind's main interaction works (KINDS below: one
row per lab kind). The labs are listed from the built site, so a lab added later is covered; a
lab of a kind without a row fails, naming the row to add.

Cost: one Firefox for the module (started once, about 10 s on a quiet machine) and one page load
plus one interaction per lab; every wait is for a condition the page reaches, never a fixed sleep.
Firefox reports what a page logs on its standard output (the devtools.console.stdout.content
pref), which Marionette writes to a log file: a test reads the lines its page added.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from test_browser import shipped, sites  # noqa: F401 — the built, served site the Chromium tests use

pytestmark = pytest.mark.browser
FIREFOX = shutil.which("firefox-esr") or "/usr/bin/firefox-esr"
WAIT_S = 60  # a slow, shared CI machine: conditions are waited for, up to this long

# What Firefox's own parts log at start-up with no network (remote settings, experiments, backup):
# not the page's. Anything else logged while a lab page is open is the page's, and fails the test.
BROWSER_NOISE = re.compile(r"RSLoader|Remote Settings|remote-settings|nimbus|BackupService|Polling for changes|"
                           r"resource://|chrome://|moz-extension://")
PREFS = {
    "devtools.console.stdout.content": True,  # the page's console on stdout, so in the log
    "browser.shell.checkDefaultBrowser": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "app.update.disabledForTesting": True,
    "messaging-system.rsexperimentloader.enabled": False,
    "browser.backup.enabled": False,
}

# Each lab kind's main interaction, as a learner does it: (what the learner does, the condition it
# must reach). Both are scripts run in the page; the first returns what the second is given.
KINDS = {
    # Lab 07: click a word; it becomes the query and the readout is about it.
    "attention": ("""const b = document.querySelectorAll("#sl-queries button.word")[2]; b.click(); return b.textContent;""",
                  """const [word] = arguments;
                     return document.querySelectorAll("#sl-queries button.word")[2].getAttribute("aria-pressed") === "true"
                       && document.getElementById("sl-caption").textContent.includes("“" + word + "”");"""),
    # Lab 03: type a word; its pieces are listed.
    "tokens": ("""const t = document.getElementById("tk-text"); t.focus(); t.value = "unhappiness";
                  t.dispatchEvent(new InputEvent("input", {bubbles: true})); return null;""",
               """const pieces = [...document.querySelectorAll("#tk-tokens > li")].map(li => li.textContent);
                  return pieces.length >= 3 && pieces.some(p => p.includes("##"));"""),
    # Lab 04: click a neighbour of the picked sentence on the map; it becomes the picked one.
    "embeddings": ("""const id = document.querySelector("#em-nn li").dataset.item;
                      const points = [...document.querySelectorAll("#em-map .em-pt")];
                      const text = document.querySelector(`#em-nn li[data-item="${id}"]`).textContent.replace(/^\\S+ /, "");
                      points.find(p => p.getAttribute("aria-label").startsWith(text + " (group")).click(); return text;""",
                   """const [text] = arguments; return document.getElementById("em-picked").textContent.includes(text);"""),
    # Lab 06: click a token of the first text; it is pressed and the detail gives its surprise in bits.
    "next-token": ("""const b = document.querySelectorAll(".nt-text .nt-tok[data-prob]")[1]; b.click();
                      return (-Math.log2(+b.dataset.prob)).toFixed(2);""",
                   """const [bits] = arguments, b = document.querySelectorAll(".nt-text .nt-tok[data-prob]")[1];
                      const head = document.querySelector(".nt-detail-head");
                      return b.getAttribute("aria-pressed") === "true" && !!head && head.textContent.includes(bits + " bits");"""),
    # Lab 08: turn the temperature dial to one end; the bars are redrawn for it.
    "sampling": ("""const dial = document.getElementById("sa-temp"), before = document.getElementById("sa-bars").textContent;
                    dial.focus(); dial.value = dial.value === dial.max ? dial.min : dial.max;
                    dial.dispatchEvent(new Event("input", {bubbles: true}));
                    return [before, dial.max];""",
                 """const [[before]] = arguments, out = document.getElementById("sa-temp-out").textContent;
                    return document.getElementById("sa-bars").textContent !== before && /T = /.test(out);"""),
}


def _kind(page: Path) -> str:
    """A built lab page's kind: the kind's script it loads (assets/kind-<name>.<hash>.js)."""
    kinds = set(re.findall(r"assets/kind-([a-z0-9-]+)\.[0-9a-f]+\.js", page.read_text(encoding="utf-8")))
    assert len(kinds) == 1, (page, kinds)
    return kinds.pop()


class Firefox:
    """One Firefox ESR under Marionette, and what it logged since a mark."""

    def __init__(self, tmp: Path):
        from marionette_driver.marionette import Marionette

        self.log = tmp / "gecko.log"
        self.client = Marionette(host="127.0.0.1", port=0, bin=FIREFOX, headless=True, gecko_log=str(self.log),
                                 prefs=PREFS, startup_timeout=WAIT_S * 2)
        self.client.start_session()
        self.client.timeout.page_load = WAIT_S
        self.client.timeout.script = WAIT_S
        self.sentinel = 0

    def mark(self) -> int:
        return self.log.stat().st_size

    def logged(self, since: int) -> str:
        with self.log.open("rb") as f:
            f.seek(since)
            return f.read().decode("utf-8", "replace")

    def problems(self, since: int) -> list[str]:
        """Errors the page logged since `since`: console.error calls and uncaught exceptions (a CSP
        refusal is one of them), without the browser's own start-up noise. The page first logs a
        line of its own, and the log is read once that line is in it: what came before is too."""
        self.sentinel += 1
        line = f"labs-firefox-test-{self.sentinel}"
        self.client.execute_script("setTimeout(() => console.log(arguments[0]))", script_args=[line])
        from marionette_driver import Wait

        Wait(self.client, timeout=WAIT_S, interval=0.1).until(lambda c: line in self.logged(since),
                                                              message="the page's console to reach the log")
        text = self.logged(since)
        found = [line for line in text.splitlines()
                 if re.match(r"(console\.error:|JavaScript error:|Content-Security-Policy)", line)]
        return [line for line in found if not BROWSER_NOISE.search(line)]

    def until(self, script: str, *args, what: str) -> None:
        """Wait, up to WAIT_S, until `script` (run in the page) returns true."""
        from marionette_driver import Wait

        Wait(self.client, timeout=WAIT_S, interval=0.1).until(lambda c: c.execute_script(script, script_args=args),
                                                              message=what)

    def close(self) -> None:
        self.client.delete_session()
        self.client.cleanup()


@pytest.fixture(scope="module")
def firefox(tmp_path_factory):
    if not Path(FIREFOX).exists():
        if os.environ.get("LABS_REQUIRE_REFERENCE") == "1":
            pytest.fail("LABS_REQUIRE_REFERENCE=1 but Firefox ESR is not installed (apt-get install -y firefox-esr)")
        pytest.skip("Firefox ESR is not installed (scripts/setup-tests installs it)")
    from conftest import reference

    reference("marionette_driver")
    browser = Firefox(tmp_path_factory.mktemp("firefox"))
    yield browser
    browser.close()


def _open(firefox, site, slug: str) -> int:
    since = firefox.mark()
    firefox.client.navigate(site.url("http", f"labs/{slug}/"))
    firefox.until("return document.readyState === 'complete'", what=f"lab {slug} to load")
    return since


def test_the_watch_sees_a_pages_error(firefox, shipped):
    """The check below can fail: an error a page logs, and one it throws, are both seen."""
    since = _open(firefox, shipped, shipped.labs[0])
    firefox.client.execute_script("console.error('a page error'); setTimeout(() => { throw new Error('thrown by the page'); });")
    said = "\n".join(firefox.problems(since))
    assert "a page error" in said and "thrown by the page" in said, said


def test_every_lab_loads_without_errors_and_its_main_interaction_works(firefox, shipped):
    assert shipped.labs, "the shipped site lists no labs"
    for slug in shipped.labs:
        kind = _kind(shipped.folder / "labs" / slug / "index.html")
        assert kind in KINDS, f"lab {slug} is of kind {kind!r}: add its main interaction to KINDS in {__file__}"
        act, done = KINDS[kind]
        since = _open(firefox, shipped, slug)
        result = firefox.client.execute_script(act)
        firefox.until(done, result, what=f"lab {slug} ({kind}) to answer its main interaction")
        assert not firefox.problems(since), (slug, firefox.problems(since))
