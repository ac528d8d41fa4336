"""Hostile checkpoint files under the file policy: a config.json or model.safetensors that is a
FIFO, a link to /dev/zero, a huge sparse file or a number of thousands of digits is refused with
the file named, before a byte is read (a FIFO with no writer would block the build for ever)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from generator.errors import BuildError
from generator.models.bert import read_config
from generator.models.safetensors_io import read_header


def special(path: Path, how: str) -> Path:
    if how == "fifo":
        os.mkfifo(path)
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    elif how == "sparse-2gb":
        with open(path, "wb") as f:
            f.truncate(2 * 10 ** 9)  # no blocks on disk: only its size says what it is
    return path


@pytest.mark.parametrize("how, message", [("fifo", "named pipe (FIFO)"), ("dev-zero", "character device"),
                                          ("sparse-2gb", "2.00 GB: larger than a model configuration can be")])
def test_a_config_that_is_no_file_or_too_large_is_refused_before_it_is_read(tmp_path, how, message):
    with pytest.raises(BuildError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        read_config(special(tmp_path / "config.json", how))
    assert "config.json" in str(caught.value)


def test_a_config_number_of_thousands_of_digits_is_an_error_not_a_traceback(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "bert", "hidden_size": ' + "9" * 5000 + "}", encoding="utf-8")
    with pytest.raises(BuildError, match="cannot read config"):
        read_config(path)


@pytest.mark.parametrize("how, message", [("fifo", "named pipe (FIFO)"), ("dev-zero", "character device")])
def test_weights_that_are_no_file_are_refused_before_they_are_opened(tmp_path, how, message):
    with pytest.raises(BuildError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_header(special(tmp_path / "model.safetensors", how))


def test_a_safetensors_header_number_of_thousands_of_digits_is_an_error(tmp_path):
    header = ('{"w": {"dtype": "F32", "shape": [' + "9" * 5000 + '], "data_offsets": [0, 4]}}').encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    with pytest.raises(BuildError, match="not valid UTF-8 JSON"):
        read_header(path)
