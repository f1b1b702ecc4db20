"""Argument checks of the command line, run before any long work starts.

Each raises a :class:`~condcheck.errors.CondcheckError` with one line: the option, what was wrong and
what is allowed.  Outputs are probed for real (a file is created and removed, or opened for appending
without changing it), so a folder that is missing, a path under /proc or a read-only place is refused
before a construction or a report runs, not after.
"""
from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from .errors import ArgumentError


def output_file(path, option: str = "--out") -> Path:
    """A file the command will write: its folder exists and it can be created (or rewritten) there."""
    if str(path) == "":
        raise ArgumentError(f"{option} is empty; give the name of a file to write (e.g. net.json)")
    p = Path(path)
    if p.is_dir():
        raise ArgumentError(f"{option} {str(path)!r} is a folder; give the name of a file to write (e.g. net.json)")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise ArgumentError(f"{option} {str(path)!r}: the folder {str(folder)!r} does not exist; create it first or "
                            f"write into an existing folder")
    existed = p.exists()
    try:
        with open(p, "a"):
            pass
        if not existed:
            p.unlink()
    except OSError as e:
        raise ArgumentError(f"{option} {str(path)!r} cannot be written ({e.strerror or e}); give a file in a "
                            f"writable folder") from None
    return p


def output_folder(path, option: str = "--out") -> Path:
    """A folder the command will write files into: it is created now (with its parents) and must be
    writable."""
    if str(path) == "":
        raise ArgumentError(f"{option} is empty; give a folder to write into")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ArgumentError(f"{option} {str(path)!r} is a file; give a folder to write into")
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=p, prefix=".condcheck-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ArgumentError(f"{option} {str(path)!r} cannot be used as an output folder ({e.strerror or e}); give a "
                            f"writable folder") from None
    return p


def upstream_max(value: float, option: str = "--upstream-max") -> float:
    """The largest |h*| of random targets: a finite number >= 0."""
    if not math.isfinite(value) or value < 0:
        raise ArgumentError(f"{option} must be a finite number >= 0 (the largest |h*| of random targets), got "
                            f"{value!r}")
    return value


def dimension(value: int, option: str = "--dim") -> int:
    if value < 1:
        raise ArgumentError(f"{option} must be at least 1 (the input dimension d), got {value}")
    return value


def sample_spec(spec: str, option: str = "--domain"):
    """(N, SEED) of 'sample:N[:SEED]': integers, N >= 1, SEED >= 0."""
    parts = spec.split(":")
    try:
        if not 2 <= len(parts) <= 3:
            raise ValueError
        n, seed = int(parts[1]), int(parts[2]) if len(parts) == 3 else 0
    except ValueError:
        raise ArgumentError(f"{option} {spec!r}: expected sample:N or sample:N:SEED with integers") from None
    if n < 1 or seed < 0:
        raise ArgumentError(f"{option} {spec!r}: N must be at least 1 and SEED at least 0")
    return n, seed
