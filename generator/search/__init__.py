"""Site search: an index of every lab and topic page, built at build time with lunr.py and
searched in the page by lunr.js, as MkDocs does (docs/search.md says why this library).

``index.py`` turns the content model into search documents — a lab's title, its gist, each prose
section, card, FAQ entry and quiz question, each topic page, every one pointing at its own
anchor — builds their lunr index with the tokenizer, trimmer, stop words and stemmer that lunr.js
uses, and writes it in a compact form the page expands back into lunr's own serialised index
(``Labs.code.searchIndex``; the tests hold the expansion to lunr.js's own builder, field for
field). ``vendor/`` holds lunr.js 2.3.9's minified file as npm ships it and its MIT licence.

The files a site gets (:func:`~generator.search.index.search_files`): ``assets/search-index.js``
(the index, under a fixed name so that no page changes when another lab's text does), one text
file per page under ``assets/search/`` (the sections' text, for the snippets of the results shown)
and ``assets/lunr.<hash>.js``. All are classic scripts: a page adds them with ``<script src>``
when its search box is first focused, which works from ``file://`` and under the site's CSP.

A module here imports the content model (:mod:`generator.model`), the plain text of prose
(:mod:`generator.prose`), :mod:`generator.webfiles` and lunr; nothing else of the generator,
and no lab kind: every kind's labs are indexed through the same content model.
"""
