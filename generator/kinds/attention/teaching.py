"""A tiny *designed* attention layer whose every dimension has a name.

Nothing here is trained. Each word becomes an embedding with named dimensions — its
role (``DET``, ``NOUN``, ``VERB`` …), a ``subject`` flag and its position — and each head
has hand-written projection matrices W_Q, W_K and W_V, so that a query vector reads
"what this word looks for" (``looks-for:noun``) and a key vector "what this word offers"
(``offers:noun``). The attention itself is the ordinary
``softmax(q·kᵀ/√d_k + bias)·v`` of :mod:`generator.models.core`.

Reading a sentence
    :func:`parse_sentence` splits authored text such as
    ``The cat/NOUN sat/VERB on the mat/NOUN.`` into :class:`Word` s. Function words
    (determiners, pronouns, prepositions, auxiliaries and "didn't"-style contractions,
    conjunctions, common adverbs, particles, numbers, punctuation) come from a built-in
    lexicon; every other word must carry a tag written ``word/TAG``. A tag on a function
    word overrides the lexicon (``that/CONJ``). Mistakes raise :class:`TaggingError` with
    the character offset of each one.

The embedding (:data:`EMBEDDING_DIMS`, one row per word)
    * one-hot role over :data:`ROLES`;
    * ``subject``: 1 for the subject noun of each clause. It is set by a rule, standing in
      for what the earlier layers of a real model work out: a clause starts at the sentence
      start, a conjunction or punctuation; its subject is the last noun before the
      clause's first verb or auxiliary that is not the object of a preposition;
    * ``position`` (0, 1, 2 … within its own sentence), ``position²`` and ``constant`` (1).

The heads (:data:`HEADS`; weights from :func:`head_weights`)
    * ``syntax`` — q·k matches what a role looks for with what a role offers
      (determiner, number, adjective, preposition, verb → noun; noun, pronoun, auxiliary,
      particle, conjunction, punctuation → verb; adverb → adjective or verb), and an
      additive distance/direction bias picks the nearest fitting word on the expected side.
    * ``previous`` — position only: ``q·k = −3·(j − (i−1))²``, exactly 0 for the word just
      before the query and more negative the further a key is from that slot. No bias.
    * ``coreference`` — a pronoun looks for a noun, and more for a subject noun; a bias
      keeps it to the left. Other words look for nothing: their query is zero, so their
      weights are even. It picks "animal", not the nearer "street", in "The animal didn't
      cross the street because it was too tired" because *animal is the subject*, not
      because it understands "tired": with "too wide" it still picks "animal".
    * ``alignment`` — each word looks for a word of its own role at about the same
      relative place in its sentence; meant for cross attention (translation).

Values, W_O and the residual stream
    Each head has its own W_V, which picks what that head hands over: syntax the key's
    noun/verb/adjective-ness (``carries:noun`` …), previous word and alignment the key's
    role (``carries:DET`` …), coreference ``carries:noun`` and ``carries:subject``. The
    blend ``out`` (weights @ v) is not the word's new vector: like a real layer, each head's
    blend goes through its block of the output matrix W_O (``out @ w_o``), the heads'
    results are added up — the same as concatenating the blends and multiplying by the whole
    W_O — and that sum is *added* to the word's own vector (the residual stream). The
    residual vector has :data:`RESIDUAL_DIMS`: the embedding's dimensions, then named slots
    that the heads write into (``syntax:noun`` …, ``prev:DET`` …). Our W_O copies each
    head's blend into its own slots, so "sat" stays a verb and gains "my syntax partner is
    a noun"; a trained W_O mixes everything into every dimension. See :func:`residual`.

Heads have their own ``d_k`` (2, 3 or 12) and each divides by its own √d_k.

Self, causal and cross
    ``self``: queries and keys are the same words. ``causal``: the same, with
    :func:`core.causal_mask` — no word sees a later one. ``cross``: queries from one
    tagged sentence, keys and values from another (e.g. its French translation). The same
    W_Q/W_K/W_V are used; biases that compare positions *within one sentence* (syntax,
    coreference) are dropped, because positions in two sentences cannot be compared.
    Each head's ``cross`` text says what it then shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from generator.models.core import softmax_into, causal_mask
from generator.kinds import did_you_mean, pickled_as_call

# ---------------------------------------------------------------------------- roles

ROLES: tuple[str, ...] = (
    "DET", "NOUN", "PRON", "VERB", "AUX", "ADJ", "ADV", "ADP", "CONJ", "PART", "NUM", "PUNCT",
)
ROLE_NAMES: dict[str, str] = {
    "DET": "determiner", "NOUN": "noun", "PRON": "pronoun", "VERB": "verb", "AUX": "auxiliary",
    "ADJ": "adjective", "ADV": "adverb", "ADP": "preposition", "CONJ": "conjunction",
    "PART": "particle", "NUM": "number", "PUNCT": "punctuation",
}
# Universal Dependencies tags an author may know, folded into ours.
TAG_ALIASES: dict[str, str] = {"PROPN": "NOUN", "CCONJ": "CONJ", "SCONJ": "CONJ", "PREP": "ADP"}
VALID_TAGS_TEXT = ", ".join(ROLES) + " (also PROPN = NOUN, CCONJ/SCONJ = CONJ, PREP = ADP)"

MAX_WORDS = 60  # the page draws n² links per head; 60 words is already a dense picture

_LEXICON_SOURCE = {
    "DET": "the a an this that these those my your his its our their some any no every each all "
           "both another either neither which what whose",
    "PRON": "i me you he him she her it we us they them myself yourself himself herself "
            "itself ourselves themselves who whom mine yours hers ours theirs someone something "
            "everyone everything nothing nobody anyone anything i'm you're he's she's it's "
            "we're they're i've you've we've they've i'll you'll he'll she'll it'll we'll "
            "they'll i'd you'd he'd she'd we'd they'd that's there's let's",
    "ADP": "of in on at to from with by for about into onto over under through between after "
           "across behind near off around without during against among upon toward towards "
           "beside past like above below beneath inside outside within along despite",
    "AUX": "is am are was were be been being have has had do does did will would shall should "
           "can could may might must isn't aren't wasn't weren't don't doesn't didn't won't "
           "wouldn't can't cannot couldn't shouldn't hasn't haven't hadn't mustn't mightn't",
    "CONJ": "and or but nor yet because although though while if unless since whereas than "
            "whether so",  # "that" is a DET here: tag it that/CONJ or that/PRON where it is not
    "ADV": "too very also just only then now here there always never often still already even "
           "quite rather really almost again soon once yesterday today tomorrow",
    "PART": "not n't 's",  # "not" is a negation particle, as in Universal Dependencies
    "NUM": "zero one two three four five six seven eight nine ten hundred thousand",
    # Common verbs and adjectives, so that "Your sentence" guesses them from the list, not as
    # nouns from their spelling (tests/test_learner_browser.py checks a list of common words).
    # Only words whose usual part of speech is clear: "walk", "run" or "light" are left to a tag.
    "VERB": "go goes went gone come comes came get gets got make makes made take takes took taken "
            "give gives gave given see sees saw seen know knows knew known think thinks thought say "
            "says said tell tells told find finds found feel feels felt bring brings brought begin "
            "begins began begun keep keeps kept write writes wrote written hear hears heard meet met "
            "sit sits sat eat eats ate eaten sleep sleeps slept jump jumps walks runs ran chase chases "
            "want wants need needs become becomes became leave put puts try tries tried ask asks "
            "seem seems seemed help helps shown buy bought sell sold send sent build "
            "built grow grew grown fall fell fallen catch caught teach taught speak spoke spoken "
            "read reads drink drinks drank swim swam flew cross crosses crossed",
    "ADJ": "quick brown lazy big small large little good bad new old young long short high low great "
           "happy sad tired hungry angry red blue green yellow hot cold warm cool fast slow easy hard "
           "early late full empty rich poor strong weak clean dirty quiet loud dark bright heavy "
           "wide narrow deep tall true false simple beautiful ugly nice sure ready free busy",
}
LEXICON: dict[str, str] = {w: role for role, words in _LEXICON_SOURCE.items() for w in words.split()}
assert len(LEXICON) == sum(len(w.split()) for w in _LEXICON_SOURCE.values()), "a word is listed under two roles"

# Characters a token may carry around its word ("(cat),"), and that make a token punctuation alone.
PUNCTUATION = ".,;:!?…—–-\"“”‘’'()[]{}"
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")  # an untagged token written so is a number (NUM)
# (Both are read by the model's JavaScript port too: generator/kinds/attention/own.py.)


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Word:
    """One word of a sentence as the model sees it."""

    text: str  # as shown, tag removed: "cat"
    role: str  # one of ROLES
    start: int  # character offset of the word in the source text
    written: str  # the token as written, tag included: "cat/NOUN"
    tagged: bool  # the role came from the author's tag, not the lexicon


@dataclass(frozen=True, slots=True)
class TaggingProblem:
    offset: int  # character offset in the source text of the offending word or tag
    written: str  # the token as written, for locating it in a file
    at: int  # offset of the offending part inside ``written`` (0 = the word, >0 = the tag)
    message: str


class TaggingError(ValueError):
    """Raised by :func:`parse_sentence`; ``problems`` lists every mistake, in text order."""

    def __init__(self, problems: Sequence[TaggingProblem]):
        assert problems, "a TaggingError needs at least one problem"
        self.problems = tuple(problems)
        super().__init__("; ".join(f"at {p.offset}: {p.message}" for p in self.problems))


def _split_token(token: str) -> list[tuple[int, str]]:  # -> [(offset in token, piece)]
    """Split leading and trailing punctuation off one whitespace-free token."""
    core = token.split("/", 1)[0]
    if core and all(c in PUNCTUATION for c in core):  # ".", "—", "./PUNCT"
        return [(0, token)]
    lead = len(token) - len(token.lstrip(PUNCTUATION))
    tail = len(token) - len(token.rstrip(PUNCTUATION))
    pieces = []
    if lead:
        pieces.append((0, token[:lead]))
    pieces.append((lead, token[lead : len(token) - tail]))
    if tail:
        pieces.append((len(token) - tail, token[len(token) - tail :]))
    return pieces


def parse_sentence(text: str) -> tuple[Word, ...]:
    """Words of ``text`` with their roles and offsets; raises :class:`TaggingError`.

    Words are separated by whitespace; punctuation at either end of a word is a word of
    its own (role ``PUNCT``). ``word/TAG`` gives a role; untagged words are looked up,
    case-insensitively, in :data:`LEXICON` (numbers written in digits are ``NUM``).
    """
    words: list[Word] = []
    problems: list[TaggingProblem] = []
    for match in re.finditer(r"\S+", text):
        for inner, piece in _split_token(match.group()):
            offset = match.start() + inner
            word, slash, tag = piece.partition("/")
            if not word:
                problems.append(TaggingProblem(offset, piece, 0, f"the tag in {piece!r} has no word before it"))
                continue
            if slash and not tag:
                problems.append(TaggingProblem(
                    offset, piece, len(word), f"{piece!r} has a '/' but no tag after it; tags: {VALID_TAGS_TEXT}"))
                continue
            if slash:
                role = TAG_ALIASES.get(tag, tag)
                if role not in ROLES:
                    if tag.upper() in ROLES or tag.upper() in TAG_ALIASES:
                        hint = f" (tags are written in capitals: {tag.upper()!r})"
                    else:
                        hint = did_you_mean(tag, ROLES + tuple(TAG_ALIASES))
                    problems.append(TaggingProblem(
                        offset + len(word) + 1, piece, len(word) + 1,
                        f"unknown tag {tag!r} on {word!r}{hint}; tags: {VALID_TAGS_TEXT}"))
                    continue
            elif all(c in PUNCTUATION for c in word):
                role = "PUNCT"
            elif NUMBER.fullmatch(word):
                role = "NUM"
            elif word.lower().replace("’", "'") in LEXICON:
                role = LEXICON[word.lower().replace("’", "'")]
            else:
                problems.append(TaggingProblem(
                    offset, piece, 0,
                    f"{word!r} needs a tag: it is not a built-in function word, so write it as "
                    f"'{word}/NOUN', '{word}/VERB', '{word}/ADJ' …; tags: {VALID_TAGS_TEXT}"))
                continue
            words.append(Word(word, role, offset, piece, bool(slash)))
    if not words and not problems:
        problems.append(TaggingProblem(0, text, 0, "the sentence has no words"))
    if len(words) > MAX_WORDS:
        extra = words[MAX_WORDS]
        problems.append(TaggingProblem(
            extra.start, extra.written, 0,
            f"a sentence may have at most {MAX_WORDS} words; this one has {len(words)}"))
    if problems:
        raise TaggingError(sorted(problems, key=lambda p: p.offset))
    return tuple(words)


def subject_flags(roles: Sequence[str]) -> np.ndarray:  # [n] roles -> [n] float (0 or 1)
    """1 for the subject noun of each clause (see the module docstring), else 0."""
    flags = np.zeros(len(roles))
    clause_start = 0
    for end in range(len(roles) + 1):
        if end < len(roles) and roles[end] not in ("CONJ", "PUNCT"):
            continue
        clause = roles[clause_start:end]
        verb = next((i for i, r in enumerate(clause) if r in ("VERB", "AUX")), None)
        if verb is not None:
            subject, after_preposition = None, False
            for i, role in enumerate(clause[:verb]):
                if role == "ADP":
                    after_preposition = True
                elif role == "NOUN":
                    if not after_preposition:
                        subject = i
                    after_preposition = False
            if subject is not None:
                flags[clause_start + subject] = 1.0
        clause_start = end + 1
    return flags


# ---------------------------------------------------------------------------- embedding

EMBEDDING_DIMS: tuple[str, ...] = ROLES + ("subject", "position", "position²", "constant")
_DIM = {name: i for i, name in enumerate(EMBEDDING_DIMS)}
_ROLE = {role: i for i, role in enumerate(ROLES)}


def role_indices(words: Sequence[Word]) -> np.ndarray:  # -> [n] int
    return np.array([_ROLE[w.role] for w in words], dtype=np.int64)


def embed(words: Sequence[Word]) -> np.ndarray:  # -> [n, d_model]
    """The named embedding of each word (:data:`EMBEDDING_DIMS`)."""
    n = len(words)
    position = np.arange(n, dtype=np.float64)
    x = np.zeros((n, len(EMBEDDING_DIMS)))
    x[np.arange(n), role_indices(words)] = 1.0  # the role, one-hot
    x[:, _DIM["subject"]] = subject_flags([w.role for w in words])
    x[:, _DIM["position"]] = position
    x[:, _DIM["position²"]] = position**2
    x[:, _DIM["constant"]] = 1.0
    return x


# ---------------------------------------------------------------------------- heads

# Syntax: the strength of a "looks-for" and an "offers" entry. A full match scores
# 2·2 = 4, which ÷√3 turns into 2.3: enough to stand out (≈ 55–80 % of a row), while the
# "÷√d off" view (score 4) is visibly peakier.
SYNTAX_LOOK, SYNTAX_OFFER = 2.0, 2.0
SYNTAX_DIMS = ("noun", "verb", "adj")
SYNTAX_LOOKS_FOR = {  # role: how much it looks for (noun, verb, adj)
    "DET": (1, 0, 0),  # a determiner → its noun
    "NUM": (1, 0, 0),  # a number → the noun it counts
    "ADJ": (1, 0, 0),  # an adjective → the noun it describes
    "ADP": (1, 0, 0),  # a preposition → its object
    "VERB": (1, 0, 0),  # a verb → its subject and its object or place
    "NOUN": (0, 1, 0),  # a noun → the verb it belongs to
    "PRON": (0, 1, 0),
    "AUX": (0, 1, 0.5),  # an auxiliary → its main verb (or the adjective after "was")
    "PART": (0, 1, 0),  # "not" → its verb
    "CONJ": (0, 1, 0),  # a conjunction → the verb of its clause
    "PUNCT": (0, 1, 0),  # a full stop → the verb
    "ADV": (0, 1, 1),  # an adverb → the verb or adjective it modifies
}
SYNTAX_OFFERS = {  # role: what it offers (noun, verb, adj)
    "NOUN": (1, 0, 0),
    "PRON": (1, 0, 0),  # a pronoun can be a verb's subject or object
    "VERB": (0, 1, 0),
    "AUX": (0, 0.75, 0),  # most of a verb: a main verb nearby still wins
    "ADJ": (0, 0, 1),
}
# Syntax bias: roles that point forward to their partner, and the penalties.
FORWARD_ROLES = ("DET", "NUM", "ADJ", "ADP", "AUX", "PART", "CONJ")
SYNTAX_WRONG_SIDE = 2.0  # a forward-pointing word looking left
SYNTAX_STEP_FORWARD = 0.5  # per word beyond the next, for forward-pointing roles: the noun is close
SYNTAX_STEP_OTHER = 0.3  # per word beyond the nearest, for the rest: subjects and objects can be further
SYNTAX_SELF = 2.0  # no word is its own syntactic partner

PREVIOUS_SHARPNESS = 3.0  # q·k = −3·(distance from the previous slot)²

# Coreference: a pronoun looks for a noun (2·1.5) and for a subject (2·1.5) — a subject
# noun scores 6, another noun 3.
COREF_LOOK, COREF_OFFER = 2.0, 1.5
COREF_AFTER = 3.0  # an antecedent comes before its pronoun
COREF_STEP = 0.1  # per word beyond the nearest: among equal candidates, the nearer wins

ALIGN_STRENGTH = 3.0  # same role scores 3·3 = 9, ÷√12 ≈ 2.6
ALIGN_PLACE = 4.0  # penalty per unit of relative place (0 = start of sentence, 1 = end)


def _role_table(table: Mapping[str, Sequence[float]], width: int, scale: float) -> np.ndarray:
    """A [d_model, width] matrix with ``table[role]·scale`` on each role's row."""
    w = np.zeros((len(EMBEDDING_DIMS), width))
    for role, row in table.items():
        w[_DIM[role]] = np.asarray(row, dtype=np.float64) * scale
    return w


