"""generator.speed.packed: the build holds every lab packed (its spec only as bytes, never as
objects), and a kind's hook gets each lab unpacked, the lab it works on and no other."""

from __future__ import annotations

from dataclasses import replace

import pytest

import generator.build
from generator.build import _lab_keys, build_files
from generator.content import load_site
from generator.kinds import get_kind
from generator.pipeline import load_lab
from generator.speed.buildcache import BuildCache
from generator.speed.packed import Pickled, Unpacking, packed, unpacked


def test_a_packed_lab_is_its_record_with_the_whole_lab_as_bytes(project):
    source = load_site(project / "content")
    for slug in source.order:
        lab = load_lab(source, slug).lab
        kept = packed(lab)
        assert isinstance(kept.spec, Pickled) and isinstance(kept.spec.data, bytes)
        assert replace(kept, spec=None) == replace(lab, spec=None)  # the record: every other field as loaded
        assert unpacked(kept) == lab and unpacked(kept) is not unpacked(kept)  # made anew each time, never kept
        assert packed(kept) is kept and unpacked(lab) is lab
        assert [x.slug for x in Unpacking([kept, kept])] == [slug, slug]
        assert all(not isinstance(x.spec, Pickled) for x in (*Unpacking([kept]), Unpacking([kept])[0]))


def _spy_on_kinds(monkeypatch, names, events: list) -> None:
    """Each kind of ``names`` records the lab it computes and the labs its site_files reads, and
    checks, as it computes, that it has its lab unpacked while the build's copies all stay packed."""
    for name in names:
        kind = get_kind(name)

        def compute(lab, options, kind=kind, original=kind.compute):
            assert not isinstance(lab.spec, Pickled), "a kind is given its lab unpacked"
            held = generator.build._LAB_STATE["content"].labs
            assert all(isinstance(other.spec, Pickled) for other in held), "the build's labs stay packed"
            events.append(("compute", lab.slug))
            return original(lab, options)

        def site_files(labs, options, store, original=kind.site_files):
            assert isinstance(labs, Unpacking)
            for lab in labs:
                assert not isinstance(lab.spec, Pickled)
                events.append(("site files", lab.slug))
            return original(labs, options, store)

        monkeypatch.setattr(kind, "compute", compute)
        monkeypatch.setattr(kind, "site_files", site_files)


@pytest.mark.project("shipped")
def test_the_build_holds_every_lab_packed_and_unpacks_each_only_to_compute_it(project, monkeypatch):
    """Every kind of the shipped course: the build's content keeps each lab's spec as bytes; a lab
    is unpacked once to be computed and rendered, right before it is (no other lab is unpacked
    then), and once for the kinds' site files, which are asked for once a build."""
    source = load_site(project / "content")
    kinds = {load_lab(source, slug).lab.kind for slug in source.order}
    events: list[tuple[str, str]] = []
    _spy_on_kinds(monkeypatch, kinds, events)
    unpack = generator.build.unpacked
    monkeypatch.setattr(generator.build, "unpacked", lambda lab: events.append(("unpack", lab.slug)) or unpack(lab))
    files, content = build_files(project / "content")
    assert [lab.slug for lab in content.labs] == list(source.order) and len(kinds) > 1
    assert all(isinstance(lab.spec, Pickled) for lab in content.labs)
    assert all(unpacked(lab) == load_lab(source, lab.slug).lab for lab in content.labs)
    by_kind = sorted(content.labs, key=lambda lab: lab.kind)
    assert events == ([("site files", lab.slug) for lab in by_kind]
                      + [e for lab in content.labs for e in (("unpack", lab.slug), ("compute", lab.slug))])
    assert any(path.startswith("labs/") for path in files)


def test_the_build_cache_keeps_labs_packed_and_a_warm_build_gives_the_same_site(project, tmp_path):
    content, theme = project / "content", project / "theme"
    cache = BuildCache(tmp_path / "cache")
    cold, _ = build_files(content, theme, cache=cache)
    keys = _lab_keys(load_site(content), theme, None, None)
    entries = [cache.get(key) for key in keys.values()]
    assert entries and all(entry is not None and isinstance(entry.lab.spec, Pickled) for entry in entries)
    warm, warm_content = build_files(content, theme, cache=cache)
    assert warm == cold and all(isinstance(lab.spec, Pickled) for lab in warm_content.labs)
