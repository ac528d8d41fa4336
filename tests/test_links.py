"""The link stage: one checker for ``labs build`` and ``labs serve``; a checker kept across
rebuilds finds exactly what a new one finds."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from generator.links import LinkChecker, check_links, collect, page_links, partial_link_problems


def _content(tmp_path):
    return SimpleNamespace(root=tmp_path / "content")  # only where problems are placed is read of it


def _page(ids: list[str], hrefs: list[str]) -> bytes:
    body = "".join(f'<h2 id="{i}">x</h2>' for i in ids) + "".join(f'<a href="{h}">y</a>' for h in hrefs)
    return f"<html><body>{body}</body></html>".encode()


def test_page_links_are_the_ids_in_order_and_the_unescaped_hrefs():
    html = '<p id="a"></p><p data-id="no"></p><p\nid="a"></p><a class="x" href="b.html#c&amp;d">t</a>'
    assert page_links(html) == (["a", "a"], ["b.html#c&d"])


def test_collect_reads_only_the_pages_it_was_not_given():
    files = {"a.html": _page(["x"], []), "b.html": _page(["y"], []), "s.css": b"a{}"}
    known = {"a.html": (["given"], [])}
    assert collect(files, known) == {"a.html": (["given"], []), "b.html": (["y"], [])}


def test_problems_of_a_site(tmp_path):
    files = {"index.html": _page(["top", "top"], ["labs/a/#intro", "labs/a/#gone", "nowhere.html", "https://x.org/"]),
             "labs/a/index.html": _page(["intro"], ["../../#top", "#s=cat&q=1"]),
             "404.html": _page(["x", "x"], ["/anything"])}
    problems = check_links(collect(files), files, _content(tmp_path))
    assert sorted(d.message for d in problems) == [
        "id 'top' is used twice on index.html; links to #top would land on the first",
        "link to a missing anchor: labs/a/#gone",
        "link to a page that does not exist: nowhere.html",
    ]


def test_links_into_a_lab_that_did_not_load_are_taken_as_good_and_its_own_links_are_checked(tmp_path):
    files = {"index.html": _page(["top"], ["labs/broken/#anything"])}
    problems = partial_link_problems(collect(files), files, _content(tmp_path),
                                     {"broken": ["../../#top", "../../#nothing"]})
    assert [d.message for d in problems] == ["link to a missing anchor: ../../#nothing"]


@pytest.mark.parametrize("seed", range(20))
def test_a_checker_kept_across_rebuilds_finds_what_a_new_one_finds(tmp_path, seed):
    """Random edits of a small site — ids added and removed, links added and removed, pages added
    and removed — checked after each by one kept checker and by a new one."""
    rng = random.Random(seed)
    names = ["index.html", "404.html"] + [f"labs/l{i}/index.html" for i in range(5)]
    ids = ["a", "b", "c"]

    def random_page():
        hrefs = [rng.choice(["../../", "../l1/", "../l9/", "#", ""]) + (rng.choice(["", "#" + rng.choice(ids)]))
                 for _ in range(rng.randrange(4))]
        return (rng.sample(ids + ids, rng.randrange(3)), [h for h in hrefs if h])

    site = {name: random_page() for name in names[:4]}
    kept, content = LinkChecker(), _content(tmp_path)
    for _ in range(30):
        name = rng.choice(names)
        if name in site and rng.random() < 0.2 and name != "index.html":
            del site[name]
        else:
            site[name] = random_page()
        files = set(site) | {"assets/site.css"}
        expected = sorted(map(str, LinkChecker().check(dict(site), files, content)))
        assert sorted(map(str, kept.check(dict(site), files, content))) == expected
