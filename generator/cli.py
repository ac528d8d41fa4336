"""The ``labs`` command: parse arguments, call the library, map errors to exit codes.

Exit codes follow Click's convention: 0 success, 1 content or build errors (printed as
``path:line:col: error: message``), 2 usage errors. A traceback reaching an author is a bug.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from generator import __version__
from generator.errors import BuildError, ContentError, SiteError, cap_per_file, display_path
from generator.kinds import all_kinds
from generator.model import Content
from generator.sitefolder import Stopped


def _out(message: str) -> None:
    print(message, flush=True)


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _report(message: str) -> None:
    """A build's progress on stdout; its warnings, like its errors, on stderr (where a CI log or
    ``labs build > log`` keeps what an author must read apart from what went well)."""
    (_err if ": warning: " in message or message.startswith("warning: ") else _out)(message)


def _kind_options(args: argparse.Namespace) -> dict:
    """The values of the options that lab kinds added to build/check/serve, by ``dest``."""
    return {dest: getattr(args, dest) for dest in getattr(args, "kind_options", ())}


def _theme(args: argparse.Namespace) -> Path | None:
    """``--theme DIR``, else ``theme/`` when there is one (it overrides the default theme file by
    file, as MkDocs' ``custom_dir``), else None: the default theme alone."""
    if args.theme is not None:
        return args.theme
    return Path("theme") if Path("theme").is_dir() else None


def cmd_build(args: argparse.Namespace) -> int:
    from generator.build import build, default_cache_dir

    cache_dir = None if args.no_cache else default_cache_dir(args.content)
    result = build(args.content, _theme(args), args.output, base_url=args.base_url, report=_report,
                   options=_kind_options(args), cache_dir=cache_dir)
    n_labs = len(result.content.labs)
    _out(f"built {result.pages} pages, {n_labs} lab{'s' * (n_labs != 1)} in {result.seconds:.2f} s → "
         f"{display_path(args.output)}/")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from generator.build import check

    result = check(args.content, _theme(args), report=_report, options=_kind_options(args))
    n_labs = len(result.content.labs)
    _out(f"ok: {n_labs} lab{'s' * (n_labs != 1)}, {result.pages} pages checked in {result.seconds:.2f} s — no errors")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    from generator.build import default_cache_dir
    from generator.speed.buildcache import clean

    folder = default_cache_dir(args.content)
    try:
        removed = clean(folder)
    except ValueError:
        raise BuildError("not a build cache of labs (no CACHEDIR.TAG of ours in it); not removing it",
                         display_path(folder)) from None
    _out(f"removed the build cache {display_path(folder)}/" if removed else f"no build cache at {display_path(folder)}/")
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    from generator.content import SLUG_RE
    from generator.scaffold import new_lab

    if not SLUG_RE.match(args.slug):  # a mistake in the command line, not in the content: a usage error
        args.usage_error(f"argument SLUG: lab slug {args.slug!r} must be lower-case letters, digits and dashes, "
                         f"e.g. 'self-attention'")
    folder = new_lab(args.content, args.slug, title=args.title, topic=args.topic, kind=args.kind)
    _out(f"created {display_path(folder)}/ — edit its files, then run `labs build`")
    _out(_where_it_appears(args.content, args.slug))
    return 0


def _where_it_appears(content: Path, slug: str) -> str:
    """Where a new lab comes in the site's order (index page, previous/next links)."""
    from generator.content import load_site, written_number

    try:
        source = load_site(content)
    except SiteError:
        return "it appears once content/site.yaml reads without mistakes"
    order = list(source.order)
    if slug not in order:
        return "it does not appear until its folder name is lower-case letters, digits and dashes"
    i = order.index(slug)
    place = f"after {order[i - 1]!r}" if i > 0 else "first"
    how = ("by number, after the labs site.yaml lists (add it to site.yaml's labs: to place it yourself)"
           if source.site.lab_order else "by number (list labs in site.yaml's labs: to order them yourself)")
    return f"as lab {written_number(content / 'labs' / slug):02d} it appears {place}, {i + 1} of {len(order)}: " \
           f"unlisted labs come {how}"


def cmd_init(args: argparse.Namespace) -> int:
    from generator.scaffold import PAGES_WORKFLOW_PATH, init_site

    made = init_site(args.directory, title=args.title, pages_install=args.github_pages)
    _out(f"created a site in {display_path(args.directory)}/ with {len(made)} example lab"
         f"{'s' * (len(made) != 1)} ({', '.join(made)}). Next: cd {display_path(args.directory)} && labs build")
    if args.github_pages is not None:
        _out(f"{display_path(args.directory / PAGES_WORKFLOW_PATH)} builds the site and publishes it to GitHub Pages on "
             "every push to main: set the repository's Pages source to \"GitHub Actions\"")
    _out("For a real model in the pages (the attention lab's `bundle:`, the embeddings lab's `runtime:`): "
         "`labs models fetch all-minilm-l6-v2` downloads it with pip (83.5 MB) and writes its page bundle into "
         "content/models/all-minilm-l6-v2/ (24.9 MB)")
    return 0


def cmd_kinds(args: argparse.Namespace) -> int:
    for kind in all_kinds():
        _out(f"{kind.name:<12} {kind.description}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from generator.build import default_cache_dir
    from generator.export.run import export

    written = export(args.format, args.content, _theme(args), args.output or Path("exports") / args.format,
                     base_url=args.base_url, report=_out, options=_kind_options(args),
                     cache_dir=default_cache_dir(args.content))
    _out(f"exported {len(written)} {args.format.upper()} package{'s' * (len(written) != 1)}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from generator.serve.server import serve
    # serve() returns only once stopped (Ctrl-C, SIGTERM): run() then leaves at once, as after a build's stop
    raise Stopped(serve(content=args.content, theme=_theme(args), output=args.output, host=args.host, port=args.port,
                        open_browser=args.open, report=_out, warn=_err, options=_kind_options(args)))


def _base_url(value: str) -> str:
    """``--base-url`` must be absolute, as ``base_url`` in site.yaml must; anything else is a usage error."""
    from generator.content import valid_base_url

    if not valid_base_url(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not an absolute http(s) URL such as https://example.org/labs/")
    return value


def _port(value: str) -> int:
    """A TCP port, 0–65535 (0: any free one); anything else is a usage error."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: use 1-65535, or 0 for any free port")
    return port


class _NotingGroup:
    """An argument group that notes the ``dest`` of every option added to it, directly or through a
    mutually exclusive group of it: the options the kinds add, handed back to them in ``options``."""

    def __init__(self, group, dests: list[str] | None = None):
        self._group = group
        self.dests = dests if dests is not None else []

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        action = self._group.add_argument(*args, **kwargs)
        self.dests.append(action.dest)
        return action

    def add_mutually_exclusive_group(self, **kwargs) -> "_NotingGroup":
        return _NotingGroup(self._group.add_mutually_exclusive_group(**kwargs), self.dests)

    def __getattr__(self, name: str):
        return getattr(self._group, name)


class _AddedParsers:
    """The subparsers as a kind sees them in ``add_commands``, noting each parser it adds."""

    def __init__(self, subparsers):
        self._subparsers = subparsers
        self.parsers: list[argparse.ArgumentParser] = []

    def add_parser(self, *args, **kwargs) -> argparse.ArgumentParser:
        self.parsers.append(self._subparsers.add_parser(*args, **kwargs))
        return self.parsers[-1]

    def __getattr__(self, name: str):
        return getattr(self._subparsers, name)


def _with_loader(func: Callable[[argparse.Namespace, Callable[[Path], Content]], int],
                 ) -> Callable[[argparse.Namespace], int]:
    """A kind's command as the other commands are called, ``func(args)``: it gets the content
    loader of a build (every lab loaded and validated, or one ContentError with every mistake)."""
    def run(args: argparse.Namespace) -> int:
        from generator.content import load_content

        return func(args, load_content)
    return run


def _model_uses(folder: Path) -> tuple[list[tuple[str, Path, tuple]], list[tuple[str, tuple]]]:
    """What the shared models' commands (``labs models fetch``, ``labs decode``) ask of a site: every
    lab as far as it loads, with the models its kind says it uses (``LabKind.models``):
    ``[(slug, lab folder, (ModelUse, …))]``, and ``[(slug, problems)]`` for the labs that did not
    load far enough to say. A lab whose stored results are missing has mistakes but loads far
    enough: that is what ``labs decode`` is for. Raises ContentError when there is no usable site."""
    from generator.content import load_lab, load_site
    from generator.kinds import get_kind

    source = load_site(folder)
    found, unread = [], []
    for slug in source.order:
        lab, problems, _ = load_lab(source, slug, partial=True)
        if lab is None:
            unread.append((slug, problems))
        else:
            found.append((slug, lab.source_dir, tuple(get_kind(lab.kind).models(lab))))
    return found, unread


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labs",
        description="Build interactive machine-learning labs from plain-text content into a static site.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    kinds = all_kinds()

    def content_opt(sp):
        sp.add_argument("--content", type=Path, default=Path("content"), metavar="DIR",
                        help="content folder (default: content/)")

    def theme_opt(sp):
        sp.add_argument("--theme", type=Path, default=None, metavar="DIR",
                        help="a theme folder (templates/, static/, kinds/) whose files override the default "
                             "theme's, file by file (default: theme/ if there is one)")

    def kind_opts(sp):
        group = _NotingGroup(sp.add_argument_group("options of lab kinds"))
        for kind in kinds:
            kind.add_build_arguments(group)  # type: ignore[arg-type]
        sp.set_defaults(kind_options=tuple(group.dests))

    b = sub.add_parser("build", help="build the site", description="Build the site into a folder, atomically: "
                       "a failed build leaves the previous output untouched.")
    content_opt(b)
    theme_opt(b)
    b.add_argument("--output", type=Path, default=Path("site"), metavar="DIR", help="output folder (default: site/)")
    b.add_argument("--base-url", metavar="URL", default=None, type=_base_url,
                   help="absolute URL the site will live at, for canonical links and the sitemap "
                        "(default: base_url in site.yaml)")
    b.add_argument("--no-cache", action="store_true",
                   help="build every lab afresh, without reading or writing the build cache "
                        "(.labs-cache/ beside the content folder)")
    kind_opts(b)
    b.set_defaults(func=cmd_build)

    cl = sub.add_parser("clean", help="remove the build cache",
                        description="Remove the build cache (.labs-cache/ beside the content folder). "
                                    "Touches nothing else.")
    content_opt(cl)
    cl.set_defaults(func=cmd_clean)

    c = sub.add_parser("check", help="validate content without writing anything",
                       description="Validate everything a build would: content, computed claims, quiz answer keys, "
                                   "internal links and anchors. Writes nothing.")
    content_opt(c)
    theme_opt(c)
    kind_opts(c)
    c.set_defaults(func=cmd_check)

    i = sub.add_parser("init", help="start a new site in a folder",
                       description="Create DIR/ with content/site.yaml, one topic and one example lab of each "
                                   "built-in lab kind, ready for `labs build`. Never overwrites.")
    i.add_argument("directory", type=Path, metavar="DIR", help="the new site's folder (new, or empty)")
    i.add_argument("--title", metavar="TEXT", default=None, help="the site's title (default: from the folder name)")
    i.add_argument("--github-pages", metavar="REQUIREMENT", default=None,
                   help="also write .github/workflows/pages.yml, which installs the generator with `pip install "
                        "REQUIREMENT` (e.g. 'attention-labs @ git+https://github.com/OWNER/attention-labs@COMMIT'), "
                        "fetches the models the labs name, builds and publishes to GitHub Pages")
    i.set_defaults(func=cmd_init)

    n = sub.add_parser("new", help="scaffold a new lab", description="Create content/labs/SLUG/ with every file a "
                       "lab needs, valid and building out of the box. Never overwrites.")
    n.add_argument("slug", metavar="SLUG", help="folder name: lower-case letters, digits and dashes")
    n.add_argument("--kind", metavar="KIND", default=None, choices=[k.name for k in kinds],
                   help="the lab's kind: " + ", ".join(k.name for k in kinds)
                        + (" (default: attention)" if any(k.name == "attention" for k in kinds) else ""))
    n.add_argument("--title", metavar="TEXT", default=None, help="the lab's title (default: from the slug)")
    n.add_argument("--topic", metavar="SLUG", default=None, help="topic slug (default: the first topic in site.yaml)")
    content_opt(n)
    n.set_defaults(func=cmd_new, usage_error=n.error)

    e = sub.add_parser("export", help="write each lab as a package for a learning management system",
                       description="Build the site in memory (everything labs check checks), then write one package "
                                   "per lab: qti, its quiz as an IMS QTI 2.1 package (Moodle, Canvas); scorm, its page "
                                   "as a SCORM 1.2 package of one SCO that reports the quiz's score and status.")
    e.add_argument("format", choices=("qti", "scorm"), help="qti or scorm")
    content_opt(e)
    theme_opt(e)
    e.add_argument("--output", type=Path, default=None, metavar="DIR",
                   help="where the packages go, one <slug>.zip per lab (default: exports/qti/ or exports/scorm/)")
    e.add_argument("--base-url", metavar="URL", default=None, type=_base_url,
                   help="the published site, where links out of a package lead (default: base_url in site.yaml)")
    kind_opts(e)
    e.set_defaults(func=cmd_export)

    k = sub.add_parser("kinds", help="list the installed lab kinds",
                       description="List the lab kinds found through the attention_labs.kinds entry points.")
    k.set_defaults(func=cmd_kinds)

    s = sub.add_parser("serve", help="build, serve on localhost, rebuild and reload on change",
                       description="Build the site, serve it, watch content/ and theme/, rebuild on every change "
                                   "and reload open pages. Ctrl-C stops it.")
    content_opt(s)
    theme_opt(s)
    s.add_argument("--output", type=Path, default=Path("site"), metavar="DIR", help="output folder (default: site/)")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    s.add_argument("--port", type=_port, default=8000, help="port (default: 8000; 0 picks a free one)")
    s.add_argument("--open", action="store_true", help="open the site in a web browser")
    kind_opts(s)
    s.set_defaults(func=cmd_serve)

    from generator.runtime.commands import add_commands as add_model_commands

    add_model_commands(sub, _model_uses)  # labs models, labs decode, labs next: the models kinds share
    for kind in kinds:
        added = _AddedParsers(sub)
        kind.add_commands(added)
        for command in added.parsers:  # a kind's command gets the host's loader (LabKind.add_commands)
            if command.get_default("func") is not None:
                command.set_defaults(func=_with_loader(command.get_default("func")))
    return p


def run() -> None:
    """``labs`` and ``python -m generator``: :func:`main`. Stopped by Ctrl-C or SIGTERM, it leaves at once
    once its cleanup is done: the interpreter's teardown (a loaded site freed object by object) can
    take seconds of a loaded machine's CPU, which a stop within 2 s does not have."""
    try:
        code, stopped = main(), False
    except Stopped as exc:
        code, stopped = exc.code, True
    if code != 130 and not stopped:  # 130: main's KeyboardInterrupt
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("LABS_STACKS_ON_SIGUSR1"):  # tests: where a build is when it will not stop
        import faulthandler

        faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        args = parser().parse_args(argv)  # exits 2 on usage errors
    except SiteError as exc:  # a lab kind that cannot be loaded
        _err(str(exc))
        return 1
    try:
        return args.func(args)
    except ContentError as exc:
        for d in cap_per_file(exc.diagnostics):  # at most 20 a file, then "… and N more"
            _err(str(d))
        n = len(exc.diagnostics)
        _err(f"{n} error{'s' * (n != 1)}; nothing was written")
        return 1
    except SiteError as exc:
        _err(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `labs attention … | head`: the reader stopped early; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 1
