"""Check a network's claim exactly, on every listed input (docs/file-formats.md).

A claim holds when for every point the forward value equals the claimed value and, for every listed
upstream value, ``D_(f,x)(y)`` equals the claimed gradient, by value (``+0 == -0``), with no overflow
or NaN anywhere -- under the network's semantics (``Network.semantics``: "finite", or "ieee", where
Inf may pass through but NaN, a non-finite value or a non-finite gradient fails; ``condcheck.ieee``).
``method`` names the interpreter (``condcheck.interpreters``, one interface, every one tested against
the reference): "dense" (every neuron, vectorized; "fast" is its old name), "sparse" (the same numbers
computed on the active neurons only: Theorem 7 networks, where almost every neuron is dead at a given x,
and Theorem 5 ones; finite semantics), "tables" (the same values on the
format's RN index tables: finite semantics, formats of at most 1024 values; zero signs are not kept,
and the comparison is by value), "exact" (the exact rational reference: slow; the standalone re-check),
or any other registered name.  "sparse" and "tables" fall back to "dense" where they do not apply;
"auto" (``condcheck verify``'s default) takes "tables" for small networks where it applies (it loads
no compiled code: 0.1 s on a float8 box network, where loading the sparse one's kernels costs about
1 s of CPU) and "sparse" otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import CondcheckError, NetworkOverflowError
from .interpreters import get_interpreter, interpreter_names
from .netfile import Claim
from .network import Network, first_not_in_format

#: interpreters that fall back to the dense one where they do not apply
FALLS_BACK = ("sparse", "tables")
#: "auto" takes the tables interpreter up to this many (point, upstream value, nonzero parameter) triples
AUTO_TABLES_WORK = 10_000_000


@dataclass
class VerifyResult:
    ok: bool
    points: int
    value_checks: int
    gradient_checks: int
    value_failures: int = 0
    gradient_failures: int = 0
    first_failure: dict | None = None
    method: str = "dense"
    notes: list[str] = field(default_factory=list)
    semantics: str = "finite"
    semantics_text: str = ""

    def summary(self) -> str:
        head = "VERIFIED" if self.ok else "FAILED"
        if self.first_failure and self.first_failure.get("kind") == "overflow":
            s = (f"{head}: {self.points} points; the interpreter stopped at a non-finite value before the "
                 f"claim was compared ({self.method} interpreter)")
        else:
            s = (f"{head}: {self.points} points; values {self.value_checks - self.value_failures}/"
                 f"{self.value_checks} equal; AD gradients {self.gradient_checks - self.gradient_failures}/"
                 f"{self.gradient_checks} equal ({self.method} interpreter)")
        s += f"\nsemantics: {self.semantics} -- {self.semantics_text}"
        if self.first_failure:
            s += "\nfirst failure: " + ", ".join(f"{k}={v}" for k, v in self.first_failure.items())
        return s

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def merged(cls, parts) -> "VerifyResult":
        """One result from the results of consecutive parts of a claim's points (a construction verifies
        each chunk's points in its own process): the counts add up, and the first failure is the first
        part's that has one, as one pass over every point would find it (which also stops at an overflow,
        where a part's result compares nothing)."""
        parts = list(parts)
        if not parts:
            raise CondcheckError("no verification results to merge")
        return cls(ok=all(p.ok for p in parts), points=sum(p.points for p in parts),
                  value_checks=sum(p.value_checks for p in parts),
                  gradient_checks=sum(p.gradient_checks for p in parts),
                  value_failures=sum(p.value_failures for p in parts),
                  gradient_failures=sum(p.gradient_failures for p in parts),
                  first_failure=next((p.first_failure for p in parts if p.first_failure), None),
                  method=", ".join(dict.fromkeys(p.method for p in parts)),
                  notes=[n for p in parts for n in p.notes], semantics=parts[0].semantics,
                  semantics_text=parts[0].semantics_text)


def _check_claim_against(net: Network, claim: Claim):
    if claim.points.shape[1] != net.input_dim:
        raise CondcheckError(f"claim points have {claim.points.shape[1]} coordinates, the network takes {net.input_dim}")
    for name, arr in (("point", claim.points), ("value", claim.values), ("upstream value", claim.upstream),
                      ("gradient", claim.gradients)):
        bad = first_not_in_format(arr, net.format)
        if bad is not None:
            raise CondcheckError(f"claim {name} {float(arr.ravel()[bad])!r} is not a value of {net.format.name}")


