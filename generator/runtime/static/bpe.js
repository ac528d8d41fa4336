/* Byte-level BPE in the page: generator/models/bpe.py in JavaScript, the same ids for the same text.

     1. special tokens (control and user-defined: "<|im_start|>", …) are cut out of the text whole,
        leftmost, the longest at a place;
     2. the pre-tokenizer cuts the rest into pieces: every numeral (\p{N}) alone ("smollm"), then
        GPT-2's pattern  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
        over each stretch between them ("gpt2": the pattern alone);
     3. each piece's UTF-8 bytes become characters (GPT-2's byte-to-unicode table: a space is "Ġ");
        a byte the vocabulary has no token for is dropped and counted;
     4. the pair of adjacent symbols with the lowest merge rank is merged, the leftmost among
        equals, again and again, until no pair is a merge; each symbol left is a token.

   The pattern is not a browser RegExp: \p{L}, \p{N} and \s are whatever Unicode the browser was
   built with, which differs between browsers and from the build's. The classes come with the data
   instead (tables [start, length, gap, length, …] made by generator/runtime/decoder.py with the
   regex package bpe.py matches with), and step 2 is a scanner that does what the pattern does,
   alternative by alternative.

   const bpe = Labs.runtime.BPE(data);          // data: what model-tokenizer.<h>.js registers
   bpe.encode(text, {special})  → {text, ids, tokens, pieces, offsets, dropped}  (special: default true)
   bpe.decode(ids)              → the text (invalid UTF-8 as U+FFFD)
   bpe.token(id), bpe.id(token), bpe.tokenBytes(id), bpe.size, bpe.bos, bpe.eos, bpe.special,
   bpe.preTokenize(text), bpe.merge(piece)                                                        */
