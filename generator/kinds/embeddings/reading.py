"""The embeddings kind's ``lab.yaml`` section and claims: read, validated, positioned.

Everything here is about what the author wrote; the numbers are in :mod:`.compute`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from generator.kinds import Diagnostic, Reader, did_you_mean

ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
MAX_ITEMS = 40
MAX_QUERIES = 12
MAX_TEXT = 200  # characters: a sentence or two, well inside the model's 256 word pieces
DEFAULT_STORE = "embeddings.json"


@dataclass(frozen=True)
class Entry:
    id: str
    text: str
    group: str
    at: Diagnostic  # where the entry is written; its message is replaced when it is reported


@dataclass(frozen=True)
class Claim:
    """One parsed claim. ``kind`` and ``args`` as in :data:`CLAIM_FORMS`."""

    text: str
    kind: str
    args: tuple
    at: Diagnostic


@dataclass(frozen=True)
class EmbeddingsSpec:
    prompt: str | None
    items: tuple[Entry, ...]
    queries: tuple[Entry, ...]
    store: Path  # the stored vectors' file
    store_shown: str  # as written in lab.yaml
    neighbours: int
    rag_query: str | None
    rag_k: int
    claims: tuple[Claim, ...]
    runtime: Path | None  # a committed model bundle folder: live search in the page
    at: Diagnostic  # the `embeddings:` key
    runtime_checkpoint: str | None = None  # the SHA-256 of the checkpoint the runtime bundle was made from
    content: Path | None = None  # the site's content folder: links in the runtime bundle may lead within it

    def entry(self, ident: str) -> Entry | None:
        return next((e for e in (*self.items, *self.queries) if e.id == ident), None)

    def texts(self) -> list[str]:
        return [e.text for e in (*self.items, *self.queries)]


_Q = r'"([a-z0-9][a-z0-9_-]*)"'
_NUM = r"(-?\d+(?:\.\d+)?)"
_OP = r"(>=|<=|>|<)"
#: claim forms: (kind, pattern). The first three are about named items; the rest about the whole set.
CLAIM_FORMS = (
    ("closer", re.compile(rf"{_Q} is closer to {_Q} than to {_Q}")),
    ("finds", re.compile(rf"{_Q} finds {_Q} in its top (\d+)")),
    ("cosine", re.compile(rf"cosine of {_Q} and {_Q} {_OP} {_NUM}")),
    ("hub", re.compile(rf"{_Q} is in the top (\d+) of at least (\d+) items")),
    ("mean", re.compile(rf"mean cosine across groups {_OP} {_NUM}")),
    ("cls-mean", re.compile(rf"mean \[CLS\] cosine across groups {_OP} {_NUM}")),
    ("explained", re.compile(rf"the map explains {_OP} {_NUM}%")),
    ("disagrees", re.compile(rf"the map disagrees for {_OP} {_NUM}% of items")),
)
CLAIM_HELP = ('claims read \'"a" is closer to "b" than to "c"\', \'"q" finds "x" in its top 3\', '
              '\'cosine of "a" and "b" >= 0.7\', \'"x" is in the top 3 of at least 5 items\', '
              '\'mean cosine across groups < 0.1\', \'mean [CLS] cosine across groups > 0.5\', '
              '\'the map explains < 40%\' or \'the map disagrees for >= 50% of items\'')


def read_claim(reader: Reader, where: tuple, text: str, spec_ids: dict[str, bool]) -> Claim | None:
    """``spec_ids``: id → whether it is an item (False: a query)."""
    for kind, pattern in CLAIM_FORMS:
        m = pattern.fullmatch(text.strip())
        if not m:
            continue
        args = m.groups()
        named = {"closer": args, "finds": args[:2], "cosine": args[:2], "hub": args[:1]}.get(kind, ())
        for ident in named:
            if ident not in spec_ids:
                line, col = reader.doc.locate(where, f'"{ident}"')
                reader.error_at(line, col, f"unknown item or query {ident!r}{did_you_mean(ident, spec_ids)}")
                return None
        if kind == "finds" and not spec_ids[args[1]]:
            reader.error(where, f"{args[1]!r} is a query; a search finds items")
            return None
        if kind == "finds" and args[0] == args[1]:
            reader.error(where, f"{args[0]!r} is the item the search starts from; it is never among what it finds")
            return None
        if kind == "hub" and not spec_ids[args[0]]:
            reader.error(where, f"{args[0]!r} is a query; a hub is an item in other items' top k")
            return None
        if kind == "closer" and args[1] == args[2]:
            reader.error(where, f"the claim compares {args[0]!r} with {args[1]!r} twice; name two different ones")
            return None
        n_items = sum(spec_ids.values())
        for count in ((args[2],) if kind == "finds" else args[1:3] if kind == "hub" else ()):
            value = int(count) if len(count.lstrip("0")) <= 6 else None  # thousands of digits are no int
            if value is None or not 1 <= value <= n_items:
                reader.error(where, f"{count if len(count) <= 12 else count[:12] + '…'} is not between 1 and the "
                                    f"number of items, {n_items}")
                return None
        return Claim(text.strip(), kind, args, reader.doc.diagnostic(where, ""))
    reader.error(where, f"cannot read claim {text.strip()!r}; {CLAIM_HELP}")
    return None


def _entries(reader: Reader, where: tuple, limit: int, seen: dict[str, bool], is_item: bool) -> list[Entry]:
    found = []
    listed = reader.sequence(where, nonempty=is_item) or []
    if len(listed) > limit:
        reader.error(where, f"at most {limit} {'items' if is_item else 'queries'}, not {len(listed)}")
    for i, _ in enumerate(listed):
        at = where + (i,)
        if reader.mapping(at, required=("id", "text"), optional=("group",) if is_item else ()) is None:
            continue
        ident = reader.string(at + ("id",), multiline=False)
        text = reader.string(at + ("text",), multiline=False)
        group = reader.string(at + ("group",), required=False, multiline=False) if is_item else None
        if ident is None or text is None:
            continue
        if not ID.fullmatch(ident):
            reader.error(at + ("id",), f"id {ident!r} must be 1 to 40 lower-case letters, digits, '-' or '_'")
            continue
        if ident in seen:
            reader.error(at + ("id",), f"id {ident!r} is used twice")
            continue
        if len(text) > MAX_TEXT:
            reader.error(at + ("text",), f"text is {len(text)} characters long; at most {MAX_TEXT}")
            continue
        twin = next((e.id for e in found if e.text == text), None)
        if is_item and twin is not None:  # one point drawn twice: its neighbour, the map's axes would be about nothing
            reader.error(at + ("text",), f"item {ident!r} has the same text as item {twin!r}; each item is a "
                                         f"different sentence")
            continue
        seen[ident] = is_item
        found.append(Entry(ident, text, group or "", reader.doc.diagnostic(at, "")))
    return found


def read_embeddings(reader: Reader, where: tuple, lab_dir: Path) -> EmbeddingsSpec | None:
    if reader.mapping(where, required=("items",),
                      optional=("prompt", "queries", "store", "neighbours", "rag", "claims",
                                                                    "runtime")) is None:
        return None
    errors = len(reader.diags.items)
    prompt = reader.string(where + ("prompt",), required=False, multiline=False)
    store = reader.string(where + ("store",), required=False, multiline=False) or DEFAULT_STORE
    if "/" in store or "\\" in store or not store.endswith(".json"):
        reader.error(where + ("store",), f"store must be a .json file name in the lab folder, not {store!r}")
    neighbours = reader.integer(where + ("neighbours",), minimum=1, maximum=10)
    seen: dict[str, bool] = {}
    items = _entries(reader, where + ("items",), MAX_ITEMS, seen, True)
    queries = _entries(reader, where + ("queries",), MAX_QUERIES, seen, False)
    if items and len(items) < 3:
        reader.error(where + ("items",), f"a map of meaning needs at least 3 items, not {len(items)}")
    rag_query, rag_k = None, 3
    if reader.value(where + ("rag",)) is not None and reader.mapping(where + ("rag",), required=("query",),
                                                                     optional=("k",)) is not None:
        rag_query = reader.string(where + ("rag", "query"), multiline=False)
        if rag_query is not None and seen.get(rag_query) is not False:
            reader.error(where + ("rag", "query"), f"unknown query {rag_query!r}"
                         f"{did_you_mean(rag_query, [q.id for q in queries])}; queries are listed under 'queries'")
        rag_k = reader.integer(where + ("rag", "k"), minimum=1, maximum=10) or 3
    runtime = reader.string(where + ("runtime",), required=False, multiline=False)
    checkpoint = None
    bundle = reader.folder(where + ("runtime",), lab_dir, "runtime") if runtime else None
    if bundle is not None and not os.path.lexists(bundle / "bundle.json"):
        reader.error(where + ("runtime",), f"{runtime!r} is not a model bundle folder (no bundle.json in it); "
                                           f"`labs models fetch all-minilm-l6-v2` writes one into content/models/")
        bundle = None
    elif bundle is not None:
        from generator.kinds import BuildError
        from generator.runtime.site import bundle_at

        try:  # read and checked once per process: a damaged file is an error here
            recorded = bundle_at(bundle, reader.content).meta.get("checkpoint")
            checkpoint = recorded.get("sha256") if isinstance(recorded, dict) else None
            checkpoint = checkpoint if isinstance(checkpoint, str) else "(none recorded)"
        except BuildError as exc:
            reader.error(where + ("runtime",), f"bundle {runtime!r} cannot be used: {str(exc).replace(' error: ', ' ', 1)}")
    claims = []
    for i, _ in enumerate(reader.sequence(where + ("claims",)) or []):
        text = reader.string(where + ("claims", i), multiline=False)
        if text is not None:
            claim = read_claim(reader, where + ("claims", i), text, seen)
            if claim is not None:
                claims.append(claim)
    if len(reader.diags.items) > errors:
        return None
    return EmbeddingsSpec(prompt, tuple(items), tuple(queries), lab_dir / store, store, neighbours or 5, rag_query,
                          rag_k, tuple(claims), bundle, reader.doc.diagnostic(where, "", key=True), checkpoint,
                          reader.content)
