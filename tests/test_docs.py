"""The documentation keeps up with the code: the CLI reference names every option, the Sphinx
guide includes every Markdown page of docs/, and the footer carries the copyright."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from scenarios.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_the_cli_reference_names_every_option_of_run_simulate_and_party() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in ("run", "simulate", "party"):
        options = {o for a in _subparsers()[command]._actions for o in a.option_strings
                   if o.startswith("--") and a.help != argparse.SUPPRESS}  # hidden: internal to spawned workers
        missing = sorted(o for o in options - {"--help", "--verbose", "--log-level"} if f"`{o}" not in text and
                         not re.search(rf"[`\s]{re.escape(o)}[\s`=]", text))
        assert missing == [], f"docs/cli.md does not mention mprr {command} {missing}"


def test_the_sphinx_guide_includes_every_page_and_the_footer_has_a_copyright() -> None:
    guide = ROOT / "docs" / "sphinx" / "guide"
    index = (ROOT / "docs" / "sphinx" / "index.rst").read_text(encoding="utf-8")
    for page in sorted((ROOT / "docs").glob("*.md")):
        wrapper = guide / page.name
        assert wrapper.is_file() and f"../../{page.name}" in wrapper.read_text(encoding="utf-8"), page.name
        assert f"guide/{page.stem}" in index, page.name
    conf = (ROOT / "docs" / "sphinx" / "conf.py").read_text(encoding="utf-8")
    assert 'copyright = "2026, the mprr authors' in conf