(() => {
  "use strict";
  const Labs = self.Labs = self.Labs || {};  // self: the window, or a Worker's global scope
  const runtime = Labs.runtime = Labs.runtime || {};
  const FORMAT = 1;  // decoder.py's TOKENIZER_FORMAT
  const SPACE = 0x20, APOSTROPHE = 0x27;
  const CONTRACTIONS = ["s", "t", "re", "ve", "m", "ll", "d"];  // after an apostrophe, in the pattern's order

  /** GPT-2's bytes_to_unicode: the printable bytes stand for themselves, the others (controls,
      space, DEL, NBSP, soft hyphen …) for the characters from U+0100 on, in byte order. */
  function byteTable() {
    const toChar = new Array(256), toByte = new Map();
    let extra = 0;
    for (let b = 0; b < 256; b++) {
      const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      toChar[b] = String.fromCharCode(printable ? b : 256 + extra++);
      toByte.set(toChar[b], b);
    }
    return { toChar, toByte };
  }

  const STEP = 8192;  // table entries between two pauses: a few milliseconds

  /** The tokenizer of `data`, as a generator: it yields every STEP entries while it fills its
      tables (98,000 of them for SmolLM2), so that the loader can build it on the main thread in
      slices; the generator's value is the tokenizer. */
  function* build(data) {
    if (!data || data.format !== FORMAT) {
      throw new Error(`tokenizer data of format ${data && data.format}, this tokenizer reads format ${FORMAT}`);
    }
    if (data.pre !== "smollm" && data.pre !== "gpt2") throw new Error(`pre-tokenizer ${data.pre}: this tokenizer knows "smollm" and "gpt2"`);
    const U = data.unicode;
    const rangeSet = runtime.rangeSet;  // static/wordpiece.js, earlier in the same runtime script
    const isLetter = rangeSet(U.letter), isNumber = rangeSet(U.number), isSpace = rangeSet(U.space);
    const tokens = data.tokens.split(" ");
    const vocab = new Map();
    for (let id = 0; id < tokens.length; id++) {
      vocab.set(tokens[id], id);
      if (id % STEP === STEP - 1) yield;
    }
    const ranks = new Map();  // "left right" -> rank; a repeated merge keeps its first rank
    const pairs = data.merges.split("\n");
    for (let rank = 0; rank < pairs.length; rank++) {
      if (!ranks.has(pairs[rank])) ranks.set(pairs[rank], rank);
      if (rank % STEP === STEP - 1) yield;
    }
    const { toChar, toByte } = byteTable();
    const isSpecial = new Set(data.special);
    // longest first, then in code unit order: at each place the longest special token that fits
    const special = data.special.map(id => tokens[id]).sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
    const encoder = new TextEncoder(), decoder = new TextDecoder("utf-8", { ignoreBOM: true });  // a leading U+FEFF is text, as in Python
    const cache = new Map();  // piece -> {ids, dropped}

    /** Step 1: [{text, id}] stretches in order, id set for a special token (else -1). */
    function splitSpecial(text, on) {
      if (!on || !special.length) return [{ text, id: -1 }];
      const out = [];
      let from = 0;
      for (let i = 0; i < text.length;) {
        const found = special.find(c => text.startsWith(c, i));
        if (found === undefined) { i++; continue; }
        if (i > from) out.push({ text: text.slice(from, i), id: -1 });
        out.push({ text: found, id: vocab.get(found) });
        i += found.length;
        from = i;
      }
      if (from < text.length) out.push({ text: text.slice(from), id: -1 });
      return out;
    }

    /** GPT-2's pattern over code points cs[from, to): its pieces, as [start, end) pairs. */
    function pattern(cs, from, to, out) {
      const kind = c => (isLetter(c) ? 1 : isNumber(c) ? 2 : isSpace(c) ? 3 : 4);
      let i = from;
      while (i < to) {
        const c = cs[i];
        let end = -1;
        if (c === APOSTROPHE) {  // 's|'t|'re|'ve|'m|'ll|'d
          for (const tail of CONTRACTIONS) {
            let k = 0;
            while (k < tail.length && i + 1 + k < to && cs[i + 1 + k] === tail.charCodeAt(k)) k++;
            if (k === tail.length) { end = i + 1 + k; break; }
          }
        }
        if (end < 0) {  //  ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+
          const start = c === SPACE && i + 1 < to && kind(cs[i + 1]) !== 3 ? i + 1 : i;
          const k = kind(cs[start]);
          if (k !== 3) {
            end = start + 1;
            while (end < to && kind(cs[end]) === k) end++;
          }
        }
        if (end < 0) {  // \s+(?!\S) | \s+ : a run of spaces gives its last one to a word that follows
          let run = i + 1;
          while (run < to && kind(cs[run]) === 3) run++;
          end = run < to && run - i > 1 ? run - 1 : run;
        }
        out.push([i, end]);
        i = end;
      }
    }

    /** Step 2: the pieces of text (no special tokens in it), in order; they join up to text. */
    function preTokenize(text) {
      const cs = Array.from(text, ch => ch.codePointAt(0)), spans = [];
      if (data.pre === "gpt2") pattern(cs, 0, cs.length, spans);
      else {
        let from = 0;
        for (let i = 0; i <= cs.length; i++) {  // every numeral alone, the pattern over each stretch between
          if (i < cs.length && !isNumber(cs[i])) continue;
          if (i > from) pattern(cs, from, i, spans);
          if (i < cs.length) spans.push([i, i + 1]);
          from = i + 1;
        }
      }
      return spans.map(([a, b]) => String.fromCodePoint(...cs.slice(a, b)));
    }

    /** Steps 3-4 for one piece: {symbols (the tokens' spellings), dropped (bytes without a token)}. */
    function merge(piece) {
      const chars = Array.from(encoder.encode(piece), b => toChar[b]);
      const symbols = chars.filter(ch => vocab.has(ch)), dropped = chars.length - symbols.length;
      for (;;) {
        let best = -1, bestRank = Infinity;
        for (let i = 0; i + 1 < symbols.length; i++) {
          const rank = ranks.get(symbols[i] + " " + symbols[i + 1]);
          if (rank !== undefined && rank < bestRank) { bestRank = rank; best = i; }  // strict: the leftmost among equals
        }
        if (best < 0) break;
        symbols.splice(best, 2, symbols[best] + symbols[best + 1]);
      }
      return { symbols, dropped };
    }

    function pieceIds(piece) {  // {ids, dropped}, kept per piece: text repeats its words
      let found = cache.get(piece);
      if (found === undefined) {
        const merged = merge(piece);
        found = { ids: merged.symbols.map(symbol => vocab.get(symbol)), dropped: merged.dropped };
        if (cache.size >= 100000) cache.clear();
        cache.set(piece, found);
      }
      return found;
    }

    /** {text, ids, tokens, pieces, offsets, dropped}: tokens the vocabulary's spellings of ids,
        pieces the pre-tokenizer's (special tokens among them), offsets each token's [start, end)
        in the text's UTF-8 bytes, dropped the bytes no token holds. */
    function encode(text, options) {
      text = String(text);
      const on = !options || options.special !== false;
      const ids = [], pieces = [], offsets = [];
      let at = 0, dropped = 0;
      for (const stretch of splitSpecial(text, on)) {
        if (stretch.id >= 0) {
          const length = encoder.encode(stretch.text).length;
          pieces.push(stretch.text);
          ids.push(stretch.id);
          offsets.push([at, at + length]);
          at += length;
          continue;
        }
        for (const piece of preTokenize(stretch.text)) {
          pieces.push(piece);
          const found = pieceIds(piece);
          if (found.dropped) {  // offsets follow the text's bytes: walk them, skipping those dropped
            const chars = Array.from(encoder.encode(piece), b => toChar[b]);
            let k = 0;
            for (const id of found.ids) {
              while (!vocab.has(chars[k])) { k++; at++; }
              ids.push(id);
              offsets.push([at, at + tokens[id].length]);
              at += tokens[id].length;
              k += tokens[id].length;
            }
            at += chars.length - k;
          } else {
            for (const id of found.ids) {
              ids.push(id);
              offsets.push([at, at + tokens[id].length]);
              at += tokens[id].length;
            }
          }
          dropped += found.dropped;
        }
      }
      return { text, ids, tokens: ids.map(id => tokens[id]), pieces, offsets, dropped };
    }

    /** The bytes a token stands for (a special token: its text in UTF-8). */
    function tokenBytes(id) {
      const token = tokens[id];
      if (token === undefined) throw new Error(`token id ${id} is outside the vocabulary`);
      if (isSpecial.has(id)) return encoder.encode(token);
      return Uint8Array.from(token, ch => toByte.get(ch));
    }

    function decode(ids) {
      const parts = Array.from(ids, tokenBytes), bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const part of parts) { bytes.set(part, at); at += part.length; }
      return decoder.decode(bytes);
    }

    return Object.freeze({
      encode, decode, preTokenize, merge, tokenBytes,
      token: id => tokens[id], id: token => vocab.get(token), size: tokens.length,
      bos: data.bos, eos: data.eos, special: data.special.slice(), chatTemplate: data.chat_template,
      unicodeVersion: U.version,
    });
  }

  const made = new WeakMap();
  /** One tokenizer per data object: a second call with the same data is free. */
  runtime.BPE = data => {
    if (!made.has(data)) {
      const steps = build(data);
      let step;
      do step = steps.next(); while (!step.done);
      made.set(data, step.value);
    }
    return made.get(data);
  };
  /** The same, built in steps (a generator whose value is the tokenizer) for a caller that pauses. */
  runtime.BPE.steps = function* (data) {
    if (!made.has(data)) made.set(data, yield* build(data));
    return made.get(data);
  };
})();
