/* An encoder's model (BERT: static/forward.js, its tokenizer static/wordpiece.js) over the
 * loading static/loader.js shares: every layer chunk at load, the token embeddings' shards as the
 * ids need them, model.run(ids) in a Worker or on the main thread in slices.
 */
(function (root) {
  "use strict";

  var runtime = root.Labs.runtime;
  var L = runtime.loading;
  var absolute = L.absolute, aborted = L.aborted, nextTask = L.nextTask, loadScript = L.loadScript,
    decodeInto = L.decodeInto, startWorker = L.startWorker, messenger = L.messenger, sliced = L.sliced,
    eachLimited = L.eachLimited, loadWeights = L.loadWeights, allocate = L.allocate, follow = L.follow, PARALLEL = L.PARALLEL;

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

  runtime.architectures.bert = { load: loadEncoder, tokenizer: function (data) { return runtime.WordPiece(data); } };
})(window);