def _syntax_weights() -> tuple[np.ndarray, np.ndarray]:
    return _role_table(SYNTAX_LOOKS_FOR, 3, SYNTAX_LOOK), _role_table(SYNTAX_OFFERS, 3, SYNTAX_OFFER)


def _previous_weights() -> tuple[np.ndarray, np.ndarray]:
    # From (position p, p², 1): q = c·(2(p−1), −1, −(p−1)²) and k = (p, p², 1), so
    # q_i·k_j = −c·(j − (i−1))². Every entry below is a coefficient of that expansion.
    c = PREVIOUS_SHARPNESS
    w_q = np.zeros((len(EMBEDDING_DIMS), 3))
    w_q[_DIM["position"]] = (2 * c, 0, 2 * c)
    w_q[_DIM["position²"]] = (0, 0, -c)
    w_q[_DIM["constant"]] = (-2 * c, -c, -c)
    w_k = np.zeros((len(EMBEDDING_DIMS), 3))
    w_k[[_DIM["position"], _DIM["position²"], _DIM["constant"]], [0, 1, 2]] = 1.0
    return w_q, w_k


def _coreference_weights() -> tuple[np.ndarray, np.ndarray]:
    w_q = _role_table({"PRON": (1, 1)}, 2, COREF_LOOK)
    w_k = _role_table({"NOUN": (1, 0)}, 2, COREF_OFFER)
    w_k[_DIM["subject"]] = (0, COREF_OFFER)
    return w_q, w_k


