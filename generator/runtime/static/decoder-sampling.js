/* The decoder's sampler: one step of a seeded generation from the next token's logits, exactly as
 * generator/models/sampling.py takes it, for static/decoder.js. A function of its own that touches
 * nothing outside itself, so the loader can put its source into the decoder's Worker.
 */
(function (root) {
  "use strict";

  function decoderSampling() {
    "use strict";

    // One step of a seeded generation, as generator/models/sampling.py defines it:
    //   temperature 0: the most likely token (the lower id among equals), nothing drawn;
    //   else softmax(logits / temperature) in float64 as whole parts of PARTS (largest remainder,
    //   ties to the lower id), top-k then top-p (a whole percentage) on those parts by the sampling
    //   lab's integer rules, and u (one 32-bit output of mulberry32) picks the first id whose
    //   running total of parts exceeds floor(u·total / 2^32).
    // Returns {id, probability (the model's, temperature 1, nothing cut), share (of the parts drawn from)}.
    var PARTS = 2097152;  // 2^21: u·total stays an exact integer in a double
    function sample(logits, options, u) {  // [V], {temperature, topK, topP}, a 32-bit integer
      var V = logits.length, p = softmax64(logits, 1), i;
      var temperature = options.temperature === undefined ? 1 : options.temperature;
      if (!(temperature > 0)) {
        var best = 0;
        for (i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
        return { id: best, probability: p[best], share: 1 };
      }
      var parts = cut(wholeParts(softmax64(logits, temperature), PARTS), options.topK || 0, options.topP || 100);
      var total = 0;
      for (i = 0; i < V; i++) total += parts[i];
      var r = Math.floor(u * total / 4294967296), run = 0, id = V - 1;
      for (i = 0; i < V; i++) {
        run += parts[i];
        if (run > r) { id = i; break; }
      }
      return { id: id, probability: p[id], share: parts[id] / total };
    }

    function softmax64(logits, temperature) {  // float64 [V], the maximum subtracted
      var V = logits.length, z = new Float64Array(V), peak = -Infinity, total = 0, i;
      for (i = 0; i < V; i++) { z[i] = logits[i] / temperature; if (z[i] > peak) peak = z[i]; }
      for (i = 0; i < V; i++) { z[i] = Math.exp(z[i] - peak); total += z[i]; }
      for (i = 0; i < V; i++) z[i] /= total;
      return z;
    }

    // Whole numbers proportional to x adding up to total: floor, then one more to the largest
    // remainders (ties: the lower index).
    function wholeParts(x, total) {
      var V = x.length, whole = 0, i, out = new Float64Array(V), rest = new Float64Array(V), given = 0;
      for (i = 0; i < V; i++) whole += x[i];
      for (i = 0; i < V; i++) { var raw = x[i] * total / whole; out[i] = Math.floor(raw); rest[i] = raw - out[i]; given += out[i]; }
      var more = largest(rest, total - given);
      for (i = 0; i < V; i++) if (more[i]) out[i] += 1;
      return out;
    }

    // Which `count` entries of w are the largest (ties: the lower index first), as flags: the
    // count-th largest value t found by a numeric sort of a copy, then every entry above t and
    // the first ones equal to t. The same set as a stable sort by value would give, faster than
    // a sort with a comparator over 49,152 entries.
    function largest(w, count) {
      var V = w.length, flags = new Uint8Array(V), i;
      if (count <= 0) return flags;
      if (count >= V) { flags.fill(1); return flags; }
      var sorted = Float64Array.from(w).sort(), t = sorted[V - count], above = 0;
      for (i = 0; i < V; i++) if (w[i] > t) { flags[i] = 1; above++; }
      for (i = 0; i < V && above < count; i++) if (w[i] === t) { flags[i] = 1; above++; }
      return flags;
    }

    // Top-k (0: off), then top-p (a whole percentage, 100: off) on what top-k kept: in rank order a
    // token stays while the tokens ranked above it hold less than p percent. Cut tokens weigh 0.
    function cut(w, k, pPercent) {
      var V = w.length, i, keep;
      if (k > 0 && k < V) {
        keep = largest(w, k);
        for (i = 0; i < V; i++) if (!keep[i]) w[i] = 0;
      }
      if (pPercent < 100) {
        var total = 0, before = 0, count = 0, values = Float64Array.from(w).sort().reverse();
        for (i = 0; i < V; i++) total += w[i];
        while (count < V && 100 * before < pPercent * total) before += values[count++];
        keep = largest(w, count);
        for (i = 0; i < V; i++) if (!keep[i]) w[i] = 0;
      }
      return w;
    }

    return { PARTS: PARTS, sample: sample, softmax64: softmax64, wholeParts: wholeParts, largest: largest, cut: cut };
  }

  var Labs = root.Labs = root.Labs || {};
  var runtime = Labs.runtime = Labs.runtime || {};
  runtime.decoderSampling = decoderSampling;
})(window);