def _fmt_point(p) -> str:
    return "(" + ", ".join(float(v).hex() for v in np.atleast_1d(p)) + ")"


def auto_method(net: Network, claim: Claim) -> str:
    """The interpreter "auto" takes for this claim: "tables" for small work where it applies, else "sparse"."""
    K = claim.upstream.shape[0] if claim.theorem == 7 else 1
    work = claim.points.shape[0] * K * net.nonzero_parameters
    return "tables" if work <= AUTO_TABLES_WORK and get_interpreter("tables").supports(net) else "sparse"


def verify(net: Network, claim: Claim | None, method: str = "dense", progress=None) -> VerifyResult:
    """Evaluate ``net`` on every point of ``claim`` with AD, exactly, and compare values and gradients by value.

    ``method``: an interpreter name ("exact" is the rational reference), "auto" (the tables interpreter for
    small work, else the sparse one) or "fast" (the dense one).  ``progress(done, total)`` follows the points.

    >>> from condcheck import construct_theorem5, verify
    >>> net, claim = construct_theorem5("relu", "float8_e4m3", [[-1.0], [0.5]], [0.25, 2.0], [1.0, 0.5],
    ...                                 [[3.0], [-0.5]], verify_result=False)
    >>> res = verify(net, claim, method="auto")
    >>> res.ok, res.method
    (True, 'tables')
    >>> print(res.summary().splitlines()[0])
    VERIFIED: 2 points; values 2/2 equal; AD gradients 2/2 equal (tables interpreter)
    """
    if not isinstance(net, Network):
        raise CondcheckError(f"verify needs a Network (e.g. from load_network), not a {type(net).__name__}")
    if claim is None:
        raise CondcheckError("the network has no claim: nothing to verify")
    if not isinstance(claim, Claim):
        raise CondcheckError(f"verify needs a Claim (e.g. from load_network), not a {type(claim).__name__}")
    if method == "fast":
        method = "dense"
    if method == "auto":
        method = auto_method(net, claim)
    if method not in interpreter_names():
        raise CondcheckError(f"verification method must be one of {', '.join(map(repr, interpreter_names()))} "
                             f"or 'auto', not {method!r}")
    interpreter = get_interpreter(method)
    if method in FALLS_BACK and not interpreter.supports(net):
        method, interpreter = "dense", get_interpreter("dense")
    _check_claim_against(net, claim)
    N, d = claim.points.shape
    K = claim.upstream.shape[0] if claim.theorem == 7 else 1
    Y = claim.upstream.reshape(N, 1) if claim.theorem == 5 else np.broadcast_to(claim.upstream, (N, K))
    want_g = claim.gradients.reshape(N, K, d)
    res = VerifyResult(ok=False, points=N, value_checks=N, gradient_checks=N * K, method=method,
                       semantics=net.semantics, semantics_text=net.semantics_text)
    try:
        values, grads = interpreter.evaluate(net, claim.points, np.ascontiguousarray(Y), progress=progress)
    except NetworkOverflowError as e:
        res.first_failure = {"kind": "overflow", "message": str(e)}
        res.notes.append(str(e))
        return res
    vbad = values != claim.values
    gbad = np.any(grads != want_g, axis=2)
    res.value_failures = int(vbad.sum())
    res.gradient_failures = int(gbad.sum())
    if vbad.any() or gbad.any():
        nv = int(np.flatnonzero(vbad)[0]) if vbad.any() else N
        ng = int(np.argwhere(gbad)[0][0]) if gbad.any() else N
        if nv <= ng:
            res.first_failure = {"kind": "value", "point": _fmt_point(claim.points[nv]),
                                 "got": float(values[nv]).hex(), "claimed": float(claim.values[nv]).hex()}
        else:
            k = int(np.flatnonzero(gbad[ng])[0])
            res.first_failure = {"kind": "gradient", "point": _fmt_point(claim.points[ng]),
                                 "upstream": float(Y[ng, k]).hex(), "got": _fmt_point(grads[ng, k]),
                                 "claimed": _fmt_point(want_g[ng, k])}
        return res
    res.ok = True
    return res
