/* A Llama decoder's forward pass over the GGUF's quantized blocks, with a KV cache: the page's
 * SmolLM2-135M (generator/runtime/decoder.py writes its files).
 *
 * The whole engine is the one function `decoderEngine` below, handed its kernels
 * (static/decoder-kernels.js) and its sampler (static/decoder-sampling.js). None of the three
 * touches anything outside itself, so their source text becomes a Worker (Labs.runtime.decoderSource
 * in a blob: URL) and the same functions run on the main thread when no Worker may be started.
 *
 *   x = E[id]                                          E: token embeddings [V, d], Q8_0
 *   per layer (L of them), for the new positions p:
 *     h = rms(x)·g1                                    rms(x) = x / √(mean(x²) + eps)
 *     q = h·Wqᵀ, k = h·Wkᵀ, v = h·Wvᵀ                 H query heads, KV key/value heads of hd
 *     rotate q and k by p·θᵢ, θᵢ = base^(-2i/hd), in the pairs (2i, 2i+1)
 *     append k, v to the cache; query head j reads key/value head ⌊j·KV/H⌋
 *     x += (softmax(q·Kᵀ/√hd over positions ≤ p)·V)·Woᵀ
 *     h = rms(x)·g2
 *     x += (silu(h·Wgateᵀ) ⊙ h·Wupᵀ)·Wdownᵀ           silu(z) = z / (1 + e^-z)
 *   logits = (rms(x)·g)·Eᵀ                             the unembedding is E itself (tied)
 *
 * RoPE's pairs: the GGUF converter permuted the rows of Wq and Wk so that llama.cpp's "normal"
 * rotation, of adjacent dimensions (2i, 2i+1), computes what the checkpoint's rotation of
 * (i, i + hd/2) did. Rotating the other pairs here would still run, and be wrong.
 *
 * The weights stay as the GGUF stores them (Q4_1 layers, Q8_0 token embeddings, F32 norms), and
 * the kernels unpack them as they go. Sums run in float64 over float64 activations; the cache holds
 * float32 keys and values. Keeping the 4-bit blocks reads 97 MB per token where float32 weights
 * would read 540 MB (and hold them).
 */
