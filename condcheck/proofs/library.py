"""condcheck's Coq library, shipped as package data (``condcheck/proofs/coq/*.v``).

Every development gets its own copy under ``lib/`` (logical name ``Condcheck``), so that the directory
is self-contained: checking it needs Coq, Flocq, Interval and Coquelicot only.  :data:`FILES` lists the
library in dependency order; :func:`digest` is a hash of its text (reports cite the library checked).
"""
from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

#: the library, in dependency order: what a certificate's development uses
FILES = ("IntervalZ.v", "Format.v", "Dyadic.v", "Activations.v", "Rounded.v", "Decide.v",
         "Condition1.v", "Condition2.v", "Condition3.v", "Check1.v", "Check2.v", "Check3.v")
#: what a network's development uses
NETWORK_FILES = ("IntervalZ.v", "Format.v", "Dyadic.v", "Activations.v", "Rounded.v", "Network.v")
#: bounds of erf at the cutoffs, for GELU's facts beyond them
ERF_FILES = ("ErfBounds.v",)
#: Condition 1's dead tail on a wide format, from a chain of interval facts
COVER_FILES = ("Cover.v",)
ALL_FILES = FILES + ("Network.v",) + ERF_FILES + COVER_FILES


def source(name: str) -> str:
    return resources.files("condcheck.proofs").joinpath("coq", name).read_text()


def copy_into(out: Path, with_network: bool = False, with_erf: bool = False, with_cover: bool = False) -> list[str]:
    """Copy the library (the part a certificate's or, ``with_network``, a network's development uses, and
    ``with_erf`` the erf cutoffs, ``with_cover`` the dead tail's chains) into ``out/lib``; returns the
    paths relative to ``out``.  Files already there with the same text are left alone (with their compiled ``.vo``)."""
    lib = Path(out) / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in (NETWORK_FILES if with_network else FILES) + (ERF_FILES if with_erf else ()) + \
            (COVER_FILES if with_cover else ()):
        write_if_changed(lib / name, source(name))
        paths.append(f"lib/{name}")
    return paths


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` unless the file holds it already: a file left as it was keeps its time,
    so proving again into the same directory recompiles only what changed (make goes by times)."""
    path = Path(path)
    try:
        if path.read_text() == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    path.write_text(text)


def coq_project(library_files: list[str], generated: list[str]) -> str:
    """The ``_CoqProject`` of a development: the library as ``Condcheck``, the rest as ``Cert``."""
    # "-Q . Cert" first: the later "-Q lib Condcheck" takes lib/ out of Cert (Coq warns that it does)
    return "\n".join(["-Q . Cert", "-Q lib Condcheck", "-arg -w -arg -ambiguous-paths",
                      "-arg -w -arg -overriding-logical-loadpath", "",
                      *library_files, *generated, ""])


def digest() -> str:
    """SHA-256 of the library's text, in order."""
    h = hashlib.sha256()
    for name in ALL_FILES:
        h.update(name.encode() + b"\0" + source(name).encode() + b"\0")
    return h.hexdigest()
