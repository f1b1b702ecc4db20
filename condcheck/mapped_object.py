"""An object written once to a file that every process on the machine reads memory-mapped: its numpy
arrays (and anything else pickled out of band) are views of the file's pages, not copies.

Why: a Dask worker that receives a large object (the 53 M-weight network of the bfloat16 gelu box,
about 0.62 GB) holds it twice while it arrives -- dask sends buffers over 64 MiB in shards and copies
them together on arrival -- and every worker keeps its own copy after.  Memory-mapped, the arrival costs
no copy and the workers on one machine share one copy of the pages (each worker's resident set still
counts the pages it reads).  ``Engine.map`` shares its ``shared`` input so on a LocalCluster
(measurements: docs/scale.md).

The file: the buffers of ``pickle.dumps(obj, protocol=5)`` taken out of band, each at an offset
aligned to 64 bytes; the pickle stream itself and the offsets travel in the small :class:`MappedObject`
handle.  Arrays read back are read-only.
"""
from __future__ import annotations

import mmap
import os
import pickle
import uuid

#: each buffer starts at a multiple of this in the file (numpy's and the compiled kernels' alignment)
ALIGN = 64


class MappedObject:
    """A handle to an object written by :func:`write_mapped`: small and picklable; :meth:`load` gives
    the object, its out-of-band buffers memory-mapped (once per process: the last one loaded is kept)."""

    def __init__(self, path: str, stream: bytes, spans: list):
        self.path, self.stream, self.spans = path, stream, spans
        self.token = uuid.uuid4().hex

    @property
    def nbytes(self) -> int:
        """Bytes of the out-of-band buffers (the part in the file)."""
        return sum(n for _, n in self.spans)

    def load(self):
        hit = _LOADED.get(self.token)
        if hit is None:
            _LOADED.clear()
            with open(self.path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                view = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)) if size else memoryview(b"")
            hit = _LOADED[self.token] = pickle.loads(self.stream, buffers=[view[a:a + n] for a, n in self.spans])
        return hit


#: the object this process loaded last (token -> object)
_LOADED: dict = {}


def forget_loaded() -> None:
    """Drop this process's loaded object (its mapping closes when nothing uses its arrays any more)."""
    _LOADED.clear()


def write_mapped(obj, directory: str) -> MappedObject:
    """Write ``obj``'s out-of-band buffers to a new file in ``directory``; the handle to read it."""
    buffers = []
    stream = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    path = os.path.join(directory, f"shared-{uuid.uuid4().hex}.bin")
    spans, at = [], 0
    with open(path, "wb") as fh:
        for b in buffers:
            raw = b.raw()
            pad = -at % ALIGN
            fh.write(b"\0" * pad)
            at += pad
            spans.append((at, raw.nbytes))
            fh.write(raw)
            at += raw.nbytes
    return MappedObject(path, stream, spans)
