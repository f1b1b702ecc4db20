"""The network file of docs/file-formats.md (``schema: "condcheck.network/1"``): read and write.

Every number is ``float.hex()`` of its exact value; the reader accepts exactly the hexadecimal forms of
:mod:`condcheck.hexfloat` (``0x1.8p+1``, ``-0x1.0000000000000p-3``; ``0x`` and ``p`` required) whose
value is a float64, and refuses anything else -- ``"10"``, ``1.5``, ``"inf"`` -- naming the field.
``"semantics"``: ``"finite"`` or ``"ieee"`` (docs/semantics.md, ``condcheck.ieee``); a file without it is read as
``"finite"``; ``"implementation"`` defaults to ``"exact"``; ``"input_dim"`` (optional) must equal the first
layer's inputs.  A weight matrix is written as ``"weight"`` (the dense list of rows) or as
``"weight_sparse"``: ``{"shape": [outputs, inputs], "entries": [[row, column, hex], ...]}`` (rows, then
columns, ascending, no repeats), whichever is the shorter text (:func:`weight_entry`); readers accept
either.  The schema name carries the version of the file format (``/1``).

The reader checks everything before a network is built: no field outside the documented ones (top level, layers,
claim), known format, activation, implementation and semantics names, rows of equal length, each
layer's inputs equal to the previous layer's outputs (and to ``input_dim``), one output at the end, every
number a value of the format, and a claim of the theorem's shape: N points of d numbers, N values, and
for Theorem 5 N upstream values and N x d gradients, for Theorem 7 K >= 1 upstream values and N x K x d
gradients.  A claim may be absent (or null); an error is one line naming the field.

:func:`load_network` streams the file (:func:`read_streamed`, ijson): a sparse weight's entries go
straight into arrays, some tens of bytes an entry rather than a Python list of three objects each
(a bfloat16 box has about 50 million), with the checks and messages of :func:`network_from_dict`.
"""
from __future__ import annotations

import json
import os
from array import array
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .errors import CondcheckError
from .hexfloat import HexFloatError, parse_float64
from .network import Layer, Network

SCHEMA = "condcheck.network/1"


@dataclass
class Claim:
    """What a network file claims: values and AD gradients at listed inputs (docs/file-formats.md).

    Theorem 5: ``upstream`` has shape (N,), ``gradients`` (N, d).
    Theorem 7: ``upstream`` has shape (K,) (every y covered), ``gradients`` (N, K, d).
    """

    theorem: int
    points: np.ndarray
    values: np.ndarray
    upstream: np.ndarray
    gradients: np.ndarray

    def __post_init__(self):
        self.points = np.asarray(self.points, dtype=np.float64)
        if self.points.ndim == 1:
            self.points = self.points.reshape(-1, 1)
        self.values = np.asarray(self.values, dtype=np.float64).reshape(-1)
        self.upstream = np.asarray(self.upstream, dtype=np.float64).reshape(-1)
        self.gradients = np.asarray(self.gradients, dtype=np.float64)
        N, d = self.points.shape
        if self.theorem not in (5, 7):
            raise CondcheckError(f"claim theorem must be 5 or 7, got {self.theorem!r}")
        if self.values.shape != (N,):
            raise CondcheckError(f"claim has {N} points but {self.values.shape[0]} values")
        want = (N, d) if self.theorem == 5 else (N, self.upstream.shape[0], d)
        if self.theorem == 5 and self.upstream.shape != (N,):
            raise CondcheckError(f"theorem 5 claim has {N} points but {self.upstream.shape[0]} upstream values")
        if self.gradients.shape != want:
            raise CondcheckError(f"claim gradients have shape {self.gradients.shape}, expected {want}")


def _hex(x: float) -> str:
    return float(x).hex()


ZERO_TEXT = len(json.dumps(_hex(0.0)))


#: entries measured and written a block at a time (``save_network``): a bfloat16 box has tens of millions
BLOCK = 1 << 20
_TENS = 10 ** np.arange(1, 19, dtype=np.int64)


def _sorted_entries(weight):
    """(rows, columns, values) of the stored entries, rows then columns."""
    coo = weight.tocoo()
    order = np.lexsort((coo.col, coo.row))
    return coo.row[order].astype(np.int64), coo.col[order].astype(np.int64), coo.data[order]


