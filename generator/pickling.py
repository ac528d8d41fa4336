"""Pickling the content model's small records quickly.

A lab crosses between processes whole: a pool worker loads it and sends it to the build, and the
build cache stores it. It is made of a few hundred frozen, slotted dataclass instances (its
sentences' words, the finder's relations, quiz options…). The pickling that :mod:`dataclasses`
gives a slotted class asks :func:`dataclasses.fields` for every instance it saves and again for
every one it restores, more work than the rest of the lab's pickle. :func:`pickled_as_call`
pickles an instance as the call that makes it, ``cls(*values)``, its values read by one
:func:`operator.attrgetter`. What it saves of a build: ``docs/benchmarks.md``, "Stand-ins for a
library".
"""

from __future__ import annotations

import dataclasses
import operator


def pickled_as_call(cls: type) -> type:
    """Class decorator: pickle instances of ``cls`` (a dataclass whose fields are all arguments of
    its ``__init__``, which neither checks nor changes them) as ``cls(*field values)``. A subclass
    with fields of its own needs the decorator too (undecorated, its instances fail to unpickle:
    the call gets the wrong number of values, never a wrong object)."""
    assert dataclasses.is_dataclass(cls), f"{cls.__name__} is not a dataclass"
    fields = dataclasses.fields(cls)
    assert all(f.init for f in fields) and not hasattr(cls, "__post_init__"), (
        f"{cls.__name__}: its __init__ must take every field as it is")
    names = [f.name for f in fields]
    if len(names) == 1:  # attrgetter of one name gives the value, not a 1-tuple
        one = operator.attrgetter(names[0])

        def get(obj):
            return (one(obj),)
    else:
        get = operator.attrgetter(*names)

    def __reduce__(self):
        return type(self), get(self)

    cls.__reduce__ = __reduce__
    return cls