def _alignment_weights() -> tuple[np.ndarray, np.ndarray]:
    same = _role_table({r: tuple(np.eye(len(ROLES))[i]) for i, r in enumerate(ROLES)}, len(ROLES), ALIGN_STRENGTH)
    return same, same.copy()


def _role_values() -> tuple[np.ndarray, tuple[str, ...]]:  # the key word's role, one-hot
    w_v = _role_table({r: tuple(np.eye(len(ROLES))[i]) for i, r in enumerate(ROLES)}, len(ROLES), 1.0)
    return w_v, tuple(f"carries:{r}" for r in ROLES)


def _syntax_values() -> tuple[np.ndarray, tuple[str, ...]]:  # is the key a noun, a verb, an adjective?
    w_v = _role_table({"NOUN": (1, 0, 0), "PRON": (1, 0, 0), "VERB": (0, 1, 0), "AUX": (0, 1, 0),
                       "ADJ": (0, 0, 1)}, 3, 1.0)
    return w_v, tuple(f"carries:{d}" for d in SYNTAX_DIMS)


def _coreference_values() -> tuple[np.ndarray, tuple[str, ...]]:  # is the key a noun, a subject?
    w_v = _role_table({"NOUN": (1, 0), "PRON": (1, 0)}, 2, 1.0)
    w_v[_DIM["subject"]] = (0, 1)
    return w_v, ("carries:noun", "carries:subject")


