"""Sphinx configuration of the mprr documentation (``make docs``; warnings are errors).

The user guide is the repository's Markdown (README and docs/*.md, read by MyST); the API
reference is generated from the numpy-style docstrings (autodoc + napoleon + autosummary).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import mprr  # noqa: E402

project = "mprr"
author = "the mprr authors"
copyright = "2026, the mprr authors (MIT licence; the shipped UCI Adult data: CC BY 4.0)"  # noqa: A001  (Sphinx's name)
release = version = mprr.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]

autosummary_generate = True
autosummary_imported_members = False
# document each object once, in the module that defines it (ignore re-exports listed in __all__)
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autosummary_ignore_module_all = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autoclass_content = "class"

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True  # "Attributes" sections as fields: no second entry beside a property

myst_heading_anchors = 3
# ambiguous short names (an attribute `bytes` and the builtin) resolve to the first target: not an error
suppress_warnings = ["myst.xref_missing", "myst.header", "ref.python"]

html_theme = "alabaster"
html_title = f"mprr {release}"
html_static_path = ["_static"]
html_css_files = ["mprr.css"]  # code blocks wrap; wide tables scroll


# --------------------------------------------------------------------------- CLI reference
# The full help of each `mprr` command, written from the parser at every build into _generated/
# (read by guide/cli.md), so the reference cannot fall behind the options.

def _write_cli_help() -> None:
    import contextlib
    import io
    import os

    from scenarios.cli import build_parser

    out = Path(__file__).resolve().parent / "_generated"
    out.mkdir(exist_ok=True)
    os.environ["COLUMNS"] = "100"  # argparse wraps at the terminal width: fix it
    for name, argv in (("mprr", []), ("mprr-run", ["run"]), ("mprr-list", ["list"]), ("mprr-show", ["show"]),
                       ("mprr-party", ["party"])):
        text = io.StringIO()
        with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
            build_parser().parse_args([*argv, "--help"])
        (out / f"{name}.txt").write_text(text.getvalue(), encoding="utf-8")


_write_cli_help()


# --------------------------------------------------------------------------- docstring text
# The docstrings write mathematics in plain text (|A|, |x − y|, P[u, v]); in reStructuredText a
# pair of bars is a substitution reference.  Escape every bar outside ``literals`` on lines
# that are not table rows, so the text reads as written.

import re  # noqa: E402

_LITERAL = re.compile(r"(``.*?``)")


def _escape_bars(line: str) -> str:
    stripped = line.lstrip()
    if stripped.startswith(("|", "+-", "+=")):  # grid-table rows and line blocks stay as they are
        return line
    parts = _LITERAL.split(line)
    return "".join(p if p.startswith("``") else p.replace("\\|", "|").replace("|", "\\|") for p in parts)


def _process_docstring(app, what, name, obj, options, lines):  # type: ignore[no-untyped-def]
    lines[:] = [_escape_bars(line) for line in lines]


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("autodoc-process-docstring", _process_docstring)
