/* Labs.runtime: loads a model's page files (pagefiles.py for an encoder, decoder.py for a decoder)
 * and runs it, in a Worker when the page may start one, else on the main thread in slices.
 * docs/runtime.md has the whole API.
 *
 *   Labs.runtime.describe(manifestSrc, {signal})     -> Promise<{totalBytes, model, architecture, …}>
 *   Labs.runtime.tokenizer({manifestSrc, signal})    -> Promise<tokenizer>   (the tokenizer alone)
 *   Labs.runtime.load({manifestSrc, ids, onProgress, signal, worker}) -> Promise<model>
 * An encoder (BERT):
 *   model.tokenizer.encode(text) -> {tokens, ids, …}   (static/wordpiece.js)
 *   model.run(ids)  -> Promise<{ids, n, layers, heads, d, attentions, hidden}>
 * A decoder (Llama, static/decoder.js; its tokenizer static/bpe.js):
 *   model.prefill(ids), model.step(id), model.next(), model.lens(position), model.attention(layer),
 *   model.generate(options, onToken), model.reset(), model.cache(), model.ids()
 * Both: model.close()
 *
 * Every file is a classic script that registers its value in Labs.runtimeData under its own file
 * name (no fetch: pages open from file://). The loader takes the value, deletes the key and removes
 * the element, so nothing stays registered, cancelled or not.
 */