# The slots each head writes into in the residual stream (its W_O block copies carries:X to
# <prefix>:X). The prefixes say which head wrote a number there.
OUTPUT_PREFIX = {"syntax": "syntax", "previous": "prev", "coreference": "coref", "alignment": "align"}


def _offsets(n_q: int, n_k: int) -> np.ndarray:  # -> [n_q, n_k]  j − i
    return np.arange(n_k)[None, :] - np.arange(n_q)[:, None]


_POINTS_FORWARD = np.array([role in FORWARD_ROLES for role in ROLES])  # [len(ROLES)] bool, by role index


def _syntax_bias(roles_q: np.ndarray, roles_k: np.ndarray, kind: str) -> np.ndarray | None:
    if kind == "cross":
        return None
    delta = _offsets(len(roles_q), len(roles_k))
    forward = _POINTS_FORWARD[roles_q][:, None]  # [n_q, 1]
    beyond = np.maximum(np.abs(delta) - 1, 0)
    step = np.where(forward, SYNTAX_STEP_FORWARD, SYNTAX_STEP_OTHER)
    bias = -step * beyond
    bias -= np.where(forward & (delta < 0), SYNTAX_WRONG_SIDE, 0.0)
    bias -= np.where(delta == 0, SYNTAX_SELF, 0.0)
    return bias


