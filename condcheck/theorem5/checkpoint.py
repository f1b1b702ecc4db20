"""Checkpoints of a spread construction: every chunk's result kept in a directory as it arrives, so that a
run that stops (a crash, a lost cluster, the end of a batch job) resumes where it was.  Run the same
command with the same ``--checkpoint DIR``: the chunks found there are read, the others run.

A chunk's result (``speculation.speculate``) is a function of the construction, its points and the
agreements it was fed, so it is kept under a hash of those (the hints it read change only which chunks
run again, never whether a result is right), in a folder named by a hash of the construction (its
arguments and the tunables a search reads).  The directory's ``checkpoint.json`` records a hash of the
search code (condcheck's modules but those that only run, show or check the chunks, ``NOT_SEARCH``, and
the condition checkers'); a directory written by other search code is refused in one line.  Whatever a checkpoint holds,
the network is verified exactly on every point afterwards.

The results are pickle files: read a checkpoint only from a directory you trust.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
from pathlib import Path

from ..errors import CondcheckError
from . import tuning

#: condcheck's modules (relative to the package) that no chunk's search runs, or that only hand it what
#: the checkpoint's keys hold (``theorem5/construct.py``: the arguments and the chunks): changing them
#: leaves a checkpoint valid.  They assemble the network after the chunks, verify it (the interpreters),
#: write it (``netfile.py``: the search reads none of it), run the chunks (the Dask engine), or are the
#: CLI, the proofs and Theorem 7.
NOT_SEARCH = ("__main__.py", "cli.py", "cli_checks.py", "bench.py", "distributed.py", "mapped_object.py",
              "progress.py", "interval_pruning.py", "verify.py", "interpreters/", "netfile.py", "proofs/", "recheck/",
              "theorem7/", "theorem5/assemble.py", "theorem5/layers.py", "theorem5/construct.py",
              "theorem5/spread.py", "theorem5/checkpoint.py")
#: tunables that change how chunks are run or verified, not what a chunk computes
NOT_SEARCH_TUNING = ("JOBS", "SPREAD_SAMPLE_CHUNKS", "SPREAD_VERIFY_POINTS")

INDEX = "checkpoint.json"


def _digest(obj) -> str:
    return hashlib.sha256(pickle.dumps(obj, protocol=4)).hexdigest()


def search_code_hash() -> str:
    """A hash of the source of every module a chunk's search may run: condcheck's but ``NOT_SEARCH``, and
    the condition checkers' (``conditions``: the witnesses a construction starts from)."""
    import conditions
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for base, skip in ((root, NOT_SEARCH), (Path(conditions.__file__).resolve().parent, ())):
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).as_posix()
            if rel.startswith(skip):
                continue
            h.update(base.name.encode() + b"/" + rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def construction_hash(build) -> str:
    """A hash of what every chunk of ``build`` reads: its arguments and the search's tunables."""
    tunables = {k: getattr(tuning, k) for k in dir(tuning) if k.isupper() and k not in NOT_SEARCH_TUNING}
    return _digest((tuple(_canonical(a) for a in build.args), sorted(tunables.items())))


def _canonical(arg):
    """An argument as data whose pickle depends on its value only (a ``Format`` by its fields, not the
    tables it caches once used)."""
    from ..formats import Format
    if isinstance(arg, Format):
        return ("format",) + tuple(getattr(arg, f.name) for f in dataclasses.fields(arg))
    return arg


class Checkpoint:
    """The chunk results of one construction, in a folder of ``directory`` (made if missing) named by
    the construction's hash; the directory may hold other constructions' folders, written by the same
    search code."""

    def __init__(self, directory, build):
        self.dir = Path(directory)
        if self.dir.exists() and not self.dir.is_dir():
            raise CondcheckError(f"checkpoint: {directory} is a file; give a directory (new or one written "
                                 "by this version of condcheck)")
        stamp = {"search_code": search_code_hash()}
        index = self.dir / INDEX
        try:
            if index.exists():
                try:
                    old = json.loads(index.read_text())
                except ValueError as e:
                    raise CondcheckError(f"checkpoint: {index} is not readable ({e}); give another "
                                         "directory") from None
                if old.get("search_code") != stamp["search_code"]:
                    raise CondcheckError(f"checkpoint: {directory} holds chunk results of other search code "
                                         "(another condcheck version); give an empty or new directory")
            else:
                self.dir.mkdir(parents=True, exist_ok=True)
                if any(self.dir.iterdir()):
                    raise CondcheckError(f"checkpoint: {directory} is not empty and holds no {INDEX}; give an "
                                         "empty or new directory")
                _write(index, json.dumps(stamp, indent=1).encode())
            self.folder = self.dir / construction_hash(build)[:24]
            self.folder.mkdir(exist_ok=True)
            what = self.folder / "construction.txt"
            if not what.exists():
                _write(what, (f"{getattr(build.args[0], '__name__', build.args[0])} on {build.args[1].name}, "
                              f"{len(build.args[2])} points\n").encode())
        except OSError as e:
            raise CondcheckError(f"checkpoint: can not use {directory}: {e}") from None
        self.read = self.written = self.unreadable = 0

    def _path(self, chunk, history) -> Path:
        return self.folder / f"chunk-{chunk.points.start}-{_digest((chunk, history))[:24]}.pkl"

    def load(self, chunk, history):
        """The result kept for the chunk fed ``history``, or None (also for a file that no longer reads:
        the chunk is then run again and its file written anew)."""
        path = self._path(chunk, history)
        if not path.exists():
            return None
        try:
            with open(path, "rb") as fh:
                result = pickle.load(fh)
        except Exception:                               # noqa: BLE001 -- any damage: run the chunk again
            self.unreadable += 1
            return None
        self.read += 1
        return result

    def save(self, chunk, history, result) -> None:
        try:
            _write(self._path(chunk, history), pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as e:
            raise CondcheckError(f"checkpoint: can not write a chunk result to {self.folder}: {e}") from None
        self.written += 1


def _write(path: Path, data: bytes) -> None:
    """Write whole or not at all (a run killed while writing leaves no half file)."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
