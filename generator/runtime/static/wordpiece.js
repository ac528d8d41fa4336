/* WordPiece tokenisation in the page, exactly as generator/models/wordpiece.py does it (BERT's
   uncased tokenizer): the same steps, words, pieces, ids and word spans.
   Every character class comes with the data (generator/runtime/vocab.py, from the build's Python
   unicodedata), never from the browser's Unicode, which may be newer or older. The browser does
   only NFC and NFD (String.prototype.normalize): the text reaches them cleaned of every code point
   the build's Unicode leaves unassigned, and Unicode keeps the normal forms of assigned
   characters the same in every later version.
   Strings are walked by code point, as Python walks a str: a piece of 100 characters is 100 code
   points, and a word span counts code points (wordRanges gives the same spans in UTF-16 units).

   const wp = Labs.runtime.WordPiece(Labs.runtimeData[key]);   // one tokenizer per data object
   wp.encode(text)  → {text, tokens, ids, wordIds, words, sourceWords, wordSpans, wordRanges}
   wp.steps(text)   → each step's result: cleaned, spaced, nfc, chunks, lowered, normalised, split, words
   wp.search(word)  → the greedy longest-match-first search, every prefix tried
   wp.basicTokenize, wp.wordpiece, wp.clean, wp.lower, wp.normaliseToken, wp.splitOnPunctuation,
   wp.id(piece), wp.piece(id), wp.size, wp.settings, and the character classes by code point:
   wp.chars.isDropped and .isMark for any, .isWhitespace, .isSpace, .isChinese, .isPunctuation and
   .isNonspacing for those cleaning keeps (the only ones that reach them) */