def _coreference_bias(roles_q: np.ndarray, roles_k: np.ndarray, kind: str) -> np.ndarray | None:
    if kind == "cross":
        return None
    delta = _offsets(len(roles_q), len(roles_k))
    pronoun = (roles_q == _ROLE["PRON"])[:, None]
    bias = np.where(delta < 0, -COREF_STEP * np.maximum(-delta - 1, 0), -COREF_AFTER)
    return np.where(pronoun, bias, 0.0)


def _alignment_bias(roles_q: np.ndarray, roles_k: np.ndarray, kind: str) -> np.ndarray | None:
    def place(n):  # relative place of each word: 0 at the start, 1 at the end
        return np.arange(n) / max(n - 1, 1)

    return -ALIGN_PLACE * np.abs(place(len(roles_k))[None, :] - place(len(roles_q))[:, None])


def _no_bias(roles_q: np.ndarray, roles_k: np.ndarray, kind: str) -> None:
    return None


@dataclass(frozen=True, eq=False)
class Head:
    """One designed head: its text for the page, its weights and its bias rule."""

    id: str
    name: str
    description: str  # one sentence: what this head looks for
    q_dims: tuple[str, ...]  # names of the query dimensions
    k_dims: tuple[str, ...]  # names of the key dimensions (the same axes as q_dims)
    v_dims: tuple[str, ...]
    bias: str  # "none" or one sentence describing the additive bias
    cross: str  # one sentence: what this head shows in cross attention
    w_q: np.ndarray = field(repr=False)  # [d_model, d_k]
    w_k: np.ndarray = field(repr=False)  # [d_model, d_k]
    w_v: np.ndarray = field(repr=False)  # [d_model, d_v]
    o_dims: tuple[str, ...]  # the residual dimensions this head's W_O block writes into
    w_o: np.ndarray = field(repr=False)  # [d_v, d_resid]: this head's block of W_O
    bias_rule: Callable[[np.ndarray, np.ndarray, str], np.ndarray | None] = field(repr=False)

    @property
    def d_k(self) -> int:
        return self.w_q.shape[1]


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _signed(x: float) -> str:  # -2.0 -> "−2", with a true minus sign
    return f"{x:g}".replace("-", "−")


