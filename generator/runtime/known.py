"""What a model bundle says it is, checked before a page names it: its model card (``model``) and
the checkpoint it was exported from (``checkpoint``); and, for a checkpoint whose export is known
byte for byte, everything else.

The export is deterministic (the same checkpoint gives byte-identical files), so a bundle that
records all-MiniLM-L6-v2's checkpoint must hold exactly the files and the configuration that
checkpoint exports to. Otherwise a weight, a vocabulary line or a configuration value changed
together with the hashes bundle.json keeps would build and run another model under MiniLM's
name: the reference outputs stored at export catch most such changes, not one too small to move
them by 1e-4 (``layer_norm_eps`` 1e-300 for 1e-12) nor one in a row the reference texts never use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

CARD_FIELDS = ("name", "source", "authors", "license")  # "based_on" is optional
MAX_CARD_TEXT = 500  # characters of one field: a page shows them in a line or two


@dataclass(frozen=True)
class KnownExport:
    name: str  # the model card's name
    config: Mapping
    files: Mapping[str, tuple[int, str]]  # bytes and SHA-256 of each file bundle.json lists


KNOWN = {
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db": KnownExport(
        name="sentence-transformers/all-MiniLM-L6-v2",
        config={"hidden_act": "gelu", "hidden_size": 384, "intermediate_size": 1536, "layer_norm_eps": 1e-12,
                "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 6,
                "type_vocab_size": 2, "vocab_size": 30522},
        files={
            "LICENSE": (12_143, "519575545d5f1edf4d272f78d2448aacc9f0475388c288e2224e238a0255986f"),
            "tokenizer_config.json": (87, "affac37402ad7d49a74232a85fce05ce25c3f2fddae5b206b4cac7ca9c408fba"),
            "vocab.txt": (231_508, "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
            "weights.bin": (24_645_744, "f9a0c94c2c1534612c052808749950595ba966f6cb135aa97ecb3c17d352ee58"),
        },
    ),
}


def identity_problem(meta: Mapping) -> str | None:
    """What is wrong with what bundle.json says the model is, or None."""
    card, recorded = meta.get("model"), meta.get("checkpoint")
    if not isinstance(card, dict) or any(not _line(card.get(k)) for k in CARD_FIELDS) or (
            "based_on" in card and not _line(card["based_on"])):
        return (f"'model' must give the model's {', '.join(CARD_FIELDS)} (and may give based_on), each one line "
                f"of text of at most {MAX_CARD_TEXT} characters")
    sha = recorded.get("sha256") if isinstance(recorded, dict) else None
    if not (isinstance(sha, str) and re.fullmatch("[0-9a-f]{64}", sha)):
        return "'checkpoint' must give 'sha256': the SHA-256 (64 hex digits) of the checkpoint's model.safetensors"
    known = KNOWN.get(sha)
    if known is None:
        return None
    said = f"bundle.json records the checkpoint of {known.name} ({sha[:12]}…)"
    if card["name"] != known.name:
        return f"{said} but names the model {card['name'][:80]!r}"
    config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    for key in sorted(set(config) | set(known.config)):
        if config.get(key) != known.config.get(key):
            return f"{said}, whose {key} is {known.config.get(key)!r}, not {config.get(key)!r}"
    files = meta.get("files") if isinstance(meta.get("files"), dict) else {}
    for name, (size, digest) in known.files.items():
        entry = files.get(name)
        if not isinstance(entry, dict) or (entry.get("bytes"), entry.get("sha256")) != (size, digest):
            return (f"{said}, whose export's {name} is {size:,} bytes of SHA-256 {digest[:12]}…; this bundle lists "
                    f"another: it is not that checkpoint's export (export it again with `labs models fetch`)")
    return None


def _line(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value.strip()) and len(value) <= MAX_CARD_TEXT and "\n" not in value