(() => {
  "use strict";
  const Labs = self.Labs = self.Labs || {};  // self: the window, or a Worker's global scope
  const runtime = Labs.runtime = Labs.runtime || {};
  const FORMAT = 1;  // vocab.py's DATA_FORMAT
  const CAPITAL_SIGMA = 0x3a3;
  const made = new WeakMap();

  /** Membership of a code point in a table [start, length, gap, length, …] (vocab.py): a binary
      search over the range bounds, with Latin-1 answered from an array. */
  function rangeSet(flat) {
    const bounds = new Uint32Array(flat.length);
    for (let i = 0, at = 0; i < flat.length; i++) bounds[i] = at += flat[i];
    const search = code => {
      let lo = 0, hi = bounds.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (bounds[mid] <= code) lo = mid + 1; else hi = mid;
      }
      return (lo & 1) === 1;  // an odd number of bounds at or below: inside [start, end)
    };
    const latin = Uint8Array.from({ length: 256 }, (_, code) => search(code));
    return code => (code < 256 ? latin[code] === 1 : search(code));
  }

  /** Python's str.lower per code point: the runs [gap, count, stride, delta] and the long ones. */
  function lowerMap(runs, long) {
    const map = new Map();
    for (let i = 0, last = 0; i < runs.length; i += 4) {
      const start = last + runs[i], count = runs[i + 1], stride = runs[i + 2], delta = runs[i + 3];
      for (let k = 0; k < count; k++) map.set(start + k * stride, String.fromCodePoint(start + k * stride + delta));
      last = start + (count - 1) * stride;
    }
    for (const [code, text] of Object.entries(long)) map.set(Number(code), text);
    return map;
  }

  const codeOf = ch => ch.codePointAt(0);

  function create(data) {
    if (!data || data.format !== FORMAT) {
      throw new Error(`tokenizer data of format ${data && data.format}, this tokenizer reads format ${FORMAT}`);
    }
    const U = data.unicode;
    const chars = {
      isDropped: rangeSet(U.dropped), isWhitespace: rangeSet(U.whitespace), isSpace: rangeSet(U.space),
      isChinese: rangeSet(U.chinese), isPunctuation: rangeSet(U.punctuation), isNonspacing: rangeSet(U.nonspacing),
      isMark: rangeSet(U.mark),
    };
    const isIgnorable = rangeSet(U.case_ignorable), isCased = rangeSet(U.cased), LOWER = lowerMap(U.lower, U.lower_long);
    const settings = Object.freeze({
      lower_case: data.lower_case, strip_accents: data.strip_accents, tokenize_chinese_chars: data.tokenize_chinese_chars,
      unk_token: data.unk_token, cls_token: data.cls_token, sep_token: data.sep_token,
      max_input_chars_per_word: data.max_input_chars_per_word, unicode_version: U.version,
    });
    const stripAccents = settings.strip_accents ?? settings.lower_case;  // null: strip exactly when lower-casing

    const pieces = data.pieces.split(data.separator), ids = data.ids;
    const vocab = new Map();
    let longest = 0;  // in UTF-16 units: a longer prefix cannot be a piece, so search() skips its lookup
    for (let i = 0; i < pieces.length; i++) {
      vocab.set(pieces[i], ids ? ids[i] : i);
      if (pieces[i].length > longest) longest = pieces[i].length;
    }
    let byId = ids ? null : pieces;  // id → piece, made on first use when the ids have gaps

    /* ---------- the basic tokenizer: wordpiece.py's steps 1–5 ---------- */

    /** clean_text: NUL, U+FFFD and control characters dropped; whitespace becomes a space. */
    function clean(text) {
      let out = "";
      for (const ch of text) {
        const c = codeOf(ch);
        if (!chars.isDropped(c)) out += chars.isWhitespace(c) ? " " : ch;
      }
      return out;
    }

    /** A space either side of every CJK ideograph. */
    function spaceChinese(text) {
      let out = "";
      for (const ch of text) out += chars.isChinese(codeOf(ch)) ? ` ${ch} ` : ch;
      return out;
    }

    /** Python's str.split(): the runs between whitespace (str.isspace), none empty. */
    function splitWhitespace(text) {
      const out = [];
      let word = "";
      for (const ch of text) {
        if (!chars.isSpace(codeOf(ch))) word += ch;
        else if (word) { out.push(word); word = ""; }
      }
      if (word) out.push(word);
      return out;
    }

    /** Python's handle_capital_sigma: final (ς) when, skipping case-ignorable characters, a cased
        one comes before and none after. */
    function finalSigma(cs, i) {
      let j = i - 1;
      while (j >= 0 && isIgnorable(codeOf(cs[j]))) j--;
      if (j < 0 || !isCased(codeOf(cs[j]))) return false;
      for (j = i + 1; j < cs.length && isIgnorable(codeOf(cs[j])); j++);
      return j === cs.length || !isCased(codeOf(cs[j]));
    }

    /** Python's str.lower, for text without the characters cleaning drops. */
    function lower(text) {
      const cs = Array.from(text);
      let out = "";
      for (let i = 0; i < cs.length; i++) {
        const c = codeOf(cs[i]);
        out += c === CAPITAL_SIGMA ? (finalSigma(cs, i) ? "\u03c2" : "\u03c3") : LOWER.get(c) ?? cs[i];
      }
      return out;
    }

    /** _normalise_token: lower-case and/or strip accents (NFD, drop Mn) one whitespace token. */
    function normaliseToken(token) {
      if (settings.lower_case) token = lower(token);
      if (!stripAccents) return token;
      let out = "";
      for (const ch of token.normalize("NFD")) if (!chars.isNonspacing(codeOf(ch))) out += ch;
      return out;
    }

    /** _split_on_punctuation: "didn't" → ["didn", "'", "t"]. */
    function splitOnPunctuation(token) {
      const words = [];
      let startNew = true;
      for (const ch of token) {
        if (chars.isPunctuation(codeOf(ch))) { words.push(ch); startNew = true; }
        else {
          if (startNew) words.push("");
          startNew = false;
          words[words.length - 1] += ch;
        }
      }
      return words;
    }

    /** basic_tokenize, every step kept: cleaned (clean_text), spaced (CJK ideographs spaced out),
        nfc, chunks (split on whitespace), lowered (each chunk lower-cased, or as it was for a
        cased vocabulary), normalised (lower-cased and accents stripped as the switches say),
        split (each normalised chunk split on punctuation) and words (what the pieces are made of). */
    function steps(text) {
      const cleaned = clean(text);
      const spaced = settings.tokenize_chinese_chars ? spaceChinese(cleaned) : cleaned;
      const nfc = spaced.normalize("NFC");
      const chunks = splitWhitespace(nfc);
      const lowered = settings.lower_case ? chunks.map(lower) : chunks.slice();
      const normalised = chunks.map(normaliseToken);
      const split = normalised.map(splitOnPunctuation);
      // wordpiece.py splits the joined words on whitespace again, as transformers does
      const words = splitWhitespace(split.flat().join(" "));
      return { text, cleaned, spaced, nfc, chunks, lowered, normalised, split, words };
    }

    /* ---------- step 6: greedy longest-match-first ---------- */

    /** One word's pieces, and with `record` every prefix tried: {start, end, piece, found}, start
        and end in code points of the word. tooLong: over max_input_chars_per_word; unknown: some
        rest of the word has no piece. Either way the pieces are [unk_token]. */
    function search(word, record = true) {
      const cs = Array.from(word), tries = record ? [] : null;
      const result = { word, pieces: [], tries, tooLong: false, unknown: false };
      if (cs.length > settings.max_input_chars_per_word) {
        result.tooLong = true;
        result.pieces = [settings.unk_token];
        return result;
      }
      const offsets = [0];  // code point → UTF-16 offset
      for (const ch of cs) offsets.push(offsets[offsets.length - 1] + ch.length);
      for (let start = 0; start < cs.length;) {
        let end = cs.length;
        const prefix = start === 0 ? 0 : 2;  // "##"
        for (; end > start; end--) {
          if (!record && prefix + offsets[end] - offsets[start] > longest) continue;
          const piece = (prefix ? "##" : "") + word.slice(offsets[start], offsets[end]);
          const found = vocab.has(piece);
          if (record) tries.push({ start, end, piece, found });
          if (found) { result.pieces.push(piece); break; }
        }
        if (end === start) {  // no prefix of the rest is in the vocabulary
          result.unknown = true;
          result.pieces = [settings.unk_token];
          return result;
        }
        start = end;
      }
      return result;
    }

    const wordpiece = word => search(word, false).pieces;

    /* ---------- where the words stand in the text (display only): _word_spans ---------- */

    const norm = text => normaliseToken(clean(text).normalize("NFC"));
    const allSpace = text => { for (const ch of text) if (!chars.isSpace(codeOf(ch))) return false; return true; };

    /** For each word, in order, the shortest run of code points from the cursor that normalises to
        exactly that word, extended over any marks (M*) that follow and keep it so; null when none
        within 4 × its length + 8 code points. [start, end) in code points of `cs`. */
    function wordSpans(cs, words) {
      const spans = [];
      let cursor = 0;
      const from = (a, b) => cs.slice(a, b).join("");
      for (const word of words) {
        while (cursor < cs.length && allSpace(norm(cs[cursor]))) cursor++;
        const limit = Math.min(cs.length, cursor + 4 * Array.from(word).length + 8);
        let end = null;
        for (let e = cursor + 1; e <= limit; e++) if (norm(from(cursor, e)) === word) { end = e; break; }
        if (end === null) { spans.push(null); continue; }
        while (end < cs.length && chars.isMark(codeOf(cs[end])) && norm(from(cursor, end + 1)) === word) end++;
        spans.push([cursor, end]);
        cursor = end;
      }
      return spans;
    }

    /* ---------- the whole tokenizer ---------- */

    /** encode(): [CLS], the pieces of every word, [SEP]; wordIds index words (null for [CLS] and
        [SEP]); sourceWords are the words as written (control characters dropped); wordSpans are
        [start, end) in code points and wordRanges the same in UTF-16 units (for slicing the
        string or selecting it in a text box), null where a word could not be aligned. */
    function encode(text) {
      const words = steps(text).words;
      const tokens = [settings.cls_token], wordIds = [null];
      words.forEach((word, index) => {
        for (const piece of wordpiece(word)) { tokens.push(piece); wordIds.push(index); }
      });
      tokens.push(settings.sep_token);
      wordIds.push(null);
      const unk = vocab.has(settings.unk_token) ? vocab.get(settings.unk_token) : 0;
      const ids = tokens.map(t => (vocab.has(t) ? vocab.get(t) : unk));
      const cs = Array.from(text), offsets = [0];
      for (const ch of cs) offsets.push(offsets[offsets.length - 1] + ch.length);
      const spans = wordSpans(cs, words);
      return {
        text, tokens, ids, wordIds, words,
        sourceWords: words.map((w, i) => (spans[i] ? clean(cs.slice(...spans[i]).join("")) : w)),
        wordSpans: spans,
        wordRanges: spans.map(s => (s ? [offsets[s[0]], offsets[s[1]]] : null)),
      };
    }

    return Object.freeze({
      encode, steps, search, wordpiece, clean, lower, normaliseToken, splitOnPunctuation,
      basicTokenize: text => steps(text).words,
      id: piece => vocab.get(piece),
      piece: id => {
        if (!byId) { byId = []; vocab.forEach((i, p) => { byId[i] = p; }); }
        return byId[id];
      },
      size: vocab.size, settings, chars: Object.freeze(chars),
    });
  }

  runtime.rangeSet = rangeSet;  // static/bpe.js reads its classes the same way

  /** The tokenizer of one Labs.runtimeData entry (vocab.py's tokenizer_data), made once per entry. */
  runtime.WordPiece = data => {
    let tokenizer = made.get(data);
    if (!tokenizer) made.set(data, tokenizer = create(data));
    return tokenizer;
  };
})();