def _make_heads() -> tuple[Head, ...]:
    plural = {"auxiliary": "auxiliaries"}
    names = [plural.get(ROLE_NAMES[r], ROLE_NAMES[r] + "s") for r in FORWARD_ROLES]
    forward = ", ".join(names[:-1]) + " and " + names[-1]
    specs = [
        ("syntax", "Syntax",
         "Each word looks for its grammatical partner: a determiner, number or adjective its "
         "noun, a preposition its object, a verb the nouns around it (it cannot tell "
         "subject from object or place, and prefers the nearest), a noun "
         "or pronoun its verb, an adverb the verb or adjective it modifies.",
         tuple(f"looks-for:{d}" for d in SYNTAX_DIMS), tuple(f"offers:{d}" for d in SYNTAX_DIMS),
         f"Distance and direction, added after ÷√d: {forward} look right ({_signed(-SYNTAX_WRONG_SIDE)} "
         f"for any word to their left) and lose {_signed(SYNTAX_STEP_FORWARD)} per word beyond the next; "
         f"all other words look both ways and lose {_signed(SYNTAX_STEP_OTHER)} per word beyond the "
         f"nearest; every word gets {_signed(-SYNTAX_SELF)} for itself.",
         "No bias: its distance rule counts words within one sentence, which means nothing across "
         "two. Each word finds the source words of the role it looks for, e.g. a determiner the "
         "source's nouns.",
         _syntax_weights, _syntax_values, _syntax_bias),
        ("previous", "Previous word",
         "Position only: each word looks for the word just before it — its query and key are "
         f"built from positions so that q·k = {_signed(-PREVIOUS_SHARPNESS)}·(j − (i−1))², 0 for the "
         "previous word and more negative with every step away from it.",
         ("position", "position²", "constant"), ("position", "position²", "constant"),
         "none",
         "It finds the source word at position i−1, right or wrong: a purely positional head "
         "cannot follow a change of word order.",
         _previous_weights, _role_values, _no_bias),
        ("coreference", "Coreference",
         "A pronoun looks for a noun, and a noun that is the subject of its clause (the model's "
         "subject flag, set by a rule) scores twice as high; other words look for nothing, so "
         "their weights are spread evenly.",
         ("looks-for:noun", "looks-for:subject"), ("offers:noun", "offers:subject"),
         f"Pronouns only, added after ÷√d: {_signed(-COREF_AFTER)} for the pronoun itself and any word "
         f"after it (an antecedent comes first) and {_signed(-COREF_STEP)} per word of distance to the left beyond "
         "the nearest, so among equal candidates the nearer wins.",
         "No bias: a pronoun finds the source sentence's subject noun, or else any noun.",
         _coreference_weights, _coreference_values, _coreference_bias),
        ("alignment", "Alignment",
         "Each word looks for a word of its own role at about the same place in its "
         "sentence — in translation, the source word it corresponds to; in a single sentence "
         "it mostly finds itself.",
         tuple(f"looks-for:{r}" for r in ROLES), tuple(f"offers:{r}" for r in ROLES),
         f"Relative place, added after ÷√d: {_signed(-ALIGN_PLACE)} times the difference between the "
         "two words' places in their sentences (0 at the start, 1 at the end).",
         "Same role, same relative place: a translated word finds its counterpart even where "
         "the word order differs.",
         _alignment_weights, _role_values, _alignment_bias),
    ]
    values = {hid: v() for hid, *_, v, _ in specs}
    o_dims = {hid: tuple(f"{OUTPUT_PREFIX[hid]}:{d.split(':', 1)[1]}" for d in values[hid][1]) for hid in values}
    residual_dims = EMBEDDING_DIMS + tuple(d for hid in values for d in o_dims[hid])
    at = {d: i for i, d in enumerate(residual_dims)}
    heads = []
    for hid, name, desc, q_dims, k_dims, bias, cross, weights, _, rule in specs:
        w_q, w_k = weights()
        w_v, v_dims = values[hid]
        w_o = np.zeros((len(v_dims), len(residual_dims)))
        w_o[np.arange(len(v_dims)), [at[d] for d in o_dims[hid]]] = 1.0  # copy carries:X into <head>:X
        heads.append(Head(hid, name, desc, q_dims, k_dims, v_dims, bias, cross,
                          _frozen(w_q), _frozen(w_k), _frozen(w_v), o_dims[hid], _frozen(w_o), rule))
    return tuple(heads), residual_dims


