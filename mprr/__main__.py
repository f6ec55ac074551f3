"""``python -m mprr`` — the ``mprr`` command line.

The one exception to the one-way import rule (``scenarios`` → ``parties`` → ``mprr``): an
entry point has to live in the package it is named after, and the command line lives in
:mod:`scenarios.cli` (it reads files and writes reports, which ``mprr`` never does).  The
import is done lazily inside :func:`main`, so importing ``mprr`` or any of its modules never
imports ``scenarios``; ``tests/test_layering.py`` allows exactly this one import here.
"""

from __future__ import annotations

import sys


def main() -> int:
    """Run ``scenarios.cli.main`` with the process arguments and return its exit code."""
    from scenarios.cli import main as cli_main  # the single entry-point exception (see above)

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
