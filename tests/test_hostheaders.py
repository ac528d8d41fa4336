"""site.yaml's ``embed: frame_ancestors`` reaching every place an embed page's policy is written:
the ``_headers`` file (Netlify, Cloudflare Pages), the ``.htaccess`` file (Apache) and the headers
``labs serve`` sends; full pages keep ``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``.
A bad entry is one ``path:line:col`` error (tests/test_content.py holds the exact lines)."""

from __future__ import annotations

import re
import urllib.request

import pytest
from conftest import run_labs

from generator.hostheaders import BASE_POLICY
from generator.serve.server import DevServer

ANCESTORS = ["https://moodle.example.edu", "https://*.canvas.example.edu:8443", "'self'"]
SETTING = "embed:\n  frame_ancestors:\n" + "".join(f"    - \"{a}\"\n" for a in ANCESTORS)
EMBED_CSP = BASE_POLICY.replace("; worker-src", f"; frame-ancestors {' '.join(ANCESTORS)}; worker-src")
FULL_CSP = BASE_POLICY.replace("; worker-src", "; frame-ancestors 'none'; worker-src")


@pytest.fixture
def site(project):
    """The fixture site with the setting in its site.yaml, built; its output folder."""
    site_yaml = project / "content" / "site.yaml"
    site_yaml.write_text(site_yaml.read_text(encoding="utf-8") + SETTING, encoding="utf-8")
    return project


def rules(text: str) -> dict[str, dict[str, str]]:
    """``_headers``: each URL pattern's headers."""
    found: dict[str, dict[str, str]] = {}
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if line and not line.startswith("#")]
        if lines:
            assert lines[0] not in found, f"two rules for {lines[0]}"
            found[lines[0]] = dict(tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:])
    return found


def test_the_setting_reaches_the_headers_file_of_every_embed_page_and_of_no_other(site, capsys):
    code, _, err = run_labs(capsys, "build", "--content", "content", "--output", "out")
    assert code == 0, err
    pages = sorted(p.relative_to(site / "out").as_posix() for p in (site / "out").rglob("*.html"))
    embeds = [p for p in pages if p.endswith("/embed.html")]
    assert embeds == ["labs/alpha/embed.html", "labs/beta/embed.html"]
    got = rules((site / "out" / "_headers").read_text(encoding="utf-8"))
    for page in pages:
        headers = got["/" + page]
        if page in embeds:
            assert headers["Content-Security-Policy"] == EMBED_CSP
            assert "X-Frame-Options" not in headers
        else:
            assert headers["Content-Security-Policy"] == FULL_CSP
            assert headers["X-Frame-Options"] == "DENY"


def test_the_setting_reaches_the_htaccess_for_embed_pages_alone(site, capsys):
    code, _, err = run_labs(capsys, "build", "--content", "content", "--output", "out")
    assert code == 0, err
    text = (site / "out" / ".htaccess").read_text(encoding="utf-8")
    outside, block = re.fullmatch(r'(?s)(.*)<FilesMatch "\^embed\\\.html\$">\n(.*?)</FilesMatch>.*', text).groups()
    assert f'Header always set Content-Security-Policy "{FULL_CSP}"' in outside
    assert 'Header always set X-Frame-Options "DENY"' in outside
    assert f'Header always set Content-Security-Policy "{EMBED_CSP}"' in block.splitlines()
    assert "Header always unset X-Frame-Options" in block.splitlines()
    assert "frame-ancestors *" not in text  # the default is gone once the author names who may


def test_labs_serve_sends_the_setting_with_the_embed_page_alone(site):
    server = DevServer(site / "content", None, None, port=0, report=lambda _: None, warn=lambda _: None)
    url = server.start()
    try:
        with urllib.request.urlopen(url + "labs/alpha/embed.html") as response:
            assert response.headers["Content-Security-Policy"] == EMBED_CSP
            assert response.headers["X-Frame-Options"] is None
        with urllib.request.urlopen(url + "labs/alpha/") as response:
            assert response.headers["Content-Security-Policy"] == FULL_CSP
            assert response.headers["X-Frame-Options"] == "DENY"
    finally:
        server.stop()