def _digits(v) -> int:
    """The decimal digits of the nonnegative integers v, summed."""
    return int((np.searchsorted(_TENS, v, side="right") + 1).sum())


def _hex_text(values) -> int:
    """The JSON text length of the values as quoted hexadecimal floats, summed."""
    return sum(len(float(x).hex()) + 2 for x in values)


def _sparse_is_shorter(weight, rows, cols, data) -> bool:
    """Whether ``{"weight_sparse": ...}`` is the shorter JSON text than the dense ``{"weight": rows}``.

    The lengths are counted from the stored entries (json.dumps' default separators), so no dense
    matrix is built for a layer that is written sparse."""
    n_rows, n_cols = weight.shape
    n = len(data)
    stored = sum(_hex_text(data[a:a + BLOCK]) for a in range(0, n, BLOCK))
    # dense: [[a, b], [c, d]] -- every entry quoted, ", " between entries and between rows
    dense = 2 + n_rows * 2 + max(n_rows - 1, 0) * 2 + n_rows * max(n_cols - 1, 0) * 2 + stored \
        + (n_rows * n_cols - n) * ZERO_TEXT
    # sparse: {"shape": [r, c], "entries": [[i, j, "hex"], ...]}
    sparse = len(json.dumps({"shape": [n_rows, n_cols], "entries": []})) + stored + _digits(rows) + _digits(cols) \
        + n * 6 + max(n - 1, 0) * 2
    return dense > sparse


def weight_entry(weight) -> dict:
    """``{"weight": rows}`` or ``{"weight_sparse": {...}}``, whichever is the shorter JSON text."""
    rows, cols, data = _sorted_entries(weight)
    if not _sparse_is_shorter(weight, rows, cols, data):
        return {"weight": [[_hex(w) for w in row] for row in weight.toarray()]}
    return {"weight_sparse": {"shape": list(weight.shape),
                              "entries": [[int(r), int(c), _hex(w)] for r, c, w in zip(rows, cols, data)]}}


def _layer_text(layer):
    """The JSON text of a layer's entry (``weight_entry`` and its bias), in pieces: the sparse entries a
    block at a time, as json.dumps writes them (hexadecimal floats need no escapes)."""
    rows, cols, data = _sorted_entries(layer.weight)
    bias = json.dumps([_hex(b) for b in layer.bias])
    if not _sparse_is_shorter(layer.weight, rows, cols, data):
        yield json.dumps({"weight": [[_hex(w) for w in row] for row in layer.weight.toarray()]})[:-1]
    else:
        yield '{"weight_sparse": {"shape": %s, "entries": [' % json.dumps(list(layer.weight.shape))
        for a in range(0, len(data), BLOCK):
            text = ", ".join(f'[{r}, {c}, "{float(w).hex()}"]'
                             for r, c, w in zip(rows[a:a + BLOCK].tolist(), cols[a:a + BLOCK].tolist(),
                                                data[a:a + BLOCK].tolist()))
            yield text if a == 0 else ", " + text
        yield "]}"
    yield ', "bias": ' + bias + "}"


def network_to_dict(net: Network, claim: Claim | None = None) -> dict:
    layers = []
    for layer in net.layers:
        entry = weight_entry(layer.weight)
        entry["bias"] = [_hex(b) for b in layer.bias]
        layers.append(entry)
    return _top(net, layers, claim)


def _top(net: Network, layers, claim: Claim | None) -> dict:
    out = {"schema": SCHEMA, "format": net.format.name, "activation": net.activation,
           "implementation": net.implementation, "semantics": net.semantics, "input_dim": net.input_dim,
           "layers": layers}
    if claim is not None:
        out["claim"] = claim_to_dict(claim)
    return out


def claim_to_dict(claim: Claim) -> dict:
    hx = np.vectorize(_hex, otypes=[object])
    return {"theorem": claim.theorem,
            "points": hx(claim.points).tolist(),
            "values": hx(claim.values).tolist(),
            "upstream": hx(claim.upstream).tolist(),
            "gradients": hx(claim.gradients).tolist()}