(function (root) {
  "use strict";

  // K: static/decoder-kernels.js's decoderKernels(); S: static/decoder-sampling.js's decoderSampling().
  function decoderEngine(scope, inWorker, K, S) {
    "use strict";
    var LUT_MAX_COLS = K.LUT_MAX_COLS, blockSums = K.blockSums, q41Row = K.q41Row, q41Table = K.q41Table,
      q41Rows = K.q41Rows, q80Row = K.q80Row, q80Unpack = K.q80Unpack, buildTable = K.buildTable, rmsNorm = K.rmsNorm,
      rope = K.rope;

    // ---- weights -------------------------------------------------------------------------------

    // A tensor of the manifest's table over `buffer`: Q4_1 as 32-bit words, Q8_0 as 16-bit words
    // (a 34-byte block starts on an even byte), F32 as floats.
    function tensor(buffer, table, name) {
      var t = table[name];
      if (!t) throw new Error("the model has no tensor " + name);
      var rows = t.shape.length === 2 ? t.shape[0] : 1, cols = t.shape[t.shape.length - 1];
      if (t.type === "F32") return new Float32Array(buffer, t.offset, cols * rows);
      if (cols % 32) throw new Error(name + ": rows of " + cols + " are not whole blocks of 32");
      if (t.type === "Q4_1") return { words: new Uint32Array(buffer, t.offset, t.bytes / 4), rows: rows, cols: cols };
      if (t.type === "Q8_0") return { halves: new Int16Array(buffer, t.offset, t.bytes / 2), rows: rows, cols: cols };
      throw new Error(name + " is " + t.type + "; this engine reads Q4_1, Q8_0 and F32");
    }

    // spec: the manifest's {config, tensors, bytes}; buffer: an ArrayBuffer of the weights at
    // their offsets. A generator, like every long computation here, so that the main thread can
    // pause between its steps.
    function* modelSteps(spec, buffer) {
      var c = spec.config, t = spec.tensors, layers = [];
      if (buffer.byteLength !== spec.bytes) throw new Error("the weights are " + buffer.byteLength + " bytes, not " + spec.bytes);
      for (var l = 0; l < c.n_layers; l++) {
        var p = "blk." + l + ".";
        layers.push({ attnNorm: tensor(buffer, t, p + "attn_norm.weight"), q: tensor(buffer, t, p + "attn_q.weight"),
          k: tensor(buffer, t, p + "attn_k.weight"), v: tensor(buffer, t, p + "attn_v.weight"),
          o: tensor(buffer, t, p + "attn_output.weight"), ffnNorm: tensor(buffer, t, p + "ffn_norm.weight"),
          gate: tensor(buffer, t, p + "ffn_gate.weight"), up: tensor(buffer, t, p + "ffn_up.weight"),
          down: tensor(buffer, t, p + "ffn_down.weight") });
        if (l % 10 === 9) yield;
      }
      var d = c.hidden_size, kvWidth = c.n_kv_heads * c.head_dim;
      return { config: c, layers: layers, embed: tensor(buffer, t, "token_embd.weight"), outNorm: tensor(buffer, t, "output_norm.weight"),
        d: d, kvWidth: kvWidth, ids: [], length: 0, capacity: 0, keys: [], values: [], logits: null,
        record: null };  // record: the attention weights of every position, once asked for (attention())
    }

    function createModel(spec, buffer) { return runToEnd(modelSteps(spec, buffer)); }

    // About a million multiply-adds between two pauses: ~1 ms at full speed, a few ms on a phone.
    var STEP_WORK = 1 << 20;

    // y [n, rows] = x [n, cols] · Wᵀ (Q4_1), xs the block sums of x, yielding between slices of
    // outputs. One row goes through `table` when it is given (buildTable of x), else the plain kernel.
    function* linear(W, x, xs, n, y, table) {
      var per = Math.max(1, Math.floor(STEP_WORK / (n * W.cols)));
      for (var o = 0; o < W.rows; o += per) {
        var end = Math.min(W.rows, o + per);
        if (n > 1) q41Rows(W, x, xs, n, y, o, end);
        else if (table) q41Table(W, table, xs, y, o, end);
        else q41Row(W, x, xs, y, o, end);
        yield;
      }
    }

    // The table for x [1, cols] when one row is running and x is narrow enough, else null.
    function tableFor(x, n, cols, table) {
      if (n !== 1 || cols > LUT_MAX_COLS) return null;
      buildTable(x, cols, table);
      return table;
    }

    // ---- the cache -------------------------------------------------------------------------------

    // Room for `positions` keys and values per layer (float32), grown by doubling, never past the
    // config's max_positions.
    function reserve(model, positions) {
      var limit = model.config.max_positions;
      if (positions > limit) throw new Error("The model reads at most " + limit + " tokens, not " + positions + ".");
      if (positions <= model.capacity) return;
      var capacity = Math.min(limit, Math.max(64, positions, model.capacity * 2)), w = model.kvWidth;
      for (var l = 0; l < model.layers.length; l++) {
        var k = new Float32Array(capacity * w), v = new Float32Array(capacity * w);
        if (model.capacity) {
          k.set(model.keys[l].subarray(0, model.length * w));
          v.set(model.values[l].subarray(0, model.length * w));
        }
        model.keys[l] = k;
        model.values[l] = v;
      }
      model.capacity = capacity;
    }

    // Forgets every position from n on (the cache keeps the first n).
    function truncate(model, n) {
      if (!(n >= 0 && n <= model.length)) throw new Error("cannot keep " + n + " of " + model.length + " positions");
      if (n === model.length) return;
      model.length = n;
      model.ids.length = n;
      model.logits = null;
      if (model.record) model.record.length = Math.min(model.record.length, n);
    }

    function cacheBytes(model) {  // what the cache holds now, and what it has room for
      var per = model.layers.length * 2 * model.kvWidth * 4;
      return { positions: model.length, bytes: model.length * per, capacity: model.capacity, reserved: model.capacity * per };
    }

    // ---- the forward pass ------------------------------------------------------------------------

    // Attention of rows [n, H·hd] (positions p0..p0+n) over cache positions 0..p (causal), into ctx.
    // With rec (the attention record), each row's weights are kept there.
    function attend(model, l, q, n, p0, ctx, rec) {
      var c = model.config, H = c.n_heads, KV = c.n_kv_heads, hd = c.head_dim;
      var keys = model.keys[l], values = model.values[l], w = model.kvWidth, scale = 1 / Math.sqrt(hd);
      var scores = new Float64Array(p0 + n), width = H * hd;
      for (var r = 0; r < n; r++) {
        var p = p0 + r, count = p + 1;
        for (var hh = 0; hh < H; hh++) {
          var qa = r * width + hh * hd, kv = Math.floor(hh * KV / H) * hd, peak = -Infinity, j, i;
          for (j = 0; j < count; j++) {
            var ka = j * w + kv, dot = 0;
            for (i = 0; i < hd; i++) dot += q[qa + i] * keys[ka + i];
            scores[j] = dot * scale;
            if (scores[j] > peak) peak = scores[j];
          }
          var total = 0;
          for (j = 0; j < count; j++) { scores[j] = Math.exp(scores[j] - peak); total += scores[j]; }
          for (i = 0; i < hd; i++) ctx[qa + i] = 0;
          var row = rec ? rec.rows[l * H + hh] : null, ra = p * (p + 1) / 2;
          for (j = 0; j < count; j++) {
            var weight = scores[j] / total, va = j * w + kv;
            if (row) row[ra + j] = weight;
            for (i = 0; i < hd; i++) ctx[qa + i] += weight * values[va + i];
          }
        }
      }
    }

    // The attention record: for every layer and head, the weights of each position p over
    // positions 0..p, row p at p(p+1)/2 of a growing Float32Array; `length` positions are filled.
    function recordRoom(model, positions) {
      var rec = model.record, c = model.config, need = positions * (positions + 1) / 2;
      if (rec.room >= positions) return;
      var room = Math.min(c.max_positions, Math.max(positions, rec.room * 2, 32)), size = room * (room + 1) / 2;
      for (var i = 0; i < rec.rows.length; i++) {
        var grown = new Float32Array(size);
        grown.set(rec.rows[i].subarray(0, Math.min(rec.rows[i].length, need)));
        rec.rows[i] = grown;
      }
      rec.room = room;
    }

    // Runs `ids` at positions p0.. through every layer. options:
    //   write     the keys and values go into the cache at p0.. (a new stretch of the sequence);
    //             else they are there already and only the queries are computed (a replay)
    //   logits    the logits of the last position are computed into model.logits
    //   residuals a Float64Array [L+1, d]: the last row's residual stream before layer 0 and
    //             after each layer (for the logit lens)
    // and with model.record, every row's attention weights are recorded.
    function* forwardSteps(model, ids, p0, options) {
      var c = model.config, n = ids.length, d = model.d, f = c.intermediate_size, L = model.layers.length;
      var H = c.n_heads, hd = c.head_dim, KV = c.n_kv_heads, w = model.kvWidth, eps = c.rms_norm_eps;
      var write = !!options.write, i, r;
      var x = new Float64Array(n * d), h = new Float64Array(n * d), hs = new Float64Array(n * (d >> 5));
      var q = new Float64Array(n * d), kk = new Float64Array(n * w), vv = new Float64Array(n * w);
      var ctx = new Float64Array(n * d), out = new Float64Array(n * d);
      var gate = new Float64Array(n * f), up = new Float64Array(n * f), fs = new Float64Array(n * (f >> 5));
      var table = n === 1 ? new Float64Array((Math.min(d, LUT_MAX_COLS) >> 5) * 4096) : null, tb;
      for (r = 0; r < n; r++) {
        if (!(ids[r] >= 0 && ids[r] < c.vocab_size && ids[r] === Math.floor(ids[r]))) throw new Error("Token id " + ids[r] + " is outside the model's vocabulary.");
        q80Unpack(model.embed, ids[r], x, r * d);
      }
      if (write) reserve(model, p0 + n);
      var rec = model.record;
      if (rec) recordRoom(model, p0 + n);
      if (options.residuals) options.residuals.set(x.subarray((n - 1) * d, n * d), 0);
      for (var l = 0; l < L; l++) {
        var layer = model.layers[l];
        rmsNorm(x, n, d, layer.attnNorm, eps, h);
        blockSums(h, n, d, hs);
        tb = tableFor(h, n, d, table);
        yield* linear(layer.q, h, hs, n, q, tb);
        rope(q, n, H, hd, p0, c.rope_theta);
        if (write) {
          yield* linear(layer.k, h, hs, n, kk, tb);
          yield* linear(layer.v, h, hs, n, vv, tb);
          rope(kk, n, KV, hd, p0, c.rope_theta);
          model.keys[l].set(kk, p0 * w);  // float64 -> float32, as the cache stores them
          model.values[l].set(vv, p0 * w);
        }
        attend(model, l, q, n, p0, ctx, rec);
        yield;
        blockSums(ctx, n, d, hs);
        yield* linear(layer.o, ctx, hs, n, out, tableFor(ctx, n, d, table));
        for (i = 0; i < n * d; i++) x[i] += out[i];
        rmsNorm(x, n, d, layer.ffnNorm, eps, h);
        blockSums(h, n, d, hs);
        tb = tableFor(h, n, d, table);
        yield* linear(layer.gate, h, hs, n, gate, tb);
        yield* linear(layer.up, h, hs, n, up, tb);
        for (i = 0; i < n * f; i++) { var z = gate[i]; gate[i] = z / (1 + Math.exp(-z)) * up[i]; }
        blockSums(gate, n, f, fs);
        yield* linear(layer.down, gate, fs, n, out);
        for (i = 0; i < n * d; i++) x[i] += out[i];
        if (options.residuals) options.residuals.set(x.subarray((n - 1) * d, n * d), (l + 1) * d);
      }
      if (write) {
        model.length = p0 + n;
        for (r = 0; r < n; r++) model.ids[p0 + r] = ids[r];
      }
      if (rec && p0 + n > rec.length && (write || p0 === rec.length)) rec.length = p0 + n;
      if (options.logits) {
        var last = x.subarray((n - 1) * d, n * d);
        model.logits = yield* unembed(model, last);
      }
    }

    // logits [V] of one residual vector: rms(x)·g, then every token's embedding row.
    function* unembed(model, x) {
      var d = model.d, V = model.config.vocab_size, normed = new Float64Array(d), logits = new Float64Array(V);
      rmsNorm(x, 1, d, model.outNorm, model.config.rms_norm_eps, normed);
      var per = Math.max(1, Math.floor(STEP_WORK / d));
      for (var o = 0; o < V; o += per) {
        q80Row(model.embed, normed, logits, o, Math.min(V, o + per));
        yield;
      }
      return logits;
    }

    // Appends ids to the sequence (the cache holds model.length positions already) and computes
    // the logits of the last one unless options.logits is false.
    function forward(model, ids, options) {
      var logits = !options || options.logits !== false;
      if (!ids.length) throw new Error("no tokens to run");
      return forwardSteps(model, ids, model.length, { write: true, logits: logits });
    }

    // softmax(logits) as float32 [V], summed in float64.
    function softmax(logits) { return Float32Array.from(S.softmax64(logits, 1)); }

    function probabilities(model) {
      if (!model.logits) throw new Error("There is no prompt yet: run one first.");
      return softmax(model.logits);
    }

    // The logit lens at `position`: the residual stream there before layer 0 and after each layer,
    // each through the final norm and the unembedding, as probabilities [L+1, V]. Replays the
    // position from the cache (nothing is written), so it costs one token's layers and L+1
    // unembeddings. Row L is what the model predicts after `position`.
    function* lensSteps(model, position) {
      if (!(position >= 0 && position < model.length && position === Math.floor(position))) {
        throw new Error("Position " + position + " is not in the sequence (0 to " + (model.length - 1) + ").");
      }
      var L = model.layers.length, d = model.d, V = model.config.vocab_size;
      var residuals = new Float64Array((L + 1) * d), out = new Float32Array((L + 1) * V);
      var saved = model.record;
      model.record = null;  // a replay records nothing
      try {
        yield* forwardSteps(model, [model.ids[position]], position, { write: false, residuals: residuals });
      } finally {
        model.record = saved;
      }
      for (var l = 0; l <= L; l++) {
        var logits = yield* unembed(model, residuals.subarray(l * d, (l + 1) * d));
        out.set(softmax(logits), l * V);
      }
      return out;
    }

    // Every head's attention weights in `layer` over the whole sequence: [H, n, n], row i the
    // weights of position i over positions 0..i (zeros after). The first call replays the
    // positions not yet recorded from the cache (every layer's weights at once); from then on
    // each new position's weights are recorded as it runs.
    function* attentionSteps(model, layer) {
      var c = model.config, H = c.n_heads, L = model.layers.length, n = model.length;
      if (!(layer >= 0 && layer < L && layer === Math.floor(layer))) throw new Error("Layer " + layer + " is not one of 0 to " + (L - 1) + ".");
      if (!model.record) {
        model.record = { rows: [], room: 0, length: 0 };
        for (var i = 0; i < L * H; i++) model.record.rows.push(new Float32Array(0));
      }
      var rec = model.record;
      if (rec.length < n) {
        var start = rec.length;
        yield* forwardSteps(model, model.ids.slice(start, n), start, { write: false });
        rec.length = n;
      }
      var out = new Float32Array(H * n * n);
      for (var hh = 0; hh < H; hh++) {
        var row = rec.rows[layer * H + hh];
        for (var p = 0; p < n; p++) out.set(row.subarray(p * (p + 1) / 2, p * (p + 1) / 2 + p + 1), (hh * n + p) * n);
      }
      return out;
    }

    function sample(model, options, u) {  // one step of a seeded generation (decoder-sampling.js)
      if (!model.logits) throw new Error("There is no prompt yet: run one first.");
      return S.sample(model.logits, options, u);
    }

    function runToEnd(steps) {
      for (;;) {
        var step = steps.next();
        if (step.done) return step.value;
      }
    }

    var api = { createModel: createModel, modelSteps: modelSteps, forward: forward, forwardSteps: forwardSteps,
      truncate: truncate, probabilities: probabilities, softmax: softmax, lens: lensSteps, attention: attentionSteps,
      sample: sample, cacheBytes: cacheBytes, runToEnd: runToEnd };

    // ---- inside a Worker: the loader's messages ------------------------------------------------
    // On start -> {op: "hello"}; {op: "init", id, spec, buffer} -> {op: "ready", id};
    // {op: "truncate", id, n}; {op: "forward", id, ids, logits}; {op: "probs", id};
    // {op: "lens", id, position}; {op: "attention", id, layer}; {op: "sample", id, options, u}:
    // each answers {op: "done", id, value, length, cache} (typed arrays transferred);
    // any failure -> {op: "error", id, message}.
    if (inWorker) {
      var model = null;
      scope.onmessage = function (event) {
        var m = event.data, value = null;
        try {
          if (m.op === "init") model = createModel(m.spec, m.buffer);
          else if (m.op === "truncate") truncate(model, m.n);
          else if (m.op === "forward") runToEnd(forward(model, m.ids, { logits: m.logits }));
          else if (m.op === "probs") value = probabilities(model);
          else if (m.op === "lens") value = runToEnd(lensSteps(model, m.position));
          else if (m.op === "attention") value = runToEnd(attentionSteps(model, m.layer));
          else if (m.op === "sample") value = sample(model, m.options, m.u);
          else throw new Error("unknown message " + m.op);
          scope.postMessage({ op: "done", id: m.id, value: value, length: model.length, cache: cacheBytes(model) },
            value && value.buffer ? [value.buffer] : []);  // the typed arrays answered are made per call
        } catch (error) {
          var message = error instanceof RangeError && /allocation|memory|Array buffer/i.test(error.message)
            ? "There is not enough memory to run the model." : String(error && error.message || error);
          scope.postMessage({ op: "error", id: m.id, message: message });
        }
      };
      scope.postMessage({ op: "hello" });
    }
    return api;
  }

  var Labs = root.Labs = root.Labs || {};
  var runtime = Labs.runtime = Labs.runtime || {};
  runtime.decoderEngine = decoderEngine;
  // The Worker's script: the engine, handed its kernels and its sampler.
  runtime.decoderSource = "(" + decoderEngine + ")(self, true, (" + runtime.decoderKernels + ")(), ("
    + runtime.decoderSampling + ")());\n";
})(window);
