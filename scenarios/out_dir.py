"""The output folder of a run: refused when it holds files mprr did not write, removed again
when a run that created it fails.

- :func:`foreign_files` — what a folder holds besides the files a previous mprr run wrote
  (its ``results.json``, ``report.md`` and the figures and files that ``results.json`` lists);
- :func:`prepare_out_dir` — check ``--out`` (a folder, writable, nothing foreign unless
  ``force``) and create it, returning the folders it created;
- :func:`removed_on_failure` — a context that removes those folders when the run fails or is
  interrupted, so that no empty or half-written output folder is left behind.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from mprr.errors import ConfigurationError
from scenarios.report import is_mprr_results, previous_outputs

__all__ = ["foreign_files", "prepare_out_dir", "removed_on_failure"]


def foreign_files(path: Path) -> list[str]:
    """Names of the entries of the folder ``path`` that no mprr run wrote, sorted.

    An mprr run writes ``results.json`` (recognised by its keys, :func:`scenarios.report.is_mprr_results`),
    ``report.md`` beside it, and the figures and other files that ``results.json`` lists
    (:func:`scenarios.report.previous_outputs`).  Hidden entries (``.DS_Store``) are ignored.
    """
    ours = set(previous_outputs(path))
    if is_mprr_results(path / "results.json"):
        ours |= {"results.json", "report.md"}
    return sorted(e.name for e in path.iterdir() if not e.name.startswith(".") and e.name not in ours)


def prepare_out_dir(path: Path, *, force: bool = False, option: str = "--out") -> list[Path]:
    """Check the output folder ``path`` and create it (with its parents).

    Returns
    -------
    list of Path
        The folders created, outermost first (for :func:`removed_on_failure`); empty when
        ``path`` existed.

    Raises
    ------
    ConfigurationError
        If ``path`` is a file, cannot be created or written to, or holds files mprr did not write
        (:func:`foreign_files`) and ``force`` is false; the message names ``option``.
    """
    if path.exists() and not path.is_dir():
        raise ConfigurationError(f"{option} must be a directory, got {str(path)!r}, which is a file")
    if path.is_dir() and not force:
        foreign = foreign_files(path)
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise ConfigurationError(
                f"{option} {str(path)!r} holds files mprr did not write ({shown}); a run would write its "
                f"results.json, report.md and figures among them: choose an empty or new folder, or pass "
                f"--force to write there anyway"
            )
    missing = [p for p in (path, *path.parents) if not p.exists()][::-1]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(f"{option} {str(path)!r}: cannot create the directory ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        removed_now(missing)
        raise ConfigurationError(f"{option} {str(path)!r}: the directory is not writable")
    return missing


def removed_now(created: Sequence[Path]) -> None:
    """Remove the folders a run created (the outermost one, with what the run put in it)."""
    if created:
        shutil.rmtree(created[0], ignore_errors=True)


@contextmanager
def removed_on_failure(created: Sequence[Path]) -> Iterator[None]:
    """Remove the folders in ``created`` (those :func:`prepare_out_dir` made) when the body
    raises anything, Ctrl-C included; the exception goes on."""
    try:
        yield
    except BaseException:
        removed_now(created)
        raise