HEADS: tuple[Head, ...]
RESIDUAL_DIMS: tuple[str, ...]  # the residual stream: EMBEDDING_DIMS, then every head's output slots
HEADS, RESIDUAL_DIMS = _make_heads()
HEAD_IDS: tuple[str, ...] = tuple(h.id for h in HEADS)
_HEAD_BY_ID = {h.id: h for h in HEADS}
# Shown when a widget does not list its heads. Alignment is left out: in a single sentence
# it mostly finds the word itself, and each head adds n² numbers to the page.
DEFAULT_HEADS: tuple[str, ...] = ("syntax", "previous", "coreference")
KINDS = ("self", "causal", "cross")


def head(head_id: str) -> Head:
    return _HEAD_BY_ID[head_id]


# ---------------------------------------------------------------------------- compute


@dataclass(frozen=True, eq=False)
class HeadResult:
    """Every array of one head on one sentence. Masked entries (causal) are False in ``mask``."""

    q: np.ndarray  # [n_q, d_k]
    k: np.ndarray  # [n_k, d_k]
    v: np.ndarray  # [n_k, d_v]
    scores: np.ndarray  # [n_q, n_k] raw q·k (also where masked)
    bias: np.ndarray | None  # [n_q, n_k] or None when the head adds none here
    scaled: np.ndarray  # [n_q, n_k] q·k/√d_k + bias; -inf where masked
    weights: np.ndarray  # [n_q, n_k] softmax(scaled)
    weights_unscaled: np.ndarray  # [n_q, n_k] softmax(q·k + bias): the "÷√d off" view
    out: np.ndarray  # [n_q, d_v] weights @ v: the blend, in this head's value dimensions
    written: np.ndarray  # [n_q, d_resid] out @ w_o: what this head adds to each query's residual vector
    mask: np.ndarray  # [n_q, n_k] bool, True = may attend


