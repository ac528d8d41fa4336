"""A lab kept by the build as the bytes of its pickle, restored only where its kind works on it.

A build holds every loaded lab in its own process and forks its compute workers from it. A
lab's kind spec is most of its weight (an attention lab's sentences, their words and the head
finder's relations: some 300 KiB of small Python objects, against 50 KiB for the rest of the
lab), and only its kind reads it, when the lab is computed and rendered. Held as objects in the
build's process, every lab would be copied into each worker that merely touches it (a reference
count is a write, and the pages it sits on stop being shared), and the build's own process would
hold every spec. So the build keeps each lab's record (:class:`~generator.model.Lab`: its
titles, prose and quiz, which the site's other pages and its search read) with the whole lab,
spec included, pickled and compressed in place of its spec (:class:`Pickled`: some 90 KB of
pickle, 25 KB compressed, at a fraction of a millisecond each way). Bytes are never written after
they are made: their pages stay shared, and a worker unpickles the lab it
computes, and no other, without touching the record's objects.

The build packs a lab where it is loaded (a pool worker: the lab crosses to the build with its
spec as bytes, which the build never unpickles), and the build cache keeps labs packed. Every
lab a kind's hook is given is unpacked first (:func:`unpacked`, :class:`Unpacking`): a kind
never sees a :class:`Pickled`.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from generator.kinds import Lab, pickled_as_call


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Pickled:
    """A whole lab, its kind spec included, as the bytes of its pickle, compressed."""

    data: bytes


def packed(lab: Lab | None) -> Lab | None:
    """``lab``'s record with the whole lab pickled in place of its spec (None, or a lab packed
    already, as it is)."""
    if lab is None or isinstance(lab.spec, Pickled):
        return lab
    return replace(lab, spec=Pickled(zlib.compress(pickle.dumps(lab, pickle.HIGHEST_PROTOCOL), 1)))


def unpacked(lab: Lab) -> Lab:
    """``lab`` as its kind read it: made anew from its pickle on every call (and dropped with the
    lab's work), so that none of the record's objects is touched; a lab not packed as it is."""
    if not isinstance(lab.spec, Pickled):
        return lab
    return pickle.loads(zlib.decompress(lab.spec.data))


def packed_as(lab: Lab, record: Lab) -> Lab:
    """``lab`` (unpacked from ``record``) packed again from the bytes ``record`` holds: pickling
    it then reads only ``lab``'s own objects."""
    return replace(lab, spec=record.spec)


class Unpacking(Sequence):
    """``labs``, each unpacked as it is reached and not kept: a kind's hook that reads every lab
    of the site (``LabKind.site_files``) holds one spec at a time unless it keeps them itself."""

    def __init__(self, labs: Sequence[Lab]):
        self._labs = labs

    def __len__(self) -> int:
        return len(self._labs)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Unpacking(self._labs[index])
        return unpacked(self._labs[index])

    def __iter__(self) -> Iterator[Lab]:
        return map(unpacked, self._labs)
