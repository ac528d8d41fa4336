/* A decoder's model (Llama: static/decoder.js, its tokenizer static/bpe.js) over the loading
 * static/loader.js shares: every weight shard at load (the unembedding reads every token's row),
 * then prefill, step, next, lens, attention and generate, in a Worker or on the main thread in
 * slices.
 */
(function (root) {
  "use strict";

  var runtime = root.Labs.runtime;
  var L = runtime.loading, aborted = L.aborted, nextTask = L.nextTask, sliced = L.sliced, messenger = L.messenger;

  var PREFILL_CHUNK = 8;  // prompt tokens per forward call: a newer prompt takes over after at most this many

  // Turns an out-of-memory failure of the engine into the plain message.
  function plainFailure(error) {
    if (error instanceof RangeError && /alloc|memory|buffer/i.test(error.message)) {
      throw new Error("There is not enough memory to run the model.");
    }
    throw error;
  }

  // The decoder inside a Worker: every call a message, answered {value, length, cache}.
  function decoderWorker(worker, spec, weights) {
    var link = messenger(worker);
    return link.call({ op: "init", spec: spec, buffer: weights }, [weights]).then(function () {
      return {
        mode: "worker",
        call: function (op, args) {
          var message = { op: op };
          for (var key in args) message[key] = args[key];
          return link.call(message);
        },
        close: link.close,
      };
    });
  }

  // The decoder on this thread: building the model, every forward pass, lens and attention replay
  // advance in slices of SLICE_MS; the short calls run in one task each.
  function decoderMain(spec, weights) {
    var E = runtime.decoderEngine(null, false, runtime.decoderKernels(), runtime.decoderSampling()), closed = false;
    function stopped() { return closed; }
    return sliced(E.modelSteps(spec, weights), stopped).then(function (model) {
      function answer(value) { return { value: value, length: model.length, cache: E.cacheBytes(model) }; }
      var long = {
        forward: function (a) { return E.forward(model, a.ids, { logits: a.logits }); },
        lens: function (a) { return E.lens(model, a.position); },
        attention: function (a) { return E.attention(model, a.layer); },
      };
      var short = {
        truncate: function (a) { E.truncate(model, a.n); return null; },
        probs: function () { return E.probabilities(model); },
        sample: function (a) { return E.sample(model, a.options, a.u); },
      };
      return {
        mode: "main",
        call: function (op, args) {
          if (closed) return Promise.reject(new Error("The model was closed."));
          if (long[op]) return sliced(long[op](args), stopped).then(answer, plainFailure);
          return nextTask().then(function () { return answer(short[op](args)); }).catch(plainFailure);
        },
        close: function () { closed = true; },
      };
    });
  }

  // Loads every weight shard (the whole model: the unembedding reads every token's row) and the
  // tokenizer, then starts the engine.
  function loadDecoder(m, options, inner) {
    var signal = inner.signal, onProgress = options.onProgress || function () {}, manifest = m.manifest;
    var workerReady = null, engine = null;
    function check() { if (signal.aborted) throw aborted(signal); }
    return Promise.resolve().then(function () {
      var total = manifest.load_bytes, loaded = 0, tokenizer = null;
      if (options.worker !== false) workerReady = L.startWorker(runtime.decoderSource);
      var weights = L.allocate(manifest.spec.bytes);
      onProgress(0, total);
      function build(value) {  // the tokenizer's tables, built here on this thread, in slices
        return sliced(runtime.BPE.steps(value), function () { return false; }).then(function (t) { tokenizer = t; });
      }
      return L.loadWeights(manifest.tokenizer, build, manifest.shards, weights, m.url, signal, function (entry) {
        loaded += entry.size;
        onProgress(loaded, total);
      }).then(function () {
        return workerReady || null;
      }).then(function (worker) {
        check();
        return worker ? decoderWorker(worker, manifest.spec, weights) : decoderMain(manifest.spec, weights);
      }).then(function (e) {
        engine = e;
        check();
        return makeDecoder(manifest, engine, tokenizer, total);
      });
    }).catch(function (error) {
      inner.abort();
      if (engine) engine.close();
      else if (workerReady) workerReady.then(function (w) { if (w) w.terminate(); });
      throw error;
    });
  }

  // mulberry32, as the sampling lab and generator/models/sampling.py draw: the next unsigned
  // 32-bit output for `seed`.
  function mulberry32(seed) {
    var a = seed | 0;
    return function () {
      a = a + 0x6D2B79F5 | 0;
      var t = Math.imul(a ^ a >>> 15, a | 1);
      t = t + Math.imul(t ^ t >>> 7, t | 61) ^ t;
      return (t ^ t >>> 14) >>> 0;
    };
  }

  function makeDecoder(manifest, engine, tokenizer, totalBytes) {
    var config = manifest.spec.config, V = config.vocab_size, limit = config.max_positions;
    var queue = Promise.resolve(), held = [], hasLogits = false, latest = null;
    var cache = { positions: 0, bytes: 0, capacity: 0, reserved: 0 };

    // Calls run one after another, in the order asked.
    function enqueue(job) {
      var result = queue.then(job);
      queue = result.catch(function () {});
      return result;
    }
    function call(op, args) {
      return engine.call(op, args || {}).then(function (answer) { cache = answer.cache; return answer.value; });
    }
    function checked(ids, more) {
      ids = Array.prototype.slice.call(ids);
      for (var i = 0; i < ids.length; i++) {
        if (!(ids[i] >= 0 && ids[i] < V && ids[i] === Math.floor(ids[i]))) throw new Error("Token id " + ids[i] + " is outside the model's vocabulary.");
      }
      var n = ids.length + (more || 0);
      if (n < 1 || n > limit) throw new Error("The model reads 1 to " + limit + " tokens, not " + n + ".");
      return ids;
    }
    function replaced() { return new DOMException("A newer prompt replaced this one.", "AbortError"); }
    function noPrompt() { return new Error("There is no prompt yet: run one first."); }

    function prefill(ids) {
      var ticket = {};
      try { ids = checked(ids); } catch (error) { return Promise.reject(error); }
      latest = ticket;
      return enqueue(function () {
        if (latest !== ticket) throw replaced();
        var keep = 0;
        while (keep < held.length && keep < ids.length && held[keep] === ids[keep]) keep++;
        if (keep === ids.length && keep === held.length && hasLogits) return { length: keep, reused: keep };
        if (keep === ids.length) keep--;  // the last token runs again: its logits are the answer
        var reused = keep;
        function run() {
          if (held.length === ids.length) return { length: held.length, reused: reused };
          if (latest !== ticket) throw replaced();
          var piece = ids.slice(held.length, held.length + PREFILL_CHUNK), last = held.length + piece.length === ids.length;
          hasLogits = false;
          return call("forward", { ids: piece, logits: last }).then(function () {
            held.push.apply(held, piece);
            hasLogits = last;
            return run();
          });
        }
        if (keep === held.length) return run();
        return call("truncate", { n: keep }).then(function () {
          held.length = keep;
          hasLogits = false;
          return run();
        });
      });
    }

    // Samples up to options.n tokens after the sequence, as generator/models/sampling.py does:
    // step i draws with output i of mulberry32(seed). Each token is stepped into the sequence;
    // a special token (<|im_end|> …) ends the text after itself and is not stepped.
    function generate(options, onToken) {
      options = options || {};
      var n = options.n, signal = options.signal, random = mulberry32(options.seed || 0);
      var draw = { temperature: options.temperature === undefined ? 1 : options.temperature,
        topK: options.topK || 0, topP: options.topP === undefined ? 100 : options.topP };
      if (!(n >= 1 && n === Math.floor(n))) return Promise.reject(new Error("generate needs n, a whole number of tokens of at least 1."));
      if (!(draw.temperature >= 0)) return Promise.reject(new Error("The temperature must be 0 (greedy) or more."));
      if (!(draw.topP >= 1 && draw.topP <= 100 && draw.topP === Math.floor(draw.topP))) {
        return Promise.reject(new Error("top-p is a whole percentage from 1 to 100."));
      }
      var special = tokenizer ? tokenizer.special : [];
      return enqueue(function () {
        if (!hasLogits) throw noPrompt();
        var generated = [];
        function result(stopped) {
          return { ids: generated, text: tokenizer ? tokenizer.decode(generated) : null, stopped: stopped };
        }
        function next(k) {
          if (k === n) return result("length");
          if (signal && signal.aborted) throw aborted(signal);
          return call("sample", { options: draw, u: random() }).then(function (r) {
            generated.push(r.id);
            if (onToken) {
              onToken({ index: k, id: r.id, token: tokenizer ? tokenizer.token(r.id) : null,
                text: tokenizer ? tokenizer.decode(generated) : null, probability: r.probability, share: r.share });
            }
            if (special.indexOf(r.id) >= 0) return result(tokenizer.token(r.id));
            if (held.length >= limit) return result("context");
            return call("forward", { ids: [r.id], logits: true }).then(function () {
              held.push(r.id);
              hasLogits = true;
              return next(k + 1);
            });
          });
        }
        return next(0);
      });
    }

    return {
      totalBytes: totalBytes,
      config: config,
      mode: engine.mode,
      model: manifest.model,
      tokenizer: tokenizer,
      // The sequence becomes `ids`: the cache keeps the longest common prefix and runs the rest
      // (PREFILL_CHUNK tokens per call). A later prefill replaces one not yet done, which then
      // rejects with an AbortError: call it on every keystroke.
      prefill: prefill,
      // Appends one token (e.g. the one sampled) to the sequence.
      step: function (id) {
        var ids;
        try { ids = checked([id], held.length); } catch (error) { return Promise.reject(error); }
        return enqueue(function () {
          return call("forward", { ids: ids, logits: true }).then(function () {
            held.push(ids[0]);
            hasLogits = true;
            return { length: held.length };
          });
        });
      },
      // Float32Array [V]: the probability of each token coming next.
      next: function () {
        return enqueue(function () {
          if (!hasLogits) throw noPrompt();
          return call("probs");
        });
      },
      // The logit lens at `position` (default: the last): {position, layers: L + 1, vocab: V,
      // probabilities: Float32Array [(L+1)·V]}, row 0 the embedding alone, row l after layer l.
      lens: function (position) {
        return enqueue(function () {
          var p = position === undefined ? held.length - 1 : position;
          return call("lens", { position: p }).then(function (probabilities) {
            return { position: p, layers: config.n_layers + 1, vocab: V, probabilities: probabilities };
          });
        });
      },
      // {layer, heads, n, weights: Float32Array [heads·n·n]}: weight of position j for position i
      // in head h at [(h·n + i)·n + j], zero for j > i.
      attention: function (layer) {
        return enqueue(function () {
          var n = held.length;
          return call("attention", { layer: layer }).then(function (weights) {
            return { layer: layer, heads: config.n_heads, n: n, weights: weights };
          });
        });
      },
      generate: generate,
      reset: function () {
        latest = null;
        return enqueue(function () {
          return call("truncate", { n: 0 }).then(function () { held = []; hasLogits = false; });
        });
      },
      ids: function () { return held.slice(); },
      // {positions, bytes, capacity, reserved}: what the KV cache holds and has room for.
      cache: function () { return { positions: cache.positions, bytes: cache.bytes, capacity: cache.capacity, reserved: cache.reserved }; },
      close: function () { engine.close(); },
    };
  }
  runtime.architectures.llama = { load: loadDecoder, tokenizer: function (data) { return runtime.BPE(data); } };
})(window);
