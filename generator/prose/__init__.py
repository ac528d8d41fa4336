"""Prose: authors' Markdown into safe HTML for a page.

``markdown_render.py`` (Markdown → HTML: the limits on what a text may ask of the build,
Pygments highlighting, MathML, nh3 sanitising, the plain text a search reads),
``markdown_fast.py`` (plain Markdown written without Python-Markdown, the same bytes faster),
``mathml.py`` (TeX → MathML at build time), ``highlight.py`` (fenced code into CSS classes),
``sanitise.py`` (the allow-lists of HTML and MathML) and ``slug.py`` (the one slugify, for
heading ids, section ids and FAQ ids alike).

A module here imports the standard library, its Markdown, TeX, highlighting and sanitising
libraries and other modules of this package, and nothing else of the generator: prose knows
neither the content model nor lab kinds; the loader (:mod:`generator.content`) hands it a text and
a function that resolves ``lab:``/``topic:`` links.
"""