(function (root) {
  "use strict";

  var Labs = root.Labs = root.Labs || {};
  var runtime = Labs.runtime = Labs.runtime || {};
  var SLICE_MS = 12;  // main-thread work between two pauses, well under a 50 ms long task
  var PARALLEL = 4;  // data scripts in flight at once
  var WORKER_START_MS = 10000;  // a Worker that has said nothing by then is given up for the main thread

  function registry() { return Labs.runtimeData || (Labs.runtimeData = {}); }
  function baseName(url) { return url.split(/[?#]/)[0].split("/").pop(); }
  function absolute(src, base) { return new URL(src, base || document.baseURI).href; }

  function aborted(signal) {
    return signal && signal.reason !== undefined ? signal.reason : new DOMException("Loading the model was cancelled.", "AbortError");
  }
  function missing(name) { return new Error("The model file " + name + " could not be loaded: it is missing or unreadable."); }
  function corrupt(name, why) { return new Error("The model file " + name + " is corrupt (" + why + ")."); }

  // A pause that lets the page paint and handle input: a task, not a microtask (no 4 ms clamp).
  var channel = null, waiting = [];
  function nextTask() {
    return new Promise(function (resolve) {
      if (!channel) {
        channel = new MessageChannel();
        channel.port1.onmessage = function () { waiting.shift()(); };
      }
      waiting.push(resolve);
      channel.port2.postMessage(0);
    });
  }

  // ---- one data script -------------------------------------------------------------------------

  // Adds <script src=url>; resolves with the value it registered under its file name.
  function loadScript(url, signal) {
    var key = baseName(url);
    return new Promise(function (resolve, reject) {
      if (signal && signal.aborted) { reject(aborted(signal)); return; }
      var script = document.createElement("script"), settled = false;
      function take() { var value = registry()[key]; delete registry()[key]; return value; }
      function finish() {
        if (script.parentNode) script.parentNode.removeChild(script);
        if (signal) signal.removeEventListener("abort", onAbort);
      }
      function onAbort() {  // the script may still arrive and run: its load handler then drops its value
        if (settled) return;
        settled = true;
        finish();
        reject(aborted(signal));
      }
      script.onload = function () {
        var value = take();
        if (settled) return;
        settled = true;
        finish();
        if (value === undefined) reject(corrupt(key, "it did not register its data"));
        else resolve(value);
      };
      script.onerror = function () {
        take();
        if (settled) return;
        settled = true;
        finish();
        reject(missing(key));
      };
      if (signal) signal.addEventListener("abort", onAbort);
      script.src = url;
      script.async = true;
      document.head.appendChild(script);
    });
  }

  // ---- decoding and checking -----------------------------------------------------------------

  var CRC_TABLE = null;
  function crc32(bytes, crc) {  // crc: the running value (start with -1); finish with (crc ^ -1) >>> 0
    if (!CRC_TABLE) {
      CRC_TABLE = new Int32Array(256);
      for (var n = 0; n < 256; n++) {
        var c = n;
        for (var k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
        CRC_TABLE[n] = c;
      }
    }
    for (var i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]) & 255] ^ (crc >>> 8);
    return crc;
  }

  // base64 text -> exactly entry.bytes bytes at target (a Uint8Array of that length), checked.
  // A generator: it yields after each piece of DECODE_PIECE characters (384 KB of bytes), so that
  // an 8 MB shard is decoded and checked over 16 tasks of a few milliseconds each.
  var DECODE_PIECE = 1 << 19;  // characters, a multiple of 4: pieces end on whole base64 quanta
  function* decodeSteps(text, target, entry) {
    if (typeof text !== "string") throw corrupt(entry.src, "it holds no base64 text");
    var written = 0, crc = -1;
    for (var start = 0; start < text.length || start === 0; start += DECODE_PIECE) {
      var piece = text.slice(start, start + DECODE_PIECE), room = target.subarray(written), got;
      try {
        if (room.setFromBase64) {
          var result = room.setFromBase64(piece);
          if (result.read !== piece.length) throw corrupt(entry.src, "it holds more bytes than the manifest lists");
          got = result.written;
        } else {
          var binary = atob(piece);
          if (binary.length > room.length) throw corrupt(entry.src, "it holds more bytes than the manifest lists");
          for (var i = 0; i < binary.length; i++) room[i] = binary.charCodeAt(i);
          got = binary.length;
        }
      } catch (error) {
        if (error instanceof Error && /is corrupt/.test(error.message)) throw error;
        throw corrupt(entry.src, "its base64 text is damaged");
      }
      crc = crc32(target.subarray(written, written + got), crc);
      written += got;
      if (start + DECODE_PIECE < text.length) yield;
    }
    if (written !== entry.bytes) throw corrupt(entry.src, written + " bytes where the manifest lists " + entry.bytes);
    if ((crc ^ -1) >>> 0 !== entry.crc32) throw corrupt(entry.src, "its checksum does not match");
  }

  // Decodes one file's text into target, a piece per task.
  function decodeInto(text, target, entry, check) {
    var steps = decodeSteps(text, target, entry);
    function piece() {
      check();
      if (!steps.next().done) return nextTask().then(piece);
    }
    return nextTask().then(piece);
  }

  // ---- the manifest --------------------------------------------------------------------------

  function readManifest(manifestSrc, signal) {
    var url = absolute(manifestSrc);
    return loadScript(url, signal).then(function (manifest) {
      if (!manifest || manifest.format !== "attention-labs-runtime" || manifest.version !== 1) {
        throw corrupt(baseName(url), "it is not a model manifest this page can read");
      }
      return { url: url, manifest: manifest };
    });
  }

  function isDecoder(manifest) { return manifest.architecture === "llama"; }

  runtime.describe = function (manifestSrc, options) {
    return readManifest(manifestSrc, options && options.signal).then(function (m) {
      var manifest = m.manifest, tokenizer = manifest.tokenizer || manifest.vocab;
      return { totalBytes: manifest.load_bytes, model: manifest.model, config: manifest.spec.config,
        architecture: manifest.architecture || "bert", tokenizerBytes: tokenizer.size,
        licenseSrc: absolute(manifest.model.license_src, m.url) };
    });
  };

  // The model's tokenizer alone (its data script, without any weights): a decoder's byte-level
  // BPE (static/bpe.js) or an encoder's WordPiece (static/wordpiece.js).
  runtime.tokenizer = function (options) {
    var signal = options && options.signal;
    return readManifest(options.manifestSrc, signal).then(function (m) {
      var entry = m.manifest.tokenizer || m.manifest.vocab;
      return loadScript(absolute(entry.src, m.url), signal).then(function (data) {
        return isDecoder(m.manifest) ? runtime.BPE(data) : runtime.WordPiece(data);
      });
    });
  };

  // ---- the engine: a Worker, or the main thread ----------------------------------------------

  function startWorker(source) {
    return new Promise(function (resolve) {
      var url, worker, timer;
      function give(w) {
        clearTimeout(timer);
        if (url) URL.revokeObjectURL(url);
        if (!w && worker) worker.terminate();
        resolve(w);
      }
      try {
        url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
        worker = new Worker(url);
      } catch (error) {  // no Worker, or a CSP that forbids blob: workers and says so at once
        give(null);
        return;
      }
      timer = setTimeout(function () { give(null); }, WORKER_START_MS);
      worker.onmessage = function (event) { if (event.data && event.data.op === "hello") give(worker); };
      worker.onerror = function (event) { event.preventDefault(); give(null); };  // e.g. worker-src without blob:
    });
  }

  // Calls into a Worker: one message per call, answers matched by id; a Worker that fails
  // rejects every call still waiting, and every later one.
  function messenger(worker) {
    var pending = {}, next = 1, broken = null;
    function fail(message) {
      broken = new Error(message);
      Object.keys(pending).forEach(function (id) { pending[id].reject(broken); });
      pending = {};
    }
    worker.onmessage = function (event) {
      var m = event.data, call = pending[m.id];
      if (!call) return;
      delete pending[m.id];
      if (m.op === "error") call.reject(new Error(m.message));
      else call.resolve(m);
    };
    worker.onerror = function (event) {
      event.preventDefault();
      fail("The model stopped working" + (event.message ? ": " + event.message : "") + ".");
    };
    return {
      call: function (message, transfer) {
        if (broken) return Promise.reject(broken);
        return new Promise(function (resolve, reject) {
          message.id = next++;
          pending[message.id] = { resolve: resolve, reject: reject };
          worker.postMessage(message, transfer || []);
        });
      },
      close: function () { fail("The model was closed."); worker.terminate(); },
    };
  }

  // The encoder inside a Worker.
  function workerEngine(worker, spec, dense) {
    var link = messenger(worker);
    return link.call({ op: "init", spec: spec, dense: dense }, [dense]).then(function () {
      return {
        mode: "worker",
        addShard: function (index, buffer, entry) {
          worker.postMessage({ op: "shard", index: index, buffer: buffer, count: entry.count, scalesOffset: entry.scales_offset }, [buffer]);
        },
        run: function (ids) { return link.call({ op: "run", ids: ids }); },
        close: link.close,
      };
    });
  }

  // Runs a generator (forward.js's steps) in slices of SLICE_MS with a task between them.
  function sliced(steps, stopped) {
    function slice() {
      if (stopped()) throw new Error("The model was closed.");
      var start = performance.now();
      for (;;) {
        var step = steps.next();
        if (step.done) return step.value;
        if (performance.now() - start > SLICE_MS) return nextTask().then(slice);
      }
    }
    return nextTask().then(slice);
  }

  // The engine on this thread: building the model and every forward pass advance in slices.
  function mainEngine(spec, dense) {
    var engine = runtime.engine(null, false), closed = false;
    function stopped() { return closed; }
    return sliced(engine.modelSteps(spec, dense), stopped).then(function (model) {
      return {
        mode: "main",
        addShard: function (index, buffer, entry) { engine.addShard(model, index, buffer, entry.count, entry.scales_offset); },
        run: function (ids) { return sliced(engine.forward(model, ids), stopped); },
        close: function () { closed = true; },
      };
    });
  }

  // ---- loading -------------------------------------------------------------------------------

  // Runs task(item) for every item, at most `parallel` at once; rejects on the first failure.
  function eachLimited(items, parallel, task) {
    return new Promise(function (resolve, reject) {
      var started = 0, done = 0, failed = false;
      if (!items.length) { resolve(); return; }
      function launch() {
        if (failed || started >= items.length) return;
        var item = items[started++];
        task(item).then(function () {
          done++;
          if (done === items.length) resolve();
          else launch();
        }, function (error) { failed = true; reject(error); });
      }
      for (var i = 0; i < parallel; i++) launch();
    });
  }

  // Loads the tokenizer's script (its value handed to read, which returns a promise) and every
  // chunk of weights into `buffer` at its offset, at most PARALLEL scripts at once; onLoaded(entry)
  // after each file, for the progress bar.
  function loadWeights(tokenizerEntry, read, chunks, buffer, base, signal, onLoaded) {
    function check() { if (signal.aborted) throw aborted(signal); }
    return eachLimited([tokenizerEntry].concat(chunks), PARALLEL, function (entry) {
      return loadScript(absolute(entry.src, base), signal).then(function (value) {
        if (entry === tokenizerEntry) return read(value).then(check);
        return decodeInto(value, new Uint8Array(buffer, entry.offset, entry.bytes), entry, check);
      }).then(function () { onLoaded(entry); });
    });
  }

  function shardsFor(manifest, ids) {
    var rows = manifest.spec.shard_rows, seen = {}, out = [];
    for (var i = 0; i < ids.length; i++) {
      var id = ids[i];
      if (!(id >= 0 && id < manifest.spec.config.vocab_size && id === Math.floor(id))) {
        throw new Error("Token id " + id + " is outside the model's vocabulary.");
      }
      var s = Math.floor(id / rows);
      if (!seen[s]) { seen[s] = true; out.push(s); }
    }
    return out;
  }

  function allocate(bytes) {
    try { return new ArrayBuffer(bytes); } catch (error) {
      throw new Error("There is not enough memory to load the model (" + Math.round(bytes / 1e6) + " MB).");
    }
  }

  // An AbortController that follows `signal` and can also be aborted on its own: when one file
  // fails, the others still in flight are dropped at once rather than left to arrive.
  function follow(signal) {
    var inner = new AbortController();
    if (signal) {
      if (signal.aborted) inner.abort(signal.reason);
      else signal.addEventListener("abort", function () { inner.abort(signal.reason); });
    }
    return inner;
  }

  runtime.load = function (options) {
    var inner = follow(options.signal);
    return readManifest(options.manifestSrc, inner.signal).then(function (m) {
      return isDecoder(m.manifest) ? loadDecoder(m, options, inner) : loadEncoder(m, options, inner);
    }, function (error) { inner.abort(); throw error; });
  };

  function loadEncoder(m, options, inner) {
    var signal = inner.signal, onProgress = options.onProgress || function () {};
    var firstIds = options.ids || [];
    var workerReady = null, engine = null;
    function check() { if (signal.aborted) throw aborted(signal); }
    return Promise.resolve().then(function () {
      var manifest = m.manifest, base = m.url;
      var chunks = manifest.dense.chunks, first = shardsFor(manifest, firstIds);
      var total = manifest.load_bytes, loaded = 0;
      first.forEach(function (s) { total += manifest.shards[s].size; });
      if (options.worker !== false) workerReady = startWorker(runtime.engineSource);
      var dense = allocate(manifest.dense.bytes);
      onProgress(0, total);
      var vocab = null;
      function kept(value) { return nextTask().then(function () { vocab = value; }); }
      return loadWeights(manifest.vocab, kept, chunks, dense, base, signal, function (entry) {
        loaded += entry.size;
        onProgress(loaded, total);
      }).then(function () {
        return workerReady || null;
      }).then(function (worker) {
        check();
        if (worker) return workerEngine(worker, manifest.spec, dense);
        return mainEngine(manifest.spec, dense);
      }).then(function (e) {
        engine = e;
        var model = makeModel(manifest, base, engine, total);
        // The tokenizer (static/wordpiece.js, in the same runtime script) over the model's vocabulary.
        model.tokenizer = runtime.WordPiece && vocab ? runtime.WordPiece(vocab) : null;
        return model.ensureShards(first, signal, function (entry) {
          loaded += entry.size;
          onProgress(loaded, total);
        }).then(function () { check(); return model; });
      });
    }).catch(function (error) {
      inner.abort();
      if (engine) engine.close();
      else if (workerReady) workerReady.then(function (w) { if (w) w.terminate(); });
      throw error;
    });
  }

  function makeModel(manifest, base, engine, totalBytes) {
    var have = {}, queue = Promise.resolve(), config = manifest.spec.config;

    function ensureShards(indices, signal, onShard) {
      var inner = follow(signal);
      return eachLimited(indices.filter(function (s) { return !have[s]; }), PARALLEL, function (s) {
        var entry = manifest.shards[s];
        return loadScript(absolute(entry.src, base), inner.signal).then(function (text) {
          if (have[s]) return;
          var buffer = allocate(entry.bytes);
          return decodeInto(text, new Uint8Array(buffer), entry, function () {
            if (inner.signal.aborted) throw aborted(inner.signal);
          }).then(function () {
            if (have[s]) return;
            engine.addShard(s, buffer, entry);
            have[s] = true;
            if (onShard) onShard(entry);
          });
        });
      }).catch(function (error) { inner.abort(); throw error; });
    }

    return {
      totalBytes: totalBytes,
      config: config,
      mode: engine.mode,
      model: manifest.model,
      ensureShards: ensureShards,
      // ids: [CLS] … [SEP] token ids. Runs one after another, in the order asked.
      run: function (ids) {
        ids = Array.prototype.slice.call(ids);
        var result = queue.then(function () {
          if (ids.length < 1 || ids.length > config.max_position_embeddings) {
            throw new Error("The model reads 1 to " + config.max_position_embeddings + " tokens, not " + ids.length + ".");
          }
          return ensureShards(shardsFor(manifest, ids)).then(function () { return engine.run(ids); });
        }).then(function (out) {
          return { ids: ids, n: ids.length, layers: config.num_hidden_layers, heads: config.num_attention_heads,
            d: config.hidden_size, attentions: out.attentions, hidden: out.hidden };
        });
        queue = result.catch(function () {});
        return result;
      },
      close: function () { engine.close(); },
    };
  }

  // ---- a decoder -------------------------------------------------------------------------------

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
    var E = runtime.decoderEngine(null, false), closed = false;
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
      if (options.worker !== false) workerReady = startWorker(runtime.decoderSource);
      var weights = allocate(manifest.spec.bytes);
      onProgress(0, total);
      function build(value) {  // the tokenizer's tables, built here on this thread, in slices
        return sliced(runtime.BPE.steps(value), function () { return false; }).then(function (t) { tokenizer = t; });
      }
      return loadWeights(manifest.tokenizer, build, manifest.shards, weights, m.url, signal, function (entry) {
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
})(window);