# ---- reading: every field checked, every number a hexadecimal float ---------------------------------
TOP_FIELDS = ("schema", "format", "activation", "implementation", "semantics", "input_dim", "layers", "claim")
REQUIRED = ("schema", "format", "activation", "layers")
CLAIM_FIELDS = ("theorem", "points", "values", "upstream", "gradients")


def _bad(where: str, what: str) -> CondcheckError:
    return CondcheckError(f"network file: {where}: {what}")


def _number(s, where: str) -> float:
    if isinstance(s, str):
        try:
            v = float.fromhex(s)
            if v.hex() == s:                   # float.hex()'s own form: exact, the common case
                return v
        except (ValueError, OverflowError):
            pass
    try:
        return parse_float64(s, where)
    except HexFloatError as e:
        raise CondcheckError(f"network file: {e}") from None


#: the largest layer width or index a file may give
MAX_WIDTH = 2 ** 31 - 1


def _count(v, where: str, least: int = 0) -> int:
    if type(v) is not int or not least <= v <= MAX_WIDTH:
        shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "..."
        raise _bad(where, f"{shown} is not an integer from {least} to {MAX_WIDTH}")
    return v


def _list(v, where: str, length=None, nonempty=False) -> list:
    if not isinstance(v, list):
        raise _bad(where, f"must be a list, not {type(v).__name__}")
    if length is not None and len(v) != length:
        raise _bad(where, f"has {len(v)} entries, {length} expected")
    if nonempty and not v:
        raise _bad(where, "is empty")
    return v


def _vector(v, where: str, length=None) -> np.ndarray:
    return np.array([_number(x, f"{where}[{i}]") for i, x in enumerate(_list(v, where, length))], dtype=np.float64)


def _matrix(v, where: str, rows=None, cols=None) -> np.ndarray:
    rows_ = _list(v, where, rows, nonempty=rows is None)
    width = cols
    out = []
    for i, row in enumerate(rows_):
        r = _vector(row, f"{where}[{i}]", width)
        if width is None:
            width = len(r)
            if width == 0:
                raise _bad(f"{where}[0]", "is empty")
        out.append(r)
    return np.array(out, dtype=np.float64).reshape(len(out), width or 0)


def _weight_sparse(ws, where: str, fmt):
    if not isinstance(ws, dict) or set(ws) != {"shape", "entries"}:
        raise _bad(where, 'must be {"shape": [outputs, inputs], "entries": [[row, column, hex], ...]}')
    shape = _list(ws["shape"], f"{where}.shape", 2)
    rows, cols = _count(shape[0], f"{where}.shape[0]", 1), _count(shape[1], f"{where}.shape[1]", 1)
    if isinstance(ws["entries"], StreamedEntries):
        return ws["entries"].matrix(where, rows, cols, fmt)
    r, c, v, last = [], [], [], None
    for k, e in enumerate(_list(ws["entries"], f"{where}.entries")):
        at = f"{where}.entries[{k}]"
        _list(e, at, 3)
        i, j = _count(e[0], f"{at}[0]"), _count(e[1], f"{at}[1]")
        if i >= rows or j >= cols:
            raise _bad(at, f"position ({i}, {j}) is outside the shape ({rows}, {cols})")
        if last is not None and (i, j) <= last:
            raise _bad(at, "entries must be sorted by row, then column, without repeats")
        last = (i, j)
        r.append(i), c.append(j), v.append(_number(e[2], f"{at}[2]"))
    values = np.array(v, dtype=np.float64)
    try:
        _in_format(values, fmt, f"{where}.entries")
    except CondcheckError as e:                # name the entry's number: entries[k][2]
        raise CondcheckError(str(e).replace("]: ", "][2]: ", 1)) from None
    return sp.csr_matrix((np.array(v, dtype=np.float64), (np.array(r, dtype=np.int64), np.array(c, dtype=np.int64))),
                         shape=(rows, cols))


def _in_format(arr: np.ndarray, fmt, where: str) -> None:
    """Every entry a value of fmt; the error names the first that is not by its position in the file."""
    from .rounding import round_array
    arr = np.asarray(arr, dtype=np.float64)
    flat = arr.ravel()
    if flat.size == 0:
        return
    r, over = round_array(flat, fmt)
    bad = np.flatnonzero(over | (r != flat))
    if bad.size:
        pos = "".join(f"[{int(i)}]" for i in np.unravel_index(int(bad[0]), arr.shape))
        raise _bad(f"{where}{pos}", f"{float(flat[bad[0]]).hex()} is not a value of {fmt.name}")


