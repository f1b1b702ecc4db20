"""The network file of SPEC section 6 (``schema: "condcheck.network/1"``): read and write.

Every number is ``float.hex()`` of its exact value.  ``"semantics"``: ``"finite"`` or ``"ieee"``
(SPEC 2.1, ``condcheck.ieee``); a file without it is read as ``"finite"``.  Weights are written as the dense list of rows the
SPEC shows; a matrix with more than ``DENSE_LIMIT`` entries is written as ``"weight_sparse"``:
``{"shape": [outputs, inputs], "entries": [[row, column, hex], ...]}`` (rows, then columns, ascending),
which readers must accept in place of ``"weight"``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .errors import CondcheckError
from .network import Layer, Network

SCHEMA = "condcheck.network/1"
DENSE_LIMIT = 1 << 20


@dataclass
class Claim:
    """What a network file claims: values and AD gradients at listed inputs (SPEC 6).

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


def _unhex(s, where: str) -> float:
    try:
        v = float.fromhex(s) if isinstance(s, str) else float(s)
    except (ValueError, TypeError):
        raise CondcheckError(f"{where}: {s!r} is not a number in float.hex() form") from None
    if not np.isfinite(v):
        raise CondcheckError(f"{where}: {s!r} is not finite")
    return v


def network_to_dict(net: Network, claim: Claim | None = None) -> dict:
    layers = []
    for layer in net.layers:
        rows, cols = layer.shape
        entry: dict = {}
        if rows * cols <= DENSE_LIMIT:
            dense = layer.weight.toarray()
            entry["weight"] = [[_hex(w) for w in row] for row in dense]
        else:
            coo = layer.weight.tocoo()
            order = np.lexsort((coo.col, coo.row))
            entry["weight_sparse"] = {"shape": [rows, cols],
                                      "entries": [[int(coo.row[k]), int(coo.col[k]), _hex(coo.data[k])] for k in order]}
        entry["bias"] = [_hex(b) for b in layer.bias]
        layers.append(entry)
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


def _array(obj, where: str) -> np.ndarray:
    try:
        arr = np.array(obj, dtype=object)
    except ValueError:
        raise CondcheckError(f"{where}: ragged list") from None
    flat = [_unhex(s, where) for s in arr.ravel()]
    return np.array(flat, dtype=np.float64).reshape(arr.shape)


def network_from_dict(d: dict) -> tuple[Network, Claim | None]:
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise CondcheckError(f"not a condcheck network file: expected \"schema\": \"{SCHEMA}\"")
    for key in ("format", "activation", "layers"):
        if key not in d:
            raise CondcheckError(f"network file is missing {key!r}")
    layers = []
    for l, entry in enumerate(d["layers"], 1):
        where = f"layer {l}"
        bias = _array(entry.get("bias", []), f"{where} bias")
        if "weight" in entry:
            w = _array(entry["weight"], f"{where} weight")
            if w.ndim != 2:
                raise CondcheckError(f"{where} weight must be a list of rows")
            weight = sp.csr_matrix(w)
        elif "weight_sparse" in entry:
            ws = entry["weight_sparse"]
            rows, cols = ws["shape"]
            ent = ws["entries"]
            r = np.array([e[0] for e in ent], dtype=np.int64)
            c = np.array([e[1] for e in ent], dtype=np.int64)
            v = np.array([_unhex(e[2], f"{where} weight") for e in ent], dtype=np.float64)
            weight = sp.csr_matrix((v, (r, c)), shape=(rows, cols))
        else:
            raise CondcheckError(f"{where} has neither 'weight' nor 'weight_sparse'")
        layers.append(Layer(weight, bias))
    # "semantics" (SPEC 2.1): "finite" (the default, also for files written before the option) or "ieee".
    net = Network(d["format"], d["activation"], layers, d.get("implementation", "exact"),
                  int(d.get("input_dim", 0) or layers[0].shape[1]), d.get("semantics", "finite"))
    claim = None
    if d.get("claim"):
        c = d["claim"]
        try:
            claim = Claim(int(c["theorem"]), _array(c["points"], "claim points"), _array(c["values"], "claim values"),
                          _array(c["upstream"], "claim upstream"), _array(c["gradients"], "claim gradients"))
        except KeyError as e:
            raise CondcheckError(f"claim is missing {e.args[0]!r}") from None
    return net, claim


def save_network(path, net: Network, claim: Claim | None = None) -> None:
    Path(path).write_text(json.dumps(network_to_dict(net, claim)))


def load_network(path) -> tuple[Network, Claim | None]:
    p = Path(path)
    if not p.exists():
        raise CondcheckError(f"network file {str(path)!r} does not exist")
    try:
        d = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise CondcheckError(f"network file {str(path)!r} is not valid JSON: {e}") from None
    return network_from_dict(d)
