"""setuptools' build backend, run on a temporary copy of this folder.

pip builds a local folder in place, and setuptools writes ``build/`` and ``*.egg-info/`` into
the folder it builds (pypa/setuptools#3236, #4198), so ``pip install ./examples/kind-plugin``
would leave them here. A wheel or sdist is built from a copy instead; an editable install
(``pip install -e``) still uses setuptools' own hooks, as it must point at this folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager

from setuptools import build_meta

# Every other hook as setuptools has it.
get_requires_for_build_wheel = build_meta.get_requires_for_build_wheel
get_requires_for_build_sdist = build_meta.get_requires_for_build_sdist
get_requires_for_build_editable = build_meta.get_requires_for_build_editable
prepare_metadata_for_build_editable = build_meta.prepare_metadata_for_build_editable
build_editable = build_meta.build_editable

_OUTPUTS = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__")


@contextmanager
def _in_a_copy():
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(here) or "source")
        shutil.copytree(here, copy, ignore=_OUTPUTS)
        os.chdir(copy)
        try:
            yield
        finally:
            os.chdir(here)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    with _in_a_copy():
        return build_meta.prepare_metadata_for_build_wheel(os.path.abspath(metadata_directory), config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel_directory = os.path.abspath(wheel_directory)
    metadata_directory = metadata_directory and os.path.abspath(metadata_directory)
    with _in_a_copy():
        return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    sdist_directory = os.path.abspath(sdist_directory)
    with _in_a_copy():
        return build_meta.build_sdist(sdist_directory, config_settings)
