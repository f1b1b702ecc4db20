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
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
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
        d = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, RecursionError) as e:
        raise CondcheckError(f"cannot read network file {str(path)!r}: {e}") from None
    except json.JSONDecodeError as e:
        raise CondcheckError(f"network file {str(path)!r} is not valid JSON: {e}") from None
    return network_from_dict(d)
