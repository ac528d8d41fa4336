/* The designed model of generator/kinds/attention/teaching.py, in JavaScript: for "Your sentence".
   Every table comes from Labs.data.ownTables, written at build time from the Python (own.py); this file
   holds only the arithmetic, step for step as NumPy does it (core.py: q·scale, then q·kᵀ, + bias,
   mask, max-subtracted softmax with NumPy's pairwise sum). tests/test_attention_own_parity.py holds
   it to the NumPy numbers: every weight within 1e-9, the same rounded percentages.
   Labs.code.ownModel = { parse(text, guess), compute(queries, keys, kind, heads), residual(queries, results),
   percentages(row, total), guessTag(word, first), heads, roles, maxWords, nRoles } */
(() => {
  "use strict";
  const Labs = window.Labs, T = Labs.data.ownTables;
  const ROLES = T.roles, ROLE = Object.fromEntries(ROLES.map((r, i) => [r, i]));
  const DIMS = T.embedding_dims, DIM = Object.fromEntries(DIMS.map((d, i) => [d, i]));
  const RESID = T.residual_dims, NROLES = ROLES.length;
  const PUNCT = new Set(T.punct);
  // Python's \d is any decimal digit (str patterns), JavaScript's only 0-9.
  const NUMBER = new RegExp("^(?:" + T.number.replace(/\\d/g, "\\p{Nd}") + ")$", "u");
  const HEADS = new Map(T.heads.map(h => [h.id, h]));
  const allPunct = s => [...s].every(c => PUNCT.has(c));

  /* ---------- reading a sentence: teaching.parse_sentence, plus guessed tags ---------- */

  /** Tag guess for an untagged word the lexicon lacks (the Python model asks the author instead):
      starts with a digit → NUM; capitalised, not first in its sentence → PROPN (= NOUN); -ly → ADV;
      -ing, -ed → VERB; -ous, -ful, -ive, -able, -ible, -less, -ish → ADJ; anything else → NOUN. */
  function guessTag(word, first) {
    const w = word.toLowerCase();
    if (/^\p{N}/u.test(word)) return "NUM";
    if (!first && /^\p{Lu}/u.test(word)) return "PROPN";
    if (w.length > 4 && w.endsWith("ly")) return "ADV";
    if (w.length > 4 && /(?:ing|ed)$/.test(w)) return "VERB";
    if (w.length > 5 && /(?:ous|ful|ive|able|ible|less|ish)$/.test(w)) return "ADJ";
    return "NOUN";
  }

  /** teaching._split_token: leading and trailing punctuation split off one token. [[offset, piece]] */
  function splitToken(token) {
    const core = token.split("/", 1)[0];
    if (core && allPunct(core)) return [[0, token]];
    let lead = 0, tail = 0;
    while (lead < token.length && PUNCT.has(token[lead])) lead++;
    while (tail < token.length && PUNCT.has(token[token.length - 1 - tail])) tail++;
    const pieces = [];
    if (lead) pieces.push([0, token.slice(0, lead)]);
    pieces.push([lead, token.slice(lead, token.length - tail)]);
    if (tail) pieces.push([token.length - tail, token.slice(token.length - tail)]);
    return pieces;
  }

  /** Words of `text` ({text, role, tag, start, written, tagged, guessed}) and the problems found
      ({start, written, message}). With `guess`, an unknown untagged word gets guessTag() instead of a problem. */
  function parse(text, guess) {
    const words = [], problems = [], problem = (start, written, message) => problems.push({ start, written, message });
    for (const m of text.matchAll(/\S+/gu)) {
      for (const [inner, piece] of splitToken(m[0])) {
        const start = m.index + inner, slash = piece.indexOf("/");
        const word = slash < 0 ? piece : piece.slice(0, slash), tag = slash < 0 ? "" : piece.slice(slash + 1);
        let role, written = tag, guessed = false;
        if (!word) { problem(start, piece, `the tag in “${piece}” has no word before it`); continue; }
        if (slash >= 0 && !tag) { problem(start, piece, `“${piece}” has a “/” but no tag after it; tags: ${T.valid_tags_text}`); continue; }
        if (slash >= 0) {
          role = T.tag_aliases[tag] || tag;
          if (!ROLE.hasOwnProperty(role)) {
            const up = tag.toUpperCase(), hint = ROLE.hasOwnProperty(up) || T.tag_aliases[up] ? ` (tags are written in capitals: ${up})` : "";
            problem(start + word.length + 1, piece, `unknown tag “${tag}” on “${word}”${hint}; tags: ${T.valid_tags_text}`);
            continue;
          }
        } else if (allPunct(word)) role = "PUNCT";
        else if (NUMBER.test(word)) role = "NUM";
        else if (Object.hasOwn(T.lexicon, word.toLowerCase().replaceAll("’", "'"))) role = T.lexicon[word.toLowerCase().replaceAll("’", "'")];
        else if (!guess) {
          problem(start, piece, `“${word}” needs a tag: write it as ${word}/NOUN, ${word}/VERB, ${word}/ADJ …; tags: ${T.valid_tags_text}`);
          continue;
        } else if (!/[\p{L}\p{N}]/u.test(word)) {
          problem(start, piece, `“${word}” is not a word the model can read: it reads words (of letters or digits) and punctuation`);
          continue;
        } else {
          const prev = words.at(-1);
          written = guessTag(word, !prev || (prev.role === "PUNCT" && /[.!?…]/.test(prev.text)));
          role = T.tag_aliases[written] || written;
          guessed = true;
        }
        words.push({ text: word, role, tag: written || role, start, written: piece, tagged: slash >= 0, guessed });
      }
    }
    if (!words.length && !problems.length) problem(0, text, "the sentence has no words");
    if (words.length > T.max_words) {
      const extra = words[T.max_words];
      problem(extra.start, extra.written, `a sentence may have at most ${T.max_words} words; this one has ${words.length}`);
    }
    problems.sort((a, b) => a.start - b.start);
    return { words, problems };
  }

  /* ---------- the embedding ---------- */

  /** teaching.subject_flags: 1 for the subject noun of each clause. */
  function subjectFlags(roles) {
    const flags = roles.map(() => 0);
    let clauseStart = 0;
    for (let end = 0; end <= roles.length; end++) {
      if (end < roles.length && roles[end] !== "CONJ" && roles[end] !== "PUNCT") continue;
      const clause = roles.slice(clauseStart, end), verb = clause.findIndex(r => r === "VERB" || r === "AUX");
      if (verb >= 0) {
        let subject = -1, afterPreposition = false;
        for (let i = 0; i < verb; i++) {
          if (clause[i] === "ADP") afterPreposition = true;
          else if (clause[i] === "NOUN") {
            if (!afterPreposition) subject = i;
            afterPreposition = false;
          }
        }
        if (subject >= 0) flags[clauseStart + subject] = 1;
      }
      clauseStart = end + 1;
    }
    return flags;
  }

  function embed(roles) { // -> [n][d_model]
    const subject = subjectFlags(roles);
    return roles.map((r, p) => {
      const x = new Array(DIMS.length).fill(0);
      x[ROLE[r]] = 1;
      x[DIM.subject] = subject[p];
      x[DIM.position] = p;
      x[DIM["position²"]] = p ** 2;
      x[DIM.constant] = 1;
      return x;
    });
  }

  /* ---------- arithmetic, as NumPy does it ---------- */

  /** NumPy's pairwise sum of a short row (≤ 128 entries: eight running sums, then the rest in order). */
  function npSum(a) {
    const n = a.length;
    if (n < 8) { let s = 0; for (let i = 0; i < n; i++) s += a[i]; return s; }
    const r = a.slice(0, 8);
    let i = 8;
    for (; i < n - (n % 8); i += 8) for (let j = 0; j < 8; j++) r[j] += a[i + j];
    let s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) s += a[i];
    return s;
  }
  const dot = (a, b) => { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * b[i]; return s; };
  const matmul = (a, b) => a.map(row => b[0].map((_, c) => { let s = 0; for (let i = 0; i < row.length; i++) s += row[i] * b[i][c]; return s; }));

  /** core._softmax_into for one row. */
  function softmax(x) {
    let peak = Math.max(...x);
    if (!Number.isFinite(peak)) peak = 0;
    const out = x.map(v => Math.exp(v - peak)), total = npSum(out), inverse = total > 0 ? 1 / total : 0;
    return out.map(v => v * inverse);
  }

  /** core.scaled_dot_product_attention: softmax(q·scale·kᵀ + bias, masked) · v → [out, weights]. */
  function sdpa(q, k, v, mask, bias, scale) {
    const weights = q.map((qi, i) => {
      const qs = qi.map(x => x * scale);
      return softmax(k.map((kj, j) => {
        const s = dot(qs, kj) + (bias ? bias[i][j] : 0);
        return mask[i][j] ? s : -Infinity;
      }));
    });
    return [matmul(weights, v), weights];
  }

  /* ---------- the heads' biases (teaching._syntax_bias …), by the Python function's name ---------- */

  const S = T.syntax, C = T.coreference, A = T.alignment;
  const BIAS = {
    _syntax_bias: (rq, rk, kind) => kind === "cross" ? null : rq.map((r, i) => {
      const forward = S.forward_roles.includes(r), step = forward ? S.step_forward : S.step_other;
      return rk.map((_, j) => {
        const delta = j - i;
        let b = -step * Math.max(Math.abs(delta) - 1, 0);
        b -= forward && delta < 0 ? S.wrong_side : 0;
        b -= delta === 0 ? S.self : 0;
        return b;
      });
    }),
    _coreference_bias: (rq, rk, kind) => kind === "cross" ? null : rq.map((r, i) => rk.map((_, j) => {
      const delta = j - i;
      return r !== "PRON" ? 0 : delta < 0 ? -C.step * Math.max(-delta - 1, 0) : -C.after;
    })),
    _alignment_bias: (rq, rk) => {
      const place = n => Array.from({ length: n }, (_, i) => i / Math.max(n - 1, 1)), pq = place(rq.length), pk = place(rk.length);
      return pq.map(a => pk.map(b => -A.place * Math.abs(b - a)));
    },
    _no_bias: () => null
  };

  /** Hamilton's method (realheads.largest_remainder_array) for one row: integers summing to `total`. */
  function percentages(x, total) {
    const n = x.length, sums = npSum(x);
    const quota = x.map(v => sums > 0 ? v * total / sums : 0), base = quota.map(Math.floor);
    const short = sums > 0 ? Math.min(n, Math.max(0, Math.round(total - npSum(base)))) : 0;
    const remainder = x.map((v, j) => v > 0 ? quota[j] - base[j] : -1);
    const order = remainder.map((_, j) => j).sort((a, b) => remainder[b] - remainder[a] || a - b);
    const out = base.slice();
    for (let i = 0; i < short; i++) out[order[i]]++;
    return out;
  }

  /** teaching.compute for the heads `ids`: {id: {q, k, v, scores, bias, scaled, weights, weights_unscaled, out, written, mask}}.
      `queries`, `keys`: role lists; `keys` null unless kind is "cross". */
  function compute(queries, keys, kind, ids) {
    keys = keys || queries;
    const xq = embed(queries), xk = embed(keys);
    const mask = queries.map((_, i) => keys.map((_, j) => kind !== "causal" || j <= i));
    const results = {};
    for (const id of ids) {
      const hd = HEADS.get(id), rule = BIAS[hd.bias_rule];
      if (!rule) throw new Error(`the JavaScript port has no bias rule ${hd.bias_rule}`);
      const q = matmul(xq, hd.w_q), k = matmul(xk, hd.w_k), v = matmul(xk, hd.w_v), d = hd.w_q[0].length;
      const bias = rule(queries, keys, kind);
      const [out, weights] = sdpa(q, k, v, mask, bias, 1 / Math.sqrt(d));
      const [, weightsUnscaled] = sdpa(q, k, v, mask, bias, 1);
      const scores = q.map(qi => k.map(kj => dot(qi, kj)));
      const scaled = scores.map((row, i) => row.map((s, j) => mask[i][j] ? s / Math.sqrt(d) + (bias ? bias[i][j] : 0) : -Infinity));
      results[id] = { q, k, v, scores, bias, scaled, weights, weights_unscaled: weightsUnscaled, out, written: matmul(out, hd.w_o), mask };
    }
    return results;
  }

  /** The residual vectors around the layer (teaching.residual): [before [n][d_resid], after]. */
  function residual(queries, results) {
    const before = embed(queries).map(x => [...x, ...new Array(RESID.length - x.length).fill(0)]);
    const after = before.map((row, i) => row.map((x, c) => x + Object.values(results).reduce((s, r) => s + r.written[i][c], 0)));
    return [before, after];
  }

  (Labs.code ||= {}).ownModel = { parse, guessTag, compute, residual, percentages, heads: HEADS, roles: ROLES, maxWords: T.max_words, nRoles: NROLES };
})();
