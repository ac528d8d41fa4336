/* Labs.runtime: loads a model's page files (pagefiles.py) and runs it, in a Worker when the page
 * may start one, else on the main thread in slices. docs/runtime.md has the whole API.
 *
 *   Labs.runtime.describe(manifestSrc, {signal})     -> Promise<{totalBytes, model}>
 *   Labs.runtime.load({manifestSrc, ids, onProgress, signal, worker}) -> Promise<model>
 *   model.tokenizer.encode(text) -> {tokens, ids, …}   (static/wordpiece.js)
 *   model.run(ids)  -> Promise<{ids, n, layers, heads, d, attentions, hidden}>
 *   model.close()
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
  function crc32(bytes) {
    if (!CRC_TABLE) {
      CRC_TABLE = new Int32Array(256);
      for (var n = 0; n < 256; n++) {
        var c = n;
        for (var k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
        CRC_TABLE[n] = c;
      }
    }
    var crc = -1;
    for (var i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]) & 255] ^ (crc >>> 8);
    return (crc ^ -1) >>> 0;
  }

  // base64 text -> exactly entry.bytes bytes at target (a Uint8Array of that length), checked.
  function decodeInto(text, target, entry) {
    if (typeof text !== "string") throw corrupt(entry.src, "it holds no base64 text");
    var written;
    try {
      if (target.setFromBase64) {
        var result = target.setFromBase64(text);
        if (result.read !== text.length) throw corrupt(entry.src, "it holds more bytes than the manifest lists");
        written = result.written;
      } else {
        var binary = atob(text);
        if (binary.length > target.length) throw corrupt(entry.src, "it holds more bytes than the manifest lists");
        for (var i = 0; i < binary.length; i++) target[i] = binary.charCodeAt(i);
        written = binary.length;
      }
    } catch (error) {
      if (error instanceof Error && /is corrupt/.test(error.message)) throw error;
      throw corrupt(entry.src, "its base64 text is damaged");
    }
    if (written !== entry.bytes) throw corrupt(entry.src, written + " bytes where the manifest lists " + entry.bytes);
    if (crc32(target) !== entry.crc32) throw corrupt(entry.src, "its checksum does not match");
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

  runtime.describe = function (manifestSrc, options) {
    return readManifest(manifestSrc, options && options.signal).then(function (m) {
      return { totalBytes: m.manifest.load_bytes, model: m.manifest.model, config: m.manifest.spec.config,
        licenseSrc: absolute(m.manifest.model.license_src, m.url) };
    });
  };

  // ---- the engine: a Worker, or the main thread ----------------------------------------------

  function startWorker() {
    return new Promise(function (resolve) {
      var url, worker, timer;
      function give(w) {
        clearTimeout(timer);
        if (url) URL.revokeObjectURL(url);
        if (!w && worker) worker.terminate();
        resolve(w);
      }
      try {
        url = URL.createObjectURL(new Blob([runtime.engineSource], { type: "text/javascript" }));
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

  // The engine inside a Worker: one message per call, answers matched by id.
  function workerEngine(worker, spec, dense) {
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
    function call(message, transfer) {
      if (broken) return Promise.reject(broken);
      return new Promise(function (resolve, reject) {
        message.id = next++;
        pending[message.id] = { resolve: resolve, reject: reject };
        worker.postMessage(message, transfer || []);
      });
    }
    return call({ op: "init", spec: spec, dense: dense }, [dense]).then(function () {
      return {
        mode: "worker",
        addShard: function (index, buffer, entry) {
          worker.postMessage({ op: "shard", index: index, buffer: buffer, count: entry.count, scalesOffset: entry.scales_offset }, [buffer]);
        },
        run: function (ids) { return call({ op: "run", ids: ids }); },
        close: function () { fail("The model was closed."); worker.terminate(); },
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
    var inner = follow(options.signal), signal = inner.signal, onProgress = options.onProgress || function () {};
    var firstIds = options.ids || [];
    var workerReady = null, engine = null;
    function check() { if (signal.aborted) throw aborted(signal); }
    return readManifest(options.manifestSrc, signal).then(function (m) {
      var manifest = m.manifest, base = m.url;
      var chunks = manifest.dense.chunks, first = shardsFor(manifest, firstIds);
      var total = manifest.load_bytes, loaded = 0;
      first.forEach(function (s) { total += manifest.shards[s].size; });
      if (options.worker !== false) workerReady = startWorker();
      var dense = allocate(manifest.dense.bytes);
      onProgress(0, total);
      var vocab = null, files = [manifest.vocab].concat(chunks);
      return eachLimited(files, PARALLEL, function (entry) {
        return loadScript(absolute(entry.src, base), signal).then(function (value) {
          return nextTask().then(function () {  // one file decoded per task
            check();
            if (entry === manifest.vocab) vocab = value;
            else decodeInto(value, new Uint8Array(dense, entry.offset, entry.bytes), entry);
            loaded += entry.size;
            onProgress(loaded, total);
          });
        });
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
  };

  function makeModel(manifest, base, engine, totalBytes) {
    var have = {}, queue = Promise.resolve(), config = manifest.spec.config;

    function ensureShards(indices, signal, onShard) {
      var inner = follow(signal);
      return eachLimited(indices.filter(function (s) { return !have[s]; }), PARALLEL, function (s) {
        var entry = manifest.shards[s];
        return loadScript(absolute(entry.src, base), inner.signal).then(function (text) {
          if (have[s]) return;
          var buffer = allocate(entry.bytes);
          decodeInto(text, new Uint8Array(buffer), entry);
          engine.addShard(s, buffer, entry);
          have[s] = true;
          if (onShard) onShard(entry);
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
})(window);