def _names(d: dict):
    from .activations import get_activation
    from .formats import get_format
    from .ieee import SEMANTICS_CHOICES
    from .rounded_activation import IMPLEMENTATIONS
    for key in ("format", "activation", "implementation", "semantics"):
        if key in d and not isinstance(d[key], str):
            raise _bad(key, f"must be a name (a string), not {type(d[key]).__name__}")
    try:
        fmt = get_format(d["format"])
    except CondcheckError as e:
        raise _bad("format", str(e)) from None
    try:
        act = get_activation(d["activation"]).name
    except CondcheckError as e:
        raise _bad("activation", str(e)) from None
    impl = d.get("implementation", "exact")
    if impl not in IMPLEMENTATIONS:
        from .implementations import get_implementation         # a registered plug-in implementation
        try:
            get_implementation(impl)
        except CondcheckError as e:
            raise _bad("implementation", str(e)) from None
    sem = d.get("semantics", "finite")
    if sem not in SEMANTICS_CHOICES:
        raise _bad("semantics", f"unknown semantics {sem!r}; known: {', '.join(SEMANTICS_CHOICES)}")
    return fmt, act, impl, sem


def _claim(c, d: int, fmt) -> Claim:
    if not isinstance(c, dict):
        raise _bad("claim", f"must be an object with the fields {', '.join(CLAIM_FIELDS)}")
    for k in c:
        if k not in CLAIM_FIELDS:
            raise _bad(f"claim.{k}", f"unknown field; a claim has {', '.join(CLAIM_FIELDS)}")
    for k in CLAIM_FIELDS:
        if k not in c:
            raise _bad(f"claim.{k}", "missing")
    theorem = c["theorem"]
    if type(theorem) is not int or theorem not in (5, 7):
        raise _bad("claim.theorem", f"{theorem!r} is neither 5 nor 7")
    points = _matrix(c["points"], "claim.points", cols=d)
    n = points.shape[0]
    values = _vector(c["values"], "claim.values", n)
    if theorem == 5:
        upstream = _vector(c["upstream"], "claim.upstream", n)
        gradients = _matrix(c["gradients"], "claim.gradients", n, d)
    else:
        upstream = _vector(_list(c["upstream"], "claim.upstream", nonempty=True), "claim.upstream")
        k = upstream.shape[0]
        g = _list(c["gradients"], "claim.gradients", n)
        gradients = np.array([_matrix(row, f"claim.gradients[{i}]", k, d) for i, row in enumerate(g)],
                             dtype=np.float64).reshape(n, k, d)
    for name, arr in (("points", points), ("values", values), ("upstream", upstream), ("gradients", gradients)):
        _in_format(arr, fmt, f"claim.{name}")
    return Claim(theorem, points, values, upstream, gradients)


