"""``labs serve``, the authoring loop: build, serve on localhost, rebuild on change, reload.

``server.py`` (the threads, the first build, a rebuild per burst of changes, errors shown),
``incremental.py`` (the SiteBuilder: the pipeline's stages again, redoing only what changed),
``httpd.py`` (the site served from memory, its security headers, the reload events),
``reload.js`` (the live-reload client injected into served pages, and the error overlay),
``limits.py`` (request and event-stream slots, the whole-request deadline), ``watch.py`` (file
events → debounced batches), ``mirror.py`` (the latest good site written to ``--output``) and
``statichost.py`` (a built site served as a static host serves it, for tests and benchmarks).

A module here may import the build's stages (:mod:`generator.pipeline`, :mod:`generator.links`,
:mod:`generator.render`, :mod:`generator.content` …), the worker pool (:mod:`generator.speed.workers`)
and the build cache's digests (:mod:`generator.speed.buildcache`), never :mod:`generator.build`
(``labs serve`` builds through the pipeline, not through ``labs build``), nor a lab kind by name.
"""
