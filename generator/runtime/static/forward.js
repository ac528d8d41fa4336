/* A BERT encoder's forward pass over typed arrays: generator/models/bert.py in plain JavaScript.
 *
 * The whole engine is the one function `engine` below. It touches nothing outside itself, so
 * its source text can become a Worker (the loader puts `(engine)(self, true)` in a blob: URL)
 * and the same function runs on the main thread when no Worker may be started.
 *
 *   x   = LayerNorm(word[ids] + position[0..n) + token_type[0])
 *   per layer:
 *     q, k, v = x · Wqkv + b                       (12 heads of 32)
 *     a = LayerNorm(x + softmax(q·kᵀ/√32)·v · Wo + bo)
 *     x = LayerNorm(a + gelu(a · Win + bin) · Wout + bout)   exact GELU: x/2 · (1 + erf(x/√2))
 *
 * Weights are kept as the bundle stores them: int8 rows with one scale per group of 32 inputs
 * (docs/runtime.md). A product sums 32 int8 × float32 terms exactly in float64 and multiplies the
 * sum by its group's scale, so it equals NumPy's float32(q)·float32(scale) weights up to the last
 * bits of the float32 activations; keeping int8 also reads a quarter of the bytes a float32 copy
 * would, which is what bounds the kernel's speed.
 */
