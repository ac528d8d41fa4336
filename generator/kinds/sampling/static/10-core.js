/* The sampling lab's arithmetic, the same operations as generator/models/decoding.py on
   the integer weights the build embeds (whole parts of 100 000), so that every comparison is
   exact and a draw with a given seed picks the same word here as in the Python tests.
   Classic script: window.Labs.code.sampling (globalThis.Labs in Node, for those tests). */
(() => {
  "use strict";
  const G = typeof window !== "undefined" ? window : globalThis;
  const Labs = (G.Labs = G.Labs || {});

  /** Indexes from the most to the least likely; ties: the lower index first. */
  const rank = w => w.map((x, j) => j).sort((a, b) => w[b] - w[a] || a - b);

  /** Top-k: keep the k most likely (k <= 0 or >= n: all). */
  function topK(w, k) {
    if (!(k > 0 && k < w.length)) return w.map(() => true);
    const keep = w.map(() => false);
    for (const j of rank(w).slice(0, k)) keep[j] = true;
    return keep;
  }

  /** Top-p, p a whole percentage: keep a word while the words ranked above it hold less than p.
      100 is off. With integer weights, 100·before < p·total is exact. */
  function topP(w, p) {
    if (p >= 100) return w.map(() => true);
    const total = w.reduce((s, x) => s + x, 0), keep = w.map(() => false);
    let before = 0;
    for (const j of rank(w)) { keep[j] = 100 * before < p * total; before += w[j]; }
    return keep;
  }

  /** Temperature is already in w; then top-k, then top-p on what top-k kept: which words stay. */
  function keep(w, k, p) {
    const byK = topK(w, k), afterK = w.map((x, j) => byK[j] ? x : 0), byP = topP(afterK, p);
    return w.map((x, j) => byK[j] && byP[j]);
  }
  /** The weights after the cut-offs: cut words weigh 0 (renormalising is dividing by the new sum). */
  const cut = (w, k, p) => keep(w, k, p).map((kept, j) => kept ? w[j] : 0);

  /** mulberry32: a function returning the next unsigned 32-bit output for `seed`. */
  function mulberry32(seed) {
    let a = seed | 0;
    return () => {
      a = a + 0x6D2B79F5 | 0;
      let t = Math.imul(a ^ a >>> 15, a | 1);
      t = t + Math.imul(t ^ t >>> 7, t | 61) ^ t;
      return (t ^ t >>> 14) >>> 0;
    };
  }

  /** One draw from whole weights w with 32 random bits u: r = floor(u·total / 2^32), then the
      first word whose running total exceeds r. u·total < 2^49: exact in a double. */
  function draw(w, u) {
    const total = w.reduce((s, x) => s + x, 0), r = Math.floor(u * total / 4294967296);
    let run = 0;
    for (let j = 0; j < w.length; j++) { run += w[j]; if (run > r) return j; }
    return -1; // only if total is 0
  }

  (Labs.code ||= {}).sampling = { rank, topK, topP, keep, cut, mulberry32, draw };
})();
