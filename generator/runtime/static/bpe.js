/* Byte-level BPE in the page, as GPT-2 made it and SmolLM2 uses it: the same ids as the build's
   Python tokenizer for the same text.

     1. control tokens ("<|im_start|>", …) are cut out of the text whole, leftmost and longest first;
     2. the pre-tokenizer cuts the rest into words: every number character alone ("smollm"), then
        GPT-2's pattern  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
        over each piece;
     3. each word's UTF-8 bytes become characters (GPT-2's byte-to-unicode table: a space is "Ġ"),
        so that every byte sequence has a spelling and no text is ever unknown;
     4. the word's characters merge, the lowest-ranked adjacent pair first, every occurrence of it
        left to right, until no pair is in the merges; each symbol is a token.

   The pattern is not a browser RegExp: \p{L}, \p{N} and \s are whatever Unicode the browser was
   built with, and they differ between browsers and from the build's Python. The classes come with
   the data instead (tables [start, length, gap, length, …], generator/runtime/decoder.py), and
   step 2 is a scanner that does what the pattern does, alternative by alternative.

   const bpe = Labs.runtime.BPE(data);           // data: what model-tokenizer.<h>.js registers
   bpe.encode(text, {special})  → {text, ids, tokens, words, offsets}   (special: default true)
   bpe.decode(ids)              → the text (invalid UTF-8 as U+FFFD)
   bpe.token(id), bpe.id(token), bpe.tokenBytes(id), bpe.size, bpe.bos, bpe.eos, bpe.control,
   bpe.preTokenize(text), bpe.merge(word)                                                       */
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

  function create(data) {
    if (!data || data.format !== FORMAT) {
      throw new Error(`tokenizer data of format ${data && data.format}, this tokenizer reads format ${FORMAT}`);
    }
    if (data.pre !== "smollm") throw new Error(`pre-tokenizer ${data.pre}: this tokenizer knows "smollm"`);
    const U = data.unicode;
    const rangeSet = runtime.rangeSet;  // static/wordpiece.js, earlier in the same runtime script
    const isLetter = rangeSet(U.letter), isNumber = rangeSet(U.number), isSpace = rangeSet(U.space);
    const tokens = data.tokens.split(" ");
    const vocab = new Map();
    tokens.forEach((token, id) => vocab.set(token, id));
    const merges = data.merges.split("\n"), ranks = new Map();
    merges.forEach((pair, rank) => ranks.set(pair, rank));
    const { toChar, toByte } = byteTable();
    const control = data.control.map(id => tokens[id]).sort((a, b) => b.length - a.length);  // longest first
    const encoder = new TextEncoder(), decoder = new TextDecoder("utf-8");
    const cache = new Map();  // word -> its tokens' ids: text repeats words

    /** Step 1: [{text, id}] pieces, id set for a control token, in order. */
    function splitControl(text, special) {
      if (!special || !control.length) return [{ text, id: -1 }];
      const out = [];
      let from = 0;
      for (let i = 0; i < text.length;) {
        const found = text.charCodeAt(i) === 0x3c ? control.find(c => text.startsWith(c, i)) : undefined;  // all start with "<"
        if (found === undefined) { i++; continue; }
        if (i > from) out.push({ text: text.slice(from, i), id: -1 });
        out.push({ text: found, id: vocab.get(found) });
        i += found.length;
        from = i;
      }
      if (from < text.length) out.push({ text: text.slice(from), id: -1 });
      return out;
    }

    /** GPT-2's pattern over code points cs[from, to): the words, as [start, end) pairs. */
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

    /** Step 2: the words of text (no control tokens in it), as strings. */
    function preTokenize(text) {
      const cs = Array.from(text, ch => ch.codePointAt(0)), words = [];
      const spans = [];
      let from = 0;
      for (let i = 0; i <= cs.length; i++) {  // every number character alone, then the pattern on each piece
        if (i < cs.length && !isNumber(cs[i])) continue;
        if (i > from) pattern(cs, from, i, spans);
        if (i < cs.length) spans.push([i, i + 1]);
        from = i + 1;
      }
      for (const [a, b] of spans) words.push(String.fromCodePoint(...cs.slice(a, b)));
      return words;
    }

    /** Steps 3-4 for one word: its UTF-8 bytes as byte characters, merged; the symbols. */
    function merge(word) {
      let symbols = Array.from(encoder.encode(word), b => toChar[b]);
      while (symbols.length > 1) {
        let best = -1, bestRank = Infinity;
        for (let i = 0; i + 1 < symbols.length; i++) {
          const rank = ranks.get(symbols[i] + " " + symbols[i + 1]);
          if (rank !== undefined && rank < bestRank) { bestRank = rank; best = i; }
        }
        if (best < 0) break;
        const left = symbols[best], right = symbols[best + 1], merged = [];
        for (let i = 0; i < symbols.length; i++) {
          if (i + 1 < symbols.length && symbols[i] === left && symbols[i + 1] === right) { merged.push(left + right); i++; }
          else merged.push(symbols[i]);
        }
        symbols = merged;
      }
      return symbols;
    }

    function wordIds(word) {
      let ids = cache.get(word);
      if (ids === undefined) {
        ids = merge(word).map(symbol => {
          const id = vocab.get(symbol);
          if (id === undefined) throw new Error(`the merges make ${symbol}, which is not a token`);
          return id;
        });
        if (cache.size > 50000) cache.clear();
        cache.set(word, ids);
      }
      return ids;
    }

    /** {text, ids, tokens, words, offsets}: tokens the byte-level spellings, words the pre-tokenizer's
        words (control tokens among them), offsets each token's [start, end) in the text's UTF-8 bytes. */
    function encode(text, options) {
      const special = !options || options.special !== false;
      const ids = [], words = [], offsets = [];
      let at = 0;
      for (const piece of splitControl(String(text), special)) {
        const pieceWords = piece.id >= 0 ? [piece.text] : preTokenize(piece.text);
        for (const word of pieceWords) {
          words.push(word);
          const wordIdList = piece.id >= 0 ? [piece.id] : wordIds(word);
          for (const id of wordIdList) {
            const length = piece.id >= 0 ? encoder.encode(word).length : tokens[id].length;
            ids.push(id);
            offsets.push([at, at + length]);
            at += length;
          }
        }
      }
      return { text: String(text), ids, tokens: ids.map(id => tokens[id]), words, offsets };
    }

    /** The bytes a token stands for (a control token: its text in UTF-8). */
    function tokenBytes(id) {
      const token = tokens[id];
      if (token === undefined) throw new Error(`token id ${id} is outside the vocabulary`);
      if (data.control.includes(id)) return encoder.encode(token);
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
      bos: data.bos, eos: data.eos, unk: data.unk, pad: data.pad, control: data.control.slice(),
      chatTemplate: data.chat_template, unicodeVersion: U.version,
    });
  }

  const made = new WeakMap();
  /** One tokenizer per data object: a second call with the same data is free. */
  runtime.BPE = data => {
    if (!made.has(data)) made.set(data, create(data));
    return made.get(data);
  };
})();
