"""Output paths checked before any work starts (DESIGN.md, "CLI and exit codes": bad input exits 2 with one
line naming the file, the option and the problem, and nothing is written).

An output file's folder must exist, and so must an output folder's parent: a mistyped path is refused, never
made (issue 25).  A path is writable when its nearest existing ancestor is a folder in which a file can really be created: the
check makes (and removes at once) an empty temporary file there, because permission bits say nothing for root
nor for a read-only file system.  The files themselves are written later under a temporary name and renamed
only on success (``cli._write_text_atomic``, ``cli.write_releases``, ``html_report.write_html``).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import InputError

__all__ = ["check_output_file", "check_output_dir", "check_writable_folder"]


def _nearest_existing(path: Path) -> Path:
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    return probe


def check_writable_folder(folder: Path, *, shown: str, key: str) -> None:
    """``folder``'s nearest existing ancestor must be a folder where a file can be created (:class:`InputError`
    naming ``shown`` and ``key`` otherwise)."""
    base = _nearest_existing(folder)
    if not base.is_dir():
        raise InputError(f"cannot be written: '{base}' is not a folder", file=shown, key=key)
    try:
        fd, tmp = tempfile.mkstemp(dir=base, prefix=".multirelease-probe-")
    except OSError as exc:
        raise InputError(f"cannot be written: {exc.strerror or exc} in '{base}'", file=shown, key=key) from None
    os.close(fd)
    os.unlink(tmp)


def check_output_file(path: str | Path | None, key: str) -> None:
    """An output file (``--json``, ``--html``, ``--out FILE``): not a folder, and its folder can be made and
    written.  ``None`` and ``-`` (stdout) pass."""
    if path is None or str(path) == "-":
        return
    p = Path(path)
    if str(p) == "" or p.name in ("", ".", ".."):
        raise InputError("is not a file name", file=str(path), key=key)
    if p.is_dir():
        raise InputError("is a directory, not a file", file=str(p), key=key)
    if os.path.lexists(p) and not p.is_file():
        raise InputError("exists and is not a regular file", file=str(p), key=key)
    folder = p.parent if str(p.parent) else Path(".")
    base = _nearest_existing(folder)
    if base.is_dir() and not folder.is_dir():  # a mistyped folder is refused, never made (issue 25)
        raise InputError(f"its folder does not exist ('{folder}'): make it first", file=str(p), key=key)
    check_writable_folder(folder, shown=str(p), key=key)


def check_output_dir(path: str | Path | None, key: str) -> None:
    """An output folder (``--out DIR``, a new ``--ledger DIR``): a folder or nothing yet, inside a writable
    folder."""
    if path is None:
        return
    p = Path(path)
    if os.path.lexists(p) and not p.is_dir():
        raise InputError("exists and is not a directory", file=str(p), key=key)
    parent = p.parent if str(p.parent) else Path(".")
    if not p.exists() and not parent.is_dir() and _nearest_existing(parent).is_dir():
        # the folder itself is made, never a chain of mistyped ones (issue 25)
        raise InputError(f"its parent folder does not exist ('{parent}'): make it first", file=str(p), key=key)
    check_writable_folder(p, shown=str(p), key=key)
