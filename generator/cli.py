"""The ``labs`` command: parse arguments, call the library, map errors to exit codes.

Exit codes follow Click's convention: 0 success, 1 content or build errors (printed as
``path:line:col: error: message``), 2 usage errors. A traceback reaching an author is a bug.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from generator import __version__
from generator.errors import ContentError, SiteError, display_path


def _out(message: str) -> None:
    print(message, flush=True)


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_build(args: argparse.Namespace) -> int:
    from generator.build import build

    result = build(args.content, args.theme, args.output, base_url=args.base_url, report=_out, model_dir=args.model)
    n_labs = len(result.content.labs)
    _out(f"built {result.pages} pages, {n_labs} lab{'s' * (n_labs != 1)} in {result.seconds:.2f} s → "
         f"{display_path(args.output)}/")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from generator.build import check

    result = check(args.content, args.theme, report=_out, model_dir=args.model)
    n_labs = len(result.content.labs)
    _out(f"ok: {n_labs} lab{'s' * (n_labs != 1)}, {result.pages} pages checked in {result.seconds:.2f} s — no errors")
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    from generator.scaffold import new_lab

    folder = new_lab(args.content, args.slug, title=args.title, topic=args.topic)
    _out(f"created {display_path(folder)}/ — edit its files, then run `labs build`")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from generator.serve import serve

    return serve(content=args.content, theme=args.theme, output=args.output, host=args.host, port=args.port,
                 open_browser=args.open, report=_out, warn=_err, model_dir=args.model)


def cmd_attention(args: argparse.Namespace) -> int:
    from generator.attention.realheads import inspect_attention

    _out(inspect_attention(args.model, args.sentence, layer=args.layer, head=args.head, as_json=args.json))
    return 0


def _base_url(value: str) -> str:
    """``--base-url`` must be absolute, as ``base_url`` in site.yaml must; anything else is a usage error."""
    if not re.match(r"^https?://[^\s/]+(/\S*)?$", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not an absolute http(s) URL such as https://example.org/labs/")
    return value


def cmd_heads(args: argparse.Namespace) -> int:
    from generator.content import load_content
    from generator.realmodel import model_sentences, refresh

    content = load_content(args.content)
    labs = [lab for lab in content.labs if lab.model is not None and (not args.lab or lab.slug in args.lab)]
    if not labs:
        _out("no lab has a 'model:' section; nothing to do")
    for lab in labs:
        computed, path = refresh(lab.model, lab.widget, args.model)
        total = len(model_sentences(lab.widget))
        _out(f"{display_path(path)}: {len(computed)} of {total} sentence{'s' * (total != 1)} computed, "
             f"the rest already cached")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labs",
        description="Build interactive machine-learning labs from plain-text content into a static site.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def content_opt(sp):
        sp.add_argument("--content", type=Path, default=Path("content"), metavar="DIR",
                        help="content folder (default: content/)")

    def model_opt(sp, required=False):
        sp.add_argument("--model", type=Path, default=None, metavar="DIR", required=required,
                        help="local BERT-family checkpoint folder for labs with real model heads "
                             "(default: the lab's model.checkpoint, else its committed cache)")

    def theme_opt(sp):
        sp.add_argument("--theme", type=Path, default=Path("theme"), metavar="DIR",
                        help="theme folder with templates/ and static/ (default: theme/)")

    b = sub.add_parser("build", help="build the site", description="Build the site into a folder, atomically: "
                       "a failed build leaves the previous output untouched.")
    content_opt(b)
    theme_opt(b)
    b.add_argument("--output", type=Path, default=Path("site"), metavar="DIR", help="output folder (default: site/)")
    b.add_argument("--base-url", metavar="URL", default=None, type=_base_url,
                   help="absolute URL the site will live at, for canonical links and the sitemap "
                        "(default: base_url in site.yaml)")
    model_opt(b)
    b.set_defaults(func=cmd_build)

    c = sub.add_parser("check", help="validate content without writing anything",
                       description="Validate everything a build would: content, computed claims, quiz answer keys, "
                                   "internal links and anchors. Writes nothing.")
    content_opt(c)
    theme_opt(c)
    model_opt(c)
    c.set_defaults(func=cmd_check)

    n = sub.add_parser("new", help="scaffold a new lab", description="Create content/labs/SLUG/ with every file a "
                       "lab needs, valid and building out of the box. Never overwrites.")
    n.add_argument("slug", metavar="SLUG", help="folder name: lower-case letters, digits and dashes")
    n.add_argument("--title", metavar="TEXT", default=None, help="the lab's title (default: from the slug)")
    n.add_argument("--topic", metavar="SLUG", default=None, help="topic slug (default: the first topic in site.yaml)")
    content_opt(n)
    n.set_defaults(func=cmd_new)

    s = sub.add_parser("serve", help="build, serve on localhost, rebuild and reload on change",
                       description="Build the site, serve it, watch content/ and theme/, rebuild on every change "
                                   "and reload open pages. Ctrl-C stops it.")
    content_opt(s)
    theme_opt(s)
    s.add_argument("--output", type=Path, default=Path("site"), metavar="DIR", help="output folder (default: site/)")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    s.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 picks a free one)")
    s.add_argument("--open", action="store_true", help="open the site in a web browser")
    model_opt(s)
    s.set_defaults(func=cmd_serve)

    h = sub.add_parser("heads", help="compute real model heads into each lab's cache file",
                       description="Run the checkpoint over every sentence of each lab with a 'model:' section and "
                                   "store the attention in the lab's cache file, so builds need no checkpoint. "
                                   "This is the one command that writes into content/.")
    content_opt(h)
    model_opt(h)
    h.add_argument("--lab", action="append", metavar="SLUG", help="only this lab (repeatable)")
    h.set_defaults(func=cmd_heads)

    a = sub.add_parser("attention", help="print a pretrained model's attention for a sentence",
                       description="Run a BERT-family checkpoint from a local folder (config.json, model.safetensors, "
                                   "vocab.txt) through our NumPy forward pass and print its attention.")
    a.add_argument("sentence", metavar="SENTENCE")
    a.add_argument("--model", type=Path, required=True, metavar="DIR", help="local checkpoint folder")
    a.add_argument("--layer", type=int, default=None, metavar="L", help="layer, counted from 0")
    a.add_argument("--head", type=int, default=None, metavar="H", help="head, counted from 0")
    a.add_argument("--json", action="store_true", help='print {"tokens": [...], "attentions": [layers][heads][n][n]}')
    a.set_defaults(func=cmd_attention)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)  # exits 2 on usage errors
    try:
        return args.func(args)
    except ContentError as exc:
        for d in exc.diagnostics:
            _err(str(d))
        n = len(exc.diagnostics)
        _err(f"{n} error{'s' * (n != 1)}; nothing was written")
        return 1
    except SiteError as exc:
        _err(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
