"""What makes a build fast without changing a byte of what it writes.

``workers.py`` (the process pool over labs: forked after loading, dies with its parent, collects
each lab's garbage), ``packed.py`` (a lab kept as its record and the bytes of its whole pickle, so
that the build's process holds no spec as objects and a worker unpickles only the lab it
computes) and ``buildcache.py`` (the persistent build cache, ``.labs-cache/``: each lab's loaded
content, packed, and page files, keyed by a hash of every input; a corrupt entry is built again).
``labs build`` uses all three; ``labs serve`` uses the pool for its first build and the cache's
file digests for what changed.

A module here may import the build's lower stages (content, errors, the file policy) and the
kind registry (to hash every kind's files into the cache key), never the renderer or a driver
(:mod:`generator.build`, :mod:`generator.serve`): the drivers call these, not the other way
round. The quick pickling of the content model's records (:mod:`generator.pickling`) is not
here: the lowest modules (errors, the content model) use it, so it stands beside them.
"""