(function (root) {
  "use strict";

  function engine(scope, inWorker) {
    "use strict";

    // ---- numbers -----------------------------------------------------------------------------

    // IEEE half -> number (the scales are stored as float16).
    function halfToNumber(h) {
      var sign = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
      if (e === 0) return sign * m * 5.960464477539063e-8;  // subnormal: m · 2^-24
      if (e === 31) return m ? NaN : sign * Infinity;
      return sign * (1024 + m) * Math.pow(2, e - 25);
    }

    // erf, from fdlibm's s_erf.c (Sun Microsystems, 1993): error below 1 ulp of a double.
    var ERX = 8.45062911510467529297e-01, EFX = 1.28379167095512586316e-01;
    var PP = [1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
      -5.77027029648944159157e-03, -2.37630166566501626084e-05];
    var QQ = [3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
      1.32494738004321644526e-04, -3.96022827877536812320e-06];
    var PA = [-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
      3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
      -2.16637559486879084300e-03];
    var QA = [1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
      1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02];
    var RA = [-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
      -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
      -8.12874355063065934246e+01, -9.81432934416914548592e+00];
    var SA = [1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
      6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
      6.57024977031928170135e+00, -6.04244152148580987438e-02];
    var RB = [-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
      -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
      -4.83519191608651397019e+02];
    var SB = [3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
      3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
      -2.24409524465858183362e+01];

    function poly(c, z) {  // c[0] + z·(c[1] + z·(…))
      var r = c[c.length - 1];
      for (var i = c.length - 2; i >= 0; i--) r = c[i] + z * r;
      return r;
    }

    function erf(x) {
      var ax = Math.abs(x), z, r;
      if (ax !== ax) return x;
      if (ax < 0.84375) {
        if (ax < 3.725290298461914e-9) return x + EFX * x;  // |x| < 2^-28
        z = x * x;
        return x + x * (poly(PP, z) / (1 + z * poly(QQ, z)));
      }
      if (ax < 1.25) {
        var s = ax - 1, p = poly(PA, s) / (1 + s * poly(QA, s));
        return x >= 0 ? ERX + p : -ERX - p;
      }
      if (ax >= 6) return x >= 0 ? 1 : -1;
      var t = 1 / (ax * ax), big = ax >= 2.857142857142857;  // 1/0.35
      var ratio = big ? poly(RB, t) / (1 + t * poly(SB, t)) : poly(RA, t) / (1 + t * poly(SA, t));
      // fdlibm splits exp(-x²) as exp(-z² - 0.5625)·exp((z - x)(z + x)) with z = x cut to a few
      // bits, so that z² is exact; a float32 rounding of x is short enough for that.
      z = Math.fround(ax);
      r = Math.exp(-z * z - 0.5625) * Math.exp((z - ax) * (z + ax) + ratio);
      return x >= 0 ? 1 - r / ax : r / ax - 1;
    }

    function gelu(x) { return 0.5 * x * (1 + erf(x * 0.7071067811865476)); }

    // ---- weights -------------------------------------------------------------------------------

    function view(buffer, entry, offset) {
      var size = 1;
      for (var i = 0; i < entry.shape.length; i++) size *= entry.shape[i];
      var at = (offset || 0) + entry.offset;
      if (entry.dtype === "int8") return new Int8Array(buffer, at, size);
      if (entry.dtype === "float32") return new Float32Array(buffer, at, size);
      if (entry.dtype === "float16") return new Uint16Array(buffer, at, size);
      throw new Error("unknown dtype " + entry.dtype);
    }

    var HALVES = null;  // every float16 value, by its bits: a table beats decoding 10⁵ scales one by one
    function scalesOf(halves) {  // float16 bits -> Float32Array, once at load
      if (!HALVES) {
        HALVES = new Float32Array(65536);
        for (var h = 0; h < 65536; h++) HALVES[h] = halfToNumber(h);
      }
      var out = new Float32Array(halves.length);
      for (var i = 0; i < halves.length; i++) out[i] = HALVES[halves[i]];
      return out;
    }

    function matrix(buffer, table, name) {  // {q [rows·width] int8, s [rows·G], bias [rows], rows, width, groups}
      var q = table[name + ".q"];
      return { q: view(buffer, q), s: scalesOf(view(buffer, table[name + ".scales"])), bias: view(buffer, table[name + ".bias"]),
        rows: q.shape[0], width: q.shape[1], groups: table[name + ".scales"].shape[1] };
    }

    // spec: the manifest's model part {config, group, tensors (the dense tensors), shard_rows};
    // dense: an ArrayBuffer holding those tensors at their offsets. A generator: it yields after
    // each layer's weights, so that the main thread can pause while 300,000 scales are widened.
    function* modelSteps(spec, dense) {
      var c = spec.config, t = spec.tensors, layers = [];
      if (spec.group !== 32) throw new Error("this engine reads groups of 32 weights, not " + spec.group);
      if (c.hidden_size % 32 || c.intermediate_size % 32) throw new Error("widths must be multiples of 32");
      for (var i = 0; i < c.num_hidden_layers; i++) {
        var p = "layers." + i + ".";
        layers.push({ qkv: matrix(dense, t, p + "qkv"), o: matrix(dense, t, p + "o"), in: matrix(dense, t, p + "in"),
          out: matrix(dense, t, p + "out"), ln1g: view(dense, t[p + "ln1.g"]), ln1b: view(dense, t[p + "ln1.b"]),
          ln2g: view(dense, t[p + "ln2.g"]), ln2b: view(dense, t[p + "ln2.b"]) });
        yield;
      }
      return { config: c, layers: layers, position: view(dense, t["embeddings.position"]),
        tokenType: view(dense, t["embeddings.token_type"]), lnG: view(dense, t["embeddings.ln.g"]),
        lnB: view(dense, t["embeddings.ln.b"]), shardRows: spec.shard_rows, shards: {} };
    }

    function createModel(spec, dense) { return runToEnd(modelSteps(spec, dense)); }

    // A shard: token embeddings of ids [index·rows, index·rows + count): int8 [count, d], then
    // float16 scales [count, d/32] at byte scalesOffset.
    function addShard(model, index, buffer, count, scalesOffset) {
      var d = model.config.hidden_size;
      model.shards[index] = { q: new Int8Array(buffer, 0, count * d),
        s: scalesOf(new Uint16Array(buffer, scalesOffset, count * d / 32)) };
    }

    function missingShards(model, ids) {  // shard indices ids need that the model lacks, ascending
      var need = {}, out = [];
      for (var i = 0; i < ids.length; i++) {
        var s = Math.floor(ids[i] / model.shardRows);
        if (!model.shards[s] && !need[s]) { need[s] = true; out.push(s); }
      }
      return out.sort(function (a, b) { return a - b; });
    }

    // ---- the kernels -----------------------------------------------------------------------------

    // y[t, o] = b[o] + Σ_g s[o, g] · Σ_{k in g} x[t, k] · q[o, k]  for outputs [o0, o1) (o1 - o0 even or o1 = rows).
    // Four token rows × two outputs per pass: each int8 weight loaded once serves four rows, each
    // activation loaded once serves two outputs; eight partial sums fit in registers.
    function linear(x, n, m, y, o0, o1) {
      var W = m.width, O = m.rows, G = m.groups, q = m.q, s = m.s, b = m.bias;
      for (var t = 0; t < n; t += 4) {
        var r1 = t + 1 < n ? t + 1 : t, r2 = t + 2 < n ? t + 2 : t, r3 = t + 3 < n ? t + 3 : t;
        var a0 = t * W, a1 = r1 * W, a2 = r2 * W, a3 = r3 * W;
        for (var o = o0; o < o1; o += 2) {
          var second = o + 1 < o1 ? o + 1 : o;
          var wa = o * W, wb = second * W, sa = o * G, sb = second * G;
          var c0 = 0, c1 = 0, c2 = 0, c3 = 0, d0 = 0, d1 = 0, d2 = 0, d3 = 0;
          for (var g = 0; g < G; g++) {
            var p0 = 0, p1 = 0, p2 = 0, p3 = 0, e0 = 0, e1 = 0, e2 = 0, e3 = 0, k = g * 32, end = k + 32;
            for (; k < end; k++) {
              var u = q[wa + k], v = q[wb + k], x0 = x[a0 + k], x1 = x[a1 + k], x2 = x[a2 + k], x3 = x[a3 + k];
              p0 += x0 * u; p1 += x1 * u; p2 += x2 * u; p3 += x3 * u;
              e0 += x0 * v; e1 += x1 * v; e2 += x2 * v; e3 += x3 * v;
            }
            var su = s[sa + g], sv = s[sb + g];
            c0 += p0 * su; c1 += p1 * su; c2 += p2 * su; c3 += p3 * su;
            d0 += e0 * sv; d1 += e1 * sv; d2 += e2 * sv; d3 += e3 * sv;
          }
          var bu = b[o], bv = b[second];
          y[t * O + o] = c0 + bu; y[t * O + second] = d0 + bv;
          if (r1 !== t) { y[r1 * O + o] = c1 + bu; y[r1 * O + second] = d1 + bv; }
          if (r2 !== t) { y[r2 * O + o] = c2 + bu; y[r2 * O + second] = d2 + bv; }
          if (r3 !== t) { y[r3 * O + o] = c3 + bu; y[r3 * O + second] = d3 + bv; }
        }
      }
    }

    // About a million multiply-adds between two pauses: ~1 ms at full speed, a few ms on a phone.
    var STEP_WORK = 1 << 20;

    // y = x · Wᵀ + b, yielding between slices of outputs so that a caller can pause.
    function* linearSteps(x, n, m, y) {
      var cols = Math.max(2, (Math.floor(STEP_WORK / (n * m.width)) >> 1) << 1);
      for (var o = 0; o < m.rows; o += cols) {
        linear(x, n, m, y, o, Math.min(m.rows, o + cols));
        yield;
      }
    }

    function layerNorm(x, n, d, g, b, eps, out) {  // rows of x -> out (may be x)
      for (var t = 0; t < n; t++) {
        var at = t * d, mean = 0, variance = 0, i;
        for (i = 0; i < d; i++) mean += x[at + i];
        mean /= d;
        for (i = 0; i < d; i++) { var c = x[at + i] - mean; variance += c * c; }
        var inv = 1 / Math.sqrt(variance / d + eps);
        for (i = 0; i < d; i++) out[at + i] = (x[at + i] - mean) * inv * g[i] + b[i];
      }
    }

    // One head: weights[i, j] = softmax_j(q_i · k_j / √hd), context[i] = Σ_j weights[i, j] · v_j.
    function attendHead(qkv, n, d, h, hd, weights, wAt, context) {
      var stride = 3 * d, qo = h * hd, ko = d + h * hd, vo = 2 * d + h * hd, scale = 1 / Math.sqrt(hd);
      var row = new Float64Array(n);
      for (var i = 0; i < n; i++) {
        var qi = i * stride + qo, peak = -Infinity, j, c;
        for (j = 0; j < n; j++) {
          var kj = j * stride + ko, dot = 0;
          for (c = 0; c < hd; c++) dot += qkv[qi + c] * qkv[kj + c];
          row[j] = dot * scale;
          if (row[j] > peak) peak = row[j];
        }
        var total = 0;
        for (j = 0; j < n; j++) { row[j] = Math.exp(row[j] - peak); total += row[j]; }
        var base = wAt + i * n, ci = i * d + qo;
        for (c = 0; c < hd; c++) context[ci + c] = 0;
        for (j = 0; j < n; j++) {
          var w = row[j] / total, vj = j * stride + vo;
          weights[base + j] = w;
          for (c = 0; c < hd; c++) context[ci + c] += w * qkv[vj + c];
        }
      }
    }

    // ---- the forward pass ----------------------------------------------------------------------

    // ids: token ids, [CLS] … [SEP]; every shard they need must have been added.
    // Yields every ~STEP_WORK multiply-adds; returns {attentions [L·H·n·n], hidden [n·d]}.
    function* forward(model, ids) {
      var c = model.config, n = ids.length, d = c.hidden_size, f = c.intermediate_size;
      var H = c.num_attention_heads, hd = d / H, L = model.layers.length, eps = c.layer_norm_eps;
      if (n < 1 || n > c.max_position_embeddings) throw new Error(n + " tokens; the model reads 1 to " + c.max_position_embeddings);
      var x = new Float32Array(n * d), a = new Float32Array(n * d), tmp = new Float32Array(n * d);
      var qkv = new Float32Array(n * 3 * d), context = new Float32Array(n * d), inner = new Float32Array(n * f);
      var attentions = new Float32Array(L * H * n * n), t, i;
      for (t = 0; t < n; t++) {
        var id = ids[t];
        if (!(id >= 0 && id < c.vocab_size && id === Math.floor(id))) throw new Error("token id " + id + " is outside the vocabulary");
        var shard = model.shards[Math.floor(id / model.shardRows)];
        if (!shard) throw new Error("the embeddings of token id " + id + " are not loaded");
        var row = (id % model.shardRows) * d, srow = row / 32;
        for (i = 0; i < d; i++) {
          x[t * d + i] = shard.q[row + i] * shard.s[srow + (i >> 5)] + model.position[t * d + i] + model.tokenType[i];
        }
      }
      layerNorm(x, n, d, model.lnG, model.lnB, eps, x);
      for (var l = 0; l < L; l++) {
        var layer = model.layers[l];
        yield* linearSteps(x, n, layer.qkv, qkv);
        for (var h = 0; h < H; h++) {
          attendHead(qkv, n, d, h, hd, attentions, (l * H + h) * n * n, context);
          if (n * n * hd > STEP_WORK / 4) yield;
        }
        yield* linearSteps(context, n, layer.o, tmp);
        for (i = 0; i < n * d; i++) tmp[i] += x[i];
        layerNorm(tmp, n, d, layer.ln1g, layer.ln1b, eps, a);
        yield* linearSteps(a, n, layer.in, inner);
        for (i = 0; i < n * f; i++) inner[i] = gelu(inner[i]);
        yield;
        yield* linearSteps(inner, n, layer.out, tmp);
        for (i = 0; i < n * d; i++) tmp[i] += a[i];
        layerNorm(tmp, n, d, layer.ln2g, layer.ln2b, eps, x);
        yield;
      }
      return { attentions: attentions, hidden: x };
    }

    function runToEnd(steps) {
      for (;;) {
        var step = steps.next();
        if (step.done) return step.value;
      }
    }

    var api = { createModel: createModel, modelSteps: modelSteps, addShard: addShard, missingShards: missingShards, forward: forward,
      runToEnd: runToEnd, erf: erf, gelu: gelu, halfToNumber: halfToNumber };

    // ---- inside a Worker: the loader's messages ------------------------------------------------
    // On start -> {op: "hello"} (the loader's sign that this page may run Workers);
    // {op: "init", id, spec, dense} -> {op: "ready", id}; {op: "shard", index, buffer, count, scalesOffset};
    // {op: "run", id, ids} -> {op: "result", id, attentions, hidden} (buffers transferred);
    // any failure -> {op: "error", id, message}.
    if (inWorker) {
      var model = null;
      scope.onmessage = function (event) {
        var m = event.data;
        try {
          if (m.op === "init") {
            model = createModel(m.spec, m.dense);
            scope.postMessage({ op: "ready", id: m.id });
          } else if (m.op === "shard") {
            addShard(model, m.index, m.buffer, m.count, m.scalesOffset);
          } else if (m.op === "run") {
            var out = runToEnd(forward(model, m.ids));
            scope.postMessage({ op: "result", id: m.id, attentions: out.attentions, hidden: out.hidden },
              [out.attentions.buffer, out.hidden.buffer]);
          }
        } catch (error) {
          scope.postMessage({ op: "error", id: m.id, message: String(error && error.message || error) });
        }
      };
      scope.postMessage({ op: "hello" });
    }
    return api;
  }

  var Labs = root.Labs = root.Labs || {};
  var runtime = Labs.runtime = Labs.runtime || {};
  runtime.engine = engine;
  runtime.engineSource = "(" + engine.toString() + ")(self, true);\n";
})(window);