def compute(
    queries: Sequence[Word],
    keys: Sequence[Word] | None = None,  # cross only: the source sentence
    *,
    kind: str = "self",
    heads: Sequence[str] = HEAD_IDS,
) -> dict[str, HeadResult]:
    """Run the designed heads on a sentence; returns ``{head_id: HeadResult}`` in ``heads`` order.

    ``self`` and ``causal`` take the keys from ``queries``; ``cross`` needs ``keys``.
    """
    assert kind in KINDS, f"unknown kind {kind!r}"
    assert (keys is not None) == (kind == "cross"), "keys are given for cross attention and only then"
    same = keys is None
    keys = queries if keys is None else keys
    assert queries and keys, "a sentence needs at least one word"
    x_q = embed(queries)
    x_k = x_q if same else embed(keys)
    roles_q = role_indices(queries)
    roles_k = roles_q if same else role_indices(keys)
    n_q, n_k = len(queries), len(keys)
    mask = causal_mask(n_q) if kind == "causal" else np.ones((n_q, n_k), dtype=bool)
    hs = [head(head_id) for head_id in heads]
    n = len(hs)
    # Heads differ in d_k (and so in √d_k): the projections and q·kᵀ are one small product per
    # head; everything after them is one call for all heads at once (a sentence's heads share
    # its n_q × n_k). Rows [0, n) of ``logits`` are the ÷√d scores, [n, 2n) the unscaled ones;
    # every element goes through the same operations as scaled_dot_product_attention's.
    logits = np.empty((2 * n, n_q, n_k))
    biases = np.zeros((n, n_q, n_k))
    qkv, bias_of = [], []
    for i, h in enumerate(hs):
        q, k, v = x_q @ h.w_q, x_k @ h.w_k, x_k @ h.w_v
        bias = h.bias_rule(roles_q, roles_k, kind)
        np.matmul(q * (1.0 / np.sqrt(h.d_k)), k.T, out=logits[i])
        np.matmul(q, k.T, out=logits[n + i])  # q·kᵀ: exact (small whole and half numbers), so also the raw scores
        if bias is not None:
            biases[i] = bias
        qkv.append((q, k, v))
        bias_of.append(bias)
    scores = logits[n:].copy()
    roots = np.sqrt(np.array([h.d_k for h in hs], dtype=np.int64)).reshape(n, 1, 1)
    scaled = np.where(mask, scores / roots + biases, -np.inf)
    logits[:n] += biases  # a head without a bias adds zeros: the same weights (at most a 0 becomes +0)
    logits[n:] += biases
    np.copyto(logits, -np.inf, where=~mask)
    weights = softmax_into(logits, logits, axis=-1)
    results = {}
    for i, h in enumerate(hs):
        q, k, v = qkv[i]
        out = weights[i] @ v
        results[h.id] = HeadResult(q, k, v, scores[i], bias_of[i], scaled[i], weights[i], weights[n + i], out,
                                   out @ h.w_o, mask)
    return results


def self_weights(queries: Sequence[Word], heads: Sequence[str] = HEAD_IDS) -> np.ndarray:
    # -> [len(heads), n, n]
    """``compute(queries, heads=heads)[h].weights`` for each head ``h`` (self-attention), stacked:
    the same numbers bit for bit, through the same operations, without compute's other arrays
    (values, outputs, the "÷√d off" softmax). The learned-head matching reads only these, for every
    sentence of a lab."""
    x = embed(queries)
    roles = role_indices(queries)
    n = len(queries)
    logits = np.empty((len(heads), n, n))
    for i, head_id in enumerate(heads):
        h = head(head_id)
        np.matmul((x @ h.w_q) * (1.0 / np.sqrt(h.d_k)), (x @ h.w_k).T, out=logits[i])
        bias = h.bias_rule(roles, roles, "self")
        if bias is not None:  # compute adds zeros for a head without one: the same weights
            logits[i] += bias
    return softmax_into(logits, logits, axis=-1)


def residual(queries: Sequence[Word], results: Mapping[str, HeadResult]) -> tuple[np.ndarray, np.ndarray]:
    # -> [n_q, d_resid] before, [n_q, d_resid] after
    """The query words' residual vectors before and after the attention layer made of ``results``'
    heads: ``before`` is the embedding (zeros in the heads' slots), ``after = before + Σ_h out_h·W_O^h``
    — what a real layer does, ``x + concat(out_1 … out_H)·W_O``, before its MLP."""
    before = np.zeros((len(queries), len(RESIDUAL_DIMS)))
    before[:, : len(EMBEDDING_DIMS)] = embed(queries)
    return before, before + sum((r.written for r in results.values()), np.zeros_like(before))