def network_from_dict(d: dict) -> tuple[Network, Claim | None]:
    """A network file's network and claim; every field checked (see the module docstring)."""
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise CondcheckError(f"not a condcheck network file: expected \"schema\": \"{SCHEMA}\"")
    for k in d:
        if k not in TOP_FIELDS:
            raise _bad(k, f"unknown field; a network file has {', '.join(TOP_FIELDS)}")
    for k in REQUIRED:
        if k not in d:
            raise _bad(k, "missing")
    fmt, act, impl, sem = _names(d)
    if not fmt.fits_float64:
        raise _bad("format", f"networks need a format whose values are float64 numbers; {fmt.name} is not one")
    layers, width = [], None
    if "input_dim" in d:
        width = _count(d["input_dim"], "input_dim", 1)
    for l, entry in enumerate(_list(d["layers"], "layers", nonempty=True), 1):
        where = f"layers[{l - 1}]"
        if not isinstance(entry, dict):
            raise _bad(where, "must be an object with a weight (or weight_sparse) and a bias")
        kinds = [k for k in ("weight", "weight_sparse") if k in entry]
        if len(kinds) != 1:
            raise _bad(where, "must have exactly one of 'weight' and 'weight_sparse'")
        for k in entry:
            if k not in ("weight", "weight_sparse", "bias"):
                raise _bad(f"{where}.{k}", "unknown field; a layer has weight (or weight_sparse) and bias")
        if "bias" not in entry:
            raise _bad(f"{where}.bias", "missing")
        if kinds[0] == "weight":
            dense = _matrix(entry["weight"], f"{where}.weight", cols=width)
            _in_format(dense, fmt, f"{where}.weight")
            weight = sp.csr_matrix(dense)
        else:
            weight = _weight_sparse(entry["weight_sparse"], f"{where}.weight_sparse", fmt)
        rows, cols = weight.shape
        if width is not None and cols != width:
            raise _bad(f"{where}.{kinds[0]}", f"takes {cols} inputs, but " + (
                "input_dim is" if l == 1 else f"layers[{l - 2}] has") + f" {width}")
        bias = _vector(entry["bias"], f"{where}.bias", rows)
        _in_format(bias, fmt, f"{where}.bias")
        layers.append(Layer(weight, bias))
        width = rows
    if width != 1:
        raise _bad(f"layers[{len(layers) - 1}]", f"the last layer must have one output (the network is scalar), "
                                                 f"it has {width}")
    net = Network(fmt.name, act, layers, impl, layers[0].shape[1], sem)
    claim = None if d.get("claim") is None else _claim(d["claim"], net.input_dim, fmt)
    return net, claim


def save_network(path, net: Network, claim: Claim | None = None) -> None:
    """Write the network file: the text of ``json.dumps(network_to_dict(net, claim))``, a layer at a time
    and its entries a block at a time (a Python list per weight cost about 200 bytes: 10 GB for the
    50 M weights of a bfloat16 box)."""
    mark = "layers-written-here"
    head, tail = json.dumps(_top(net, mark, claim)).split(json.dumps(mark))
    with open(path, "w") as fh:
        fh.write(head + "[")
        for i, layer in enumerate(net.layers):
            if i:
                fh.write(", ")
            for piece in _layer_text(layer):
                fh.write(piece)
        fh.write("]" + tail)


def load_network(path) -> tuple[Network, Claim | None]:
    """Read and check a network file (docs/file-formats.md); errors are one-line CondcheckErrors naming the field.

    >>> import os, tempfile
    >>> from condcheck import construct_theorem5, load_network, save_network
    >>> net, claim = construct_theorem5("relu", "float8_e4m3", [[-1.0], [0.5]], [0.25, 2.0], [1.0, 0.5],
    ...                                 [[3.0], [-0.5]])
    >>> path = os.path.join(tempfile.mkdtemp(), "net.json")
    >>> save_network(path, net, claim)
    >>> net2, claim2 = load_network(path)
    >>> net2.widths == net.widths, claim2.theorem, claim2.values.tolist()
    (True, 5, [0.25, 2.0])
    """
    if not isinstance(path, (str, os.PathLike)):
        raise CondcheckError(f"a network file is named by a path, not a {type(path).__name__}")
    p = Path(path)
    if not p.is_file():
        raise CondcheckError(f"network file {str(path)!r} does not exist or is not a file")
    try:
        d = read_streamed(p)
    except OSError as e:
        raise CondcheckError(f"cannot read network file {str(path)!r}: {e}") from None
    except _NotJSON as e:                      # json.loads' own message where the file is small enough
        if p.stat().st_size > EXACT_JSON_ERRORS:
            raise CondcheckError(f"network file {str(path)!r} is not valid JSON: {e}") from None
        d = _read_whole(p, path)
    return network_from_dict(d)


def _read_whole(p: Path, path):
    """The file as ``json.loads`` reads it (the whole text and a Python object per value)."""
    try:
        return json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, RecursionError) as e:
        raise CondcheckError(f"cannot read network file {str(path)!r}: {e}") from None
    except json.JSONDecodeError as e:
        raise CondcheckError(f"network file {str(path)!r} is not valid JSON: {e}") from None


# ---- the streamed reader ----------------------------------------------------------------------------
#: a file whose text is not JSON (as ``json.loads`` takes it) and is at most this long is read again by
#: ``json.loads`` for its exact message; a longer one gets the streaming parser's message
EXACT_JSON_ERRORS = 64 << 20
#: entries checked a block at a time (the checks' temporary arrays are some tens of bytes an entry)
CHECK_BLOCK = 1 << 16


