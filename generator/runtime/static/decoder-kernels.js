/* The decoder's kernels: the matrix-vector products over the GGUF's quantized blocks, RMSNorm and
 * RoPE, for static/decoder.js. A function of their own that touches nothing outside itself, so the
 * loader can put its source into the decoder's Worker beside the engine's.
 *
 * The blocks, as ggml-common.h lays them out:
 *   Q4_1, 32 weights in 20 bytes: float16 d, float16 m, 16 bytes q, weight j in the low nibble of
 *        byte j and weight j+16 in its high nibble; w = d·q + m, so a block's share of a dot
 *        product is d·Σ q·x + m·Σ x, and Σ x per block is summed once per input vector;
 *   Q8_0, 32 weights in 34 bytes: float16 d, 32 int8 q; w = d·q.
 * A Q4_1 block is read as five 32-bit words (d and m in the first), four bytes at a time; a Q8_0
 * block as 17 16-bit words (it starts on an even byte). Typed arrays read little-endian here, as
 * every browser's platform is. Sums run in float64.
 */
(function (root) {
  "use strict";

  function decoderKernels() {
    "use strict";

    // IEEE half -> number, for all 65,536 bit patterns: the kernels look a block's scale up.
    var HALF = new Float64Array(65536);
    for (var h = 0; h < 65536; h++) {
      var sign = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
      HALF[h] = e === 0 ? sign * m * 5.960464477539063e-8 : e === 31 ? (m ? NaN : sign * Infinity)
        : sign * (1024 + m) * Math.pow(2, e - 25);
    }

    // Σ x over each block of 32 of each row: x [n, cols] -> sums [n, cols/32].
    function blockSums(x, n, cols, sums) {
      var B = cols >> 5;
      for (var r = 0; r < n; r++) {
        for (var b = 0; b < B; b++) {
          var at = r * cols + b * 32, s = 0;
          for (var j = 0; j < 32; j++) s += x[at + j];
          sums[r * B + b] = s;
        }
      }
    }

    // One row: y[o] = Σ_b d·Σ_j q·x + m·Σ x for outputs [o0, o1) of a Q4_1 matrix W [rows, cols].
    // Each 32-bit word holds bytes j..j+3 of a block: weights j..j+3 in its low nibbles, j+16..j+19
    // in its high ones.
    function q41Row(W, x, xs, y, o0, o1) {
      var words = W.words, B = W.cols >> 5;
      for (var o = o0; o < o1; o++) {
        var at = o * B * 5, acc = 0;
        for (var b = 0, xi = 0; b < B; b++, xi += 32, at += 5) {
          var dm = words[at], w0 = words[at + 1], w1 = words[at + 2], w2 = words[at + 3], w3 = words[at + 4];
          var lo = x[xi] * (w0 & 15) + x[xi + 1] * ((w0 >>> 8) & 15) + x[xi + 2] * ((w0 >>> 16) & 15) + x[xi + 3] * ((w0 >>> 24) & 15)
            + x[xi + 4] * (w1 & 15) + x[xi + 5] * ((w1 >>> 8) & 15) + x[xi + 6] * ((w1 >>> 16) & 15) + x[xi + 7] * ((w1 >>> 24) & 15)
            + x[xi + 8] * (w2 & 15) + x[xi + 9] * ((w2 >>> 8) & 15) + x[xi + 10] * ((w2 >>> 16) & 15) + x[xi + 11] * ((w2 >>> 24) & 15)
            + x[xi + 12] * (w3 & 15) + x[xi + 13] * ((w3 >>> 8) & 15) + x[xi + 14] * ((w3 >>> 16) & 15) + x[xi + 15] * ((w3 >>> 24) & 15);
          var hi = x[xi + 16] * ((w0 >>> 4) & 15) + x[xi + 17] * ((w0 >>> 12) & 15) + x[xi + 18] * ((w0 >>> 20) & 15) + x[xi + 19] * (w0 >>> 28)
            + x[xi + 20] * ((w1 >>> 4) & 15) + x[xi + 21] * ((w1 >>> 12) & 15) + x[xi + 22] * ((w1 >>> 20) & 15) + x[xi + 23] * (w1 >>> 28)
            + x[xi + 24] * ((w2 >>> 4) & 15) + x[xi + 25] * ((w2 >>> 12) & 15) + x[xi + 26] * ((w2 >>> 20) & 15) + x[xi + 27] * (w2 >>> 28)
            + x[xi + 28] * ((w3 >>> 4) & 15) + x[xi + 29] * ((w3 >>> 12) & 15) + x[xi + 30] * ((w3 >>> 20) & 15) + x[xi + 31] * (w3 >>> 28);
          acc += HALF[dm & 0xFFFF] * (lo + hi) + HALF[dm >>> 16] * xs[b];
        }
        y[o] = acc;
      }
    }

    // One row through a table: for an input vector x, table[(b·16 + j)·256 + byte] holds what
    // byte j of block b adds to Σ q·x, (byte & 15)·x[32b + j] + (byte >> 4)·x[32b + j + 16], so a
    // block costs 16 lookups instead of 32 unpacked multiply-adds. Building it (4,096 entries per
    // block) pays off when several matrices read the same x (q, k and v; gate and up) and the
    // table stays in a core's cache (LUT_MAX_COLS).
    var LUT_MAX_COLS = 576;  // a 590 KB table; for ffn_down's 1,536 inputs (1.6 MB) the plain kernel is faster
    function buildTable(x, cols, table) {
      for (var b = 0, B = cols >> 5; b < B; b++) {
        for (var j = 0; j < 16; j++) {
          var low = x[b * 32 + j], high = x[b * 32 + j + 16], base = (b * 16 + j) * 256;
          for (var hn = 0; hn < 16; hn++) {
            var h = hn * high, at = base + hn * 16;
            for (var ln = 0; ln < 16; ln++) table[at + ln] = ln * low + h;
          }
        }
      }
    }

    function q41Table(W, table, xs, y, o0, o1) {
      var words = W.words, B = W.cols >> 5;
      for (var o = o0; o < o1; o++) {
        var at = o * B * 5, acc = 0;
        for (var b = 0, t = 0; b < B; b++, at += 5, t += 4096) {
          var dm = words[at], w0 = words[at + 1], w1 = words[at + 2], w2 = words[at + 3], w3 = words[at + 4];
          var s = table[t + (w0 & 255)] + table[t + 256 + ((w0 >>> 8) & 255)] + table[t + 512 + ((w0 >>> 16) & 255)] + table[t + 768 + (w0 >>> 24)]
            + table[t + 1024 + (w1 & 255)] + table[t + 1280 + ((w1 >>> 8) & 255)] + table[t + 1536 + ((w1 >>> 16) & 255)] + table[t + 1792 + (w1 >>> 24)]
            + table[t + 2048 + (w2 & 255)] + table[t + 2304 + ((w2 >>> 8) & 255)] + table[t + 2560 + ((w2 >>> 16) & 255)] + table[t + 2816 + (w2 >>> 24)]
            + table[t + 3072 + (w3 & 255)] + table[t + 3328 + ((w3 >>> 8) & 255)] + table[t + 3584 + ((w3 >>> 16) & 255)] + table[t + 3840 + (w3 >>> 24)];
          acc += HALF[dm & 0xFFFF] * s + HALF[dm >>> 16] * xs[b];
        }
        y[o] = acc;
      }
    }

    // Several rows: the 32 weights of a block unpacked once into q, then dotted with every row, so
    // that a prompt of n tokens unpacks each weight once per four rows, not once per row.
    var Q = new Float64Array(32);
    function q41Rows(W, x, xs, n, y, o0, o1) {
      var words = W.words, cols = W.cols, B = cols >> 5, O = W.rows;
      for (var r = 0; r < n; r += 4) {
        var r1 = r + 1 < n ? r + 1 : r, r2 = r + 2 < n ? r + 2 : r, r3 = r + 3 < n ? r + 3 : r;
        var a0 = r * cols, a1 = r1 * cols, a2 = r2 * cols, a3 = r3 * cols;
        for (var o = o0; o < o1; o++) {
          var at = o * B * 5, c0 = 0, c1 = 0, c2 = 0, c3 = 0;
          for (var b = 0; b < B; b++, at += 5) {
            for (var k = 0; k < 4; k++) {
              var w = words[at + 1 + k], j = 4 * k;
              Q[j] = w & 15; Q[j + 1] = (w >>> 8) & 15; Q[j + 2] = (w >>> 16) & 15; Q[j + 3] = (w >>> 24) & 15;
              Q[j + 16] = (w >>> 4) & 15; Q[j + 17] = (w >>> 12) & 15; Q[j + 18] = (w >>> 20) & 15; Q[j + 19] = w >>> 28;
            }
            var s0 = 0, s1 = 0, s2 = 0, s3 = 0, xb = b * 32;
            for (var i = 0; i < 32; i++) {
              var qi = Q[i];
              s0 += qi * x[a0 + xb + i]; s1 += qi * x[a1 + xb + i]; s2 += qi * x[a2 + xb + i]; s3 += qi * x[a3 + xb + i];
            }
            var dm = words[at], dd = HALF[dm & 0xFFFF], mm = HALF[dm >>> 16];
            c0 += dd * s0 + mm * xs[r * B + b]; c1 += dd * s1 + mm * xs[r1 * B + b];
            c2 += dd * s2 + mm * xs[r2 * B + b]; c3 += dd * s3 + mm * xs[r3 * B + b];
          }
          y[r * O + o] = c0;
          if (r1 !== r) y[r1 * O + o] = c1;
          if (r2 !== r) y[r2 * O + o] = c2;
          if (r3 !== r) y[r3 * O + o] = c3;
        }
      }
    }

    // y[o] = Σ_b d·Σ_j q·x for outputs [o0, o1) of a Q8_0 matrix [rows, cols], one input row.
    // A block is 17 16-bit words: d, then 16 words of two int8 each (low byte first).
    function q80Row(E, x, y, o0, o1) {
      var halves = E.halves, B = E.cols >> 5;
      for (var o = o0; o < o1; o++) {
        var at = o * B * 17, acc = 0;
        for (var b = 0, xi = 0; b < B; b++, xi += 32, at += 17) {
          var s = 0;
          for (var j = 0; j < 16; j++) {
            var v = halves[at + 1 + j];
            s += x[xi + 2 * j] * ((v << 24) >> 24) + x[xi + 2 * j + 1] * (v >> 8);
          }
          acc += HALF[halves[at] & 0xFFFF] * s;
        }
        y[o] = acc;
      }
    }

    // Row `id` of a Q8_0 matrix, as numbers: a token's embedding.
    function q80Unpack(E, id, out, at) {
      var halves = E.halves, B = E.cols >> 5, base = id * B * 17;
      for (var b = 0; b < B; b++) {
        var d = HALF[halves[base + b * 17] & 0xFFFF];
        for (var j = 0; j < 16; j++) {
          var v = halves[base + b * 17 + 1 + j];
          out[at + b * 32 + 2 * j] = d * ((v << 24) >> 24);
          out[at + b * 32 + 2 * j + 1] = d * (v >> 8);
        }
      }
    }

    function rmsNorm(x, n, d, g, eps, out) {  // rows of x [n, d] -> out [n, d] (may be x)
      for (var r = 0; r < n; r++) {
        var at = r * d, ss = 0, i;
        for (i = 0; i < d; i++) ss += x[at + i] * x[at + i];
        var inv = 1 / Math.sqrt(ss / d + eps);
        for (i = 0; i < d; i++) out[at + i] = x[at + i] * inv * g[i];
      }
    }

    // Rotates each head's pairs (2i, 2i+1) of rows [n, heads·hd] at positions p0.. by p·θᵢ.
    function rope(x, n, heads, hd, p0, theta) {
      var half = hd >> 1, width = heads * hd;
      for (var r = 0; r < n; r++) {
        var p = p0 + r;
        for (var i = 0; i < half; i++) {
          var angle = p * Math.pow(theta, -2 * i / hd), c = Math.cos(angle), s = Math.sin(angle);
          for (var hh = 0; hh < heads; hh++) {
            var at = r * width + hh * hd + 2 * i, a = x[at], b = x[at + 1];
            x[at] = a * c - b * s;
            x[at + 1] = a * s + b * c;
          }
        }
      }
    }

    return { HALF: HALF, LUT_MAX_COLS: LUT_MAX_COLS, blockSums: blockSums, q41Row: q41Row, buildTable: buildTable,
      q41Table: q41Table, q41Rows: q41Rows, q80Row: q80Row, q80Unpack: q80Unpack, rmsNorm: rmsNorm, rope: rope };
  }

  var Labs = root.Labs = root.Labs || {};
  var runtime = Labs.runtime = Labs.runtime || {};
  runtime.decoderKernels = decoderKernels;
})(window);
