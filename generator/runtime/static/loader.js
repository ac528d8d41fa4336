/* Labs.runtime: loads a model's page files (pagefiles.py for an encoder, decoder.py for a decoder)
 * and runs it, in a Worker when the page may start one, else on the main thread in slices.
 * docs/runtime.md has the whole API. This file is what every model shares (data scripts, their
 * checks, Workers, slices); static/loader-encoder.js and static/loader-decoder.js, after it in the
 * runtime script, make each architecture's model.
 *
 *   Labs.runtime.describe(manifestSrc, {signal})     -> Promise<{totalBytes, restBytes, model, architecture, …}>
 *   Labs.runtime.tokenizer({manifestSrc, signal})    -> Promise<tokenizer>   (the tokenizer alone)
 *   Labs.runtime.load({manifestSrc, ids, onProgress, signal, worker}) -> Promise<model>
 * An encoder (BERT):
 *   model.tokenizer.encode(text) -> {tokens, ids, …}   (static/wordpiece.js)
 *   model.run(ids)  -> Promise<{ids, n, layers, heads, d, attentions, hidden}>
 *   model.loadAll({onProgress, signal}) -> Promise   (every word's row: no new sentence needs a file)
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
  // An Error whose `code` says why ("offline", "missing", "corrupt", "memory") and `file` which
  // file, so that a page can say it in its own words without naming files.
  function failure(message, code, file) { var e = new Error(message); e.code = code; if (file) e.file = file; return e; }
  // A page served over the network whose browser says it is offline: the connection is the cause.
  function offline() { return /^https?:$/.test(location.protocol) && navigator.onLine === false; }
  function missing(name) {
    return offline() ? failure("The model file " + name + " could not be loaded: this device is offline.", "offline", name)
      : failure("The model file " + name + " could not be loaded: it is missing or unreadable.", "missing", name);
  }
  function corrupt(name, why) { return failure("The model file " + name + " is corrupt (" + why + ").", "corrupt", name); }

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
      if (!manifest || manifest.format !== "attention-labs-runtime" || manifest.version !== 1 || !architecture(manifest)) {
        throw corrupt(baseName(url), "it is not a model manifest this page can read");
      }
      return { url: url, manifest: manifest };
    });
  }

  // Each architecture's loader registers here: {load(m, options, inner), tokenizer(data)}; a
  // manifest without one is an encoder's (written before decoders came).
  var architectures = runtime.architectures = runtime.architectures || {};
  function architecture(manifest) { return architectures[manifest.architecture || "bert"]; }

  runtime.describe = function (manifestSrc, options) {
    return readManifest(manifestSrc, options && options.signal).then(function (m) {
      var manifest = m.manifest, tokenizer = manifest.tokenizer || manifest.vocab, rest = 0;
      (manifest.shards || []).forEach(function (s) { rest += s.size; });  // an encoder's word shards: loaded as words need them
      return { totalBytes: manifest.load_bytes, restBytes: rest, shardCount: (manifest.shards || []).length, shardRows: manifest.spec.shard_rows, model: manifest.model, config: manifest.spec.config,
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
      return loadScript(absolute(entry.src, m.url), signal).then(architecture(m.manifest).tokenizer);
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

  function allocate(bytes) {
    try { return new ArrayBuffer(bytes); } catch (error) {
      throw failure("There is not enough memory to load the model (" + Math.round(bytes / 1e6) + " MB).", "memory");
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
      return architecture(m.manifest).load(m, options, inner);
    }, function (error) { inner.abort(); throw error; });
  };

  // The bytes so far as text beside a progress bar, so that every reader sees what the bar shows
  // (aria-valuetext alone reaches screen readers only): made once, after the bar.
  function amountBeside(bar) {
    var next = bar.nextElementSibling;
    if (next && next.className === "rt-mb") return next;
    var span = document.createElement("span");
    span.className = "rt-mb";
    bar.parentNode.insertBefore(span, bar.nextSibling);
    return span;
  }
  function megabytes(bytes) { return (bytes / 1e6).toFixed(1); }

  // A lab's "Load the model" button, the same in every lab that offers one: the button gives way
  // to Cancel and a byte progress bar with its MB as text, `ui.status` says what happens; resolves
  // with the model, or with null once the status says why not (cancelled, or the loader's plain
  // message and that `ui.still` — the part of the page that still works — does). A cancel puts
  // the keyboard back on the load button, where it was before.
  runtime.loadShown = function (ui, options) {
    var abort = new AbortController(), amount = amountBeside(ui.bar);
    ui.load.hidden = true; ui.cancel.hidden = false; ui.bar.hidden = false; ui.bar.value = 0;
    amount.hidden = false; amount.textContent = "";
    ui.status.textContent = "Loading the model…";
    ui.cancel.onclick = function () { abort.abort(); };
    return runtime.load(Object.assign({}, options, { signal: abort.signal, onProgress: function (got, total) {
      ui.bar.max = total || 1; ui.bar.value = got;
      amount.textContent = " " + megabytes(got) + " of " + megabytes(total) + " MB";
      ui.bar.setAttribute("aria-valuetext", amount.textContent.trim());
    } })).catch(function (err) {
      // The loader's own messages are whole sentences; offline, the connection is the cause whatever failed.
      var said = navigator.onLine === false ? "The model could not be loaded: this device is offline, so its files could not "
        + "be downloaded; try again when connected." : (err && err.message) || "";
      ui.status.textContent = abort.signal.aborted ? "Cancelled. Nothing more is downloaded."
        : /\.$/.test(said) ? said + " " + ui.still : "The model could not be loaded" + (said ? ": " + said : "") + ". " + ui.still;
      ui.load.hidden = false;
      if (document.activeElement === ui.cancel) ui.load.focus(); // Cancel is about to go
      return null;
    }).finally(function () { ui.cancel.hidden = true; ui.bar.hidden = true; amount.hidden = true; });
  };

  // What static/loader-encoder.js and static/loader-decoder.js build on (and a later architecture
  // would): loading and checking data scripts, Workers, slices of main-thread work.
  runtime.loading = { SLICE_MS: SLICE_MS, PARALLEL: PARALLEL, absolute: absolute, aborted: aborted, nextTask: nextTask,
    loadScript: loadScript, decodeInto: decodeInto, failure: failure, startWorker: startWorker, messenger: messenger, sliced: sliced,
    eachLimited: eachLimited, loadWeights: loadWeights, allocate: allocate, follow: follow };
})(window);