class _NotJSON(Exception):
    """The streamed text is not JSON as ``json.loads`` takes it."""


class StreamedEntries:
    """The ``entries`` of a ``weight_sparse`` read by :func:`read_streamed`: rows, columns and values as
    arrays (16 bytes an entry) in place of a list of lists (about 200 bytes an entry).

    The checks of ``_weight_sparse`` that need no shape or format run while streaming; the first entry
    that fails them is kept as ``error`` and its successors are only parsed.  :meth:`matrix` runs the
    rest in ``_weight_sparse``'s order, so the first failing entry and its message are the same."""

    __slots__ = ("rows", "cols", "values", "error")

    def __init__(self, rows, cols, values, error):
        self.rows = np.frombuffer(rows, dtype=np.int32) if len(rows) else np.zeros(0, np.int32)
        self.cols = np.frombuffer(cols, dtype=np.int32) if len(cols) else np.zeros(0, np.int32)
        self.values = np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0)
        self.error = error

    def matrix(self, where: str, rows: int, cols: int, fmt) -> sp.csr_matrix:
        """The weight, or the error ``_weight_sparse`` gives for these entries and this shape."""
        n, step = len(self.rows), CHECK_BLOCK   # the rows and columns end at the first failing entry
        for a in range(0, n, step):
            outside = np.flatnonzero((self.rows[a:a + step] >= rows) | (self.cols[a:a + step] >= cols))
            if outside.size:
                k = a + int(outside[0])
                raise _bad(f"{where}.entries[{k}]", f"position ({int(self.rows[k])}, {int(self.cols[k])}) is "
                                                    f"outside the shape ({rows}, {cols})")
        if self.error is not None:
            raise CondcheckError(self.error)
        from .rounding import round_array
        for a in range(0, len(self.values), step):    # _in_format's check, a block at a time
            block = self.values[a:a + step]
            r, over = round_array(block, fmt)
            bad = np.flatnonzero(over | (r != block))
            if bad.size:
                raise _bad(f"{where}.entries[{a + int(bad[0])}][2]",
                           f"{float(block[bad[0]]).hex()} is not a value of {fmt.name}")
        # sorted by row, then column, without repeats: the CSR arrays are the columns and the values
        indptr = np.zeros(rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.rows, minlength=rows), out=indptr[1:])
        return sp.csr_matrix((self.values, self.cols, indptr), shape=(rows, cols))


def _check_entry(e, at: str, last):
    """``_weight_sparse``'s checks of one entry but the shape's: ((row, column) or None, value, error)."""
    try:
        _list(e, at, 3)
        i, j = _count(e[0], f"{at}[0]"), _count(e[1], f"{at}[1]")
    except CondcheckError as err:
        return None, None, str(err)
    if last is not None and (i, j) <= last:
        return (i, j), None, str(_bad(at, "entries must be sorted by row, then column, without repeats"))
    try:
        return (i, j), _number(e[2], f"{at}[2]"), None
    except CondcheckError as err:
        return (i, j), None, str(err)


def _skip(events) -> None:
    """Parse past the rest of the open array."""
    depth = 1
    for ev, _ in events:
        if ev in ("start_array", "start_map"):
            depth += 1
        elif ev in ("end_array", "end_map"):
            depth -= 1
            if not depth:
                return


def _entries(events, where: str) -> StreamedEntries:
    """A ``weight_sparse`` entries array, its ``start_array`` read; an entry ``[row, column, "hex"]``
    that passes the checks quickly (integers from 0, ascending, ``float.hex()``'s own text) takes no
    Python object beyond its events, any other is built and checked as ``_weight_sparse`` does."""
    rows, cols, vals = array("i"), array("i"), array("d")
    add_r, add_c, add_v = rows.append, cols.append, vals.append
    fromhex, top, nxt = float.fromhex, MAX_WIDTH, events.__next__
    k, li, lj = 0, -1, -1
    for ev, v in events:
        if ev == "end_array":
            return StreamedEntries(rows, cols, vals, None)
        if ev == "start_array":
            e1 = nxt()
            e2 = e3 = e4 = None
            if e1[0] == "number":
                e2 = nxt()
                if e2[0] == "number":
                    e3 = nxt()
                    if e3[0] == "string":
                        e4 = nxt()
            if e4 is not None and e4[0] == "end_array":
                i, j, s = e1[1], e2[1], e3[1]
                if type(i) is int and type(j) is int and 0 <= i <= top and 0 <= j <= top \
                        and (i > li or (i == li and j > lj)):
                    try:
                        x = fromhex(s)
                        fast = x.hex() == s
                    except (ValueError, OverflowError):
                        fast = False
                    if fast:
                        add_r(i), add_c(j), add_v(x)
                        li, lj, k = i, j, k + 1
                        continue
                e = [i, j, s]
            else:
                e = _value("start_array", None, chain([x for x in (e1, e2, e3, e4) if x is not None], events))
        else:
            e = _value(ev, v, events)
        ij, x, error = _check_entry(e, f"{where}[{k}]", None if li < 0 else (li, lj))
        if ij is not None:
            add_r(ij[0]), add_c(ij[1])
        if error is not None:
            _skip(events)
            return StreamedEntries(rows, cols, vals, error)
        add_v(x)
        (li, lj), k = ij, k + 1
    raise _NotJSON("the text ends inside an array")


def _value(ev, v, events, role=None, where=""):
    """The value that starts with the event (ev, v), as ``json.loads`` builds it (a repeated key keeps
    its first place and its last value), but a layer's ``weight_sparse.entries`` array is a
    :class:`StreamedEntries`.  role: where in the file the value is ("top", "layers", "layer", "ws")."""
    if ev == "start_map":
        d = {}
        for ev, key in events:
            if ev == "end_map":
                return d
            ev, v = next(events)
            if role == "top" and key == "layers":
                d[key] = _value(ev, v, events, "layers")
            elif role == "layer" and key == "weight_sparse":
                d[key] = _value(ev, v, events, "ws", f"{where}.weight_sparse")
            elif role == "ws" and key == "entries" and ev == "start_array":
                d[key] = _entries(events, f"{where}.entries")
            else:
                d[key] = _value(ev, v, events)
        raise _NotJSON("the text ends inside an object")
    if ev == "start_array":
        out = []
        for ev, v in events:
            if ev == "end_array":
                return out
            out.append(_value(ev, v, events, "layer", f"layers[{len(out)}]") if role == "layers"
                       else _value(ev, v, events))
        raise _NotJSON("the text ends inside an array")
    return v


class _Chunks:
    """The file's bytes for the parser, refusing the form feed and vertical tab: the parser takes them as
    white space, ``json.loads`` nowhere (not inside a string either)."""

    def __init__(self, fh):
        self.fh, self.seen = fh, 0

    def read(self, n=-1):
        b = self.fh.read(n)
        if b"\x0b" in b or b"\x0c" in b:
            at = self.seen + min(i for i in (b.find(b"\x0b"), b.find(b"\x0c")) if i >= 0)
            raise _NotJSON(f"a form feed or vertical tab at byte {at}")
        self.seen += len(b)
        return b


def read_streamed(path, backend=None) -> dict:
    """The network file as ``json.loads`` reads it, but each layer's ``weight_sparse.entries`` a
    :class:`StreamedEntries`: the text is parsed a block at a time (ijson), so the memory is the arrays,
    not the text and a Python list per entry.  Raises _NotJSON if the text is not JSON.

    backend: an ijson backend name; by default ijson's fastest available (its C parser ``yajl2_c``,
    else its pure-Python one); without ijson the file is read whole by ``json.loads``."""
    try:
        import ijson
        parse = (ijson.get_backend(backend) if backend else ijson).basic_parse
    except ImportError:
        return _read_whole(Path(path), path)
    with open(path, "rb") as fh:
        chunks = _Chunks(fh)
        events = parse(chunks, use_float=True, buf_size=1 << 20)
        try:
            ev, v = next(events)
            d = _value(ev, v, events, "top")
            for _ in events:                   # trailing text
                raise _NotJSON("more than one value")
        except (ijson.JSONError, UnicodeDecodeError, RecursionError, StopIteration) as e:
            text = str(e).strip().split("\n")[0].strip() or type(e).__name__   # yajl's first line
            raise _NotJSON(f"{text} (within the first {chunks.seen} bytes)") from None
    return d
