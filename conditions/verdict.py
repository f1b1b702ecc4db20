"""Typed records shared by every condition checker.

A :class:`Verdict` is what ``check_exhaustive`` and ``check_symbolic`` return:

* ``holds``: ``True`` (a witness was found and every clause re-checked at it with exact rationals),
  ``False`` (from an exhaustive check: every candidate of the format was examined and none
  satisfies the condition; or from a symbolic check with a certified counterexample, e.g. Condition 1's
  value at -Omega that is not dead, or a refutation cover (``counterexample["refutation"]``,
  :mod:`conditions._exists`) showing that no value of the format satisfies an existence clause, or a
  pair cover (:mod:`conditions._pairs`) showing that no pair of values satisfies Condition 2's
  clauses up to the failing one), or
  ``None`` (undecided: the symbolic search found no witness and could not refute the clause, which
  proves nothing, since the conditions are existential).
* ``method``: ``"exhaustive"`` or ``"symbolic"``.
* ``witness``: a condition-specific dataclass (see ``conditions.condition2`` / ``condition3``) or None.
* ``failing_clause``: for ``holds=False``, the first clause, in the order of the statement, that no
  candidate satisfies together with the clauses before it.
* ``counterexample``: for ``holds=False``, a dict illustrating the failure (typically the candidate
  that satisfied the most clauses, and why it fails the next one).
* ``evidence``: what was enumerated or checked, with counts.
* ``reason``: why the verdict is undecided (``holds=None``), else None.
* ``semantics``: the floating-point semantics used.  All checks here use the default semantics of
  docs/semantics.md: inputs are finite values of the format, and an overflow of sigma~ or sigma~' at a point
  disqualifies that point (Inf/NaN are never used).

Values in witnesses are reported with :func:`exact_value`: the exact value as a hexadecimal float and
as a fraction, and the bit pattern in the format, so anyone can re-check them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional

from condcheck.formats import Format

SEMANTICS_FINITE = ("finite: points are finite values of the format; a point where sigma~ or sigma~' "
                    "overflows (Inf/NaN) is not admissible")


def hex_text(v) -> str:
    """The exact value of a dyadic rational as a hexadecimal float (``float.hex`` when the value is a
    float64, otherwise ``[-]0x<integer>p<exponent>`` computed exactly)."""
    q = Fraction(v)
    try:
        f = float(q)
        if Fraction(f) == q:
            return f.hex()
    except OverflowError:
        pass
    d = q.denominator
    if d & (d - 1):
        raise ValueError(f"{q} is not a dyadic rational")
    n = abs(q.numerator)
    e = -(d.bit_length() - 1)
    while n and n % 2 == 0:
        n //= 2
        e += 1
    return f"{'-' if q < 0 else ''}0x{n:x}p{e:+d}"


def exact_value(v, fmt: Format) -> dict:
    """A value of ``fmt`` reported exactly: hex float, fraction string and bit pattern."""
    q = Fraction(v)
    return {"hex": hex_text(q), "fraction": str(q), "bits": fmt.bits_text(q)}


def _plain(obj: Any):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, Fraction):
        return str(obj)
    return obj


@dataclass
class Verdict:
    """The outcome of checking one condition for one (activation, format, implementation)."""

    condition: int
    activation: str
    format: str
    implementation: str
    method: str                                   # "exhaustive" | "symbolic"
    holds: Optional[bool]                          # True / False / None (undecided)
    witness: Any = None
    failing_clause: Optional[str] = None
    counterexample: Optional[dict] = None
    evidence: str = ""
    reason: Optional[str] = None
    semantics: str = SEMANTICS_FINITE
    seconds: float = field(default=0.0, compare=False)

    def __post_init__(self):
        if self.method not in ("exhaustive", "symbolic"):
            raise ValueError(f"method must be 'exhaustive' or 'symbolic', not {self.method!r}")
        if self.holds is False and self.method != "exhaustive" and not self.counterexample:
            raise ValueError("a symbolic check can conclude that a condition fails only with a certified "
                             "counterexample")
        if self.holds is True and self.witness is None:
            raise ValueError("a 'holds' verdict needs a witness")
        if self.holds is None and not self.reason:
            raise ValueError("an undecided verdict needs a reason")

    @property
    def verdict_text(self) -> str:
        return {True: "holds", False: "fails", None: "undecided"}[self.holds]

    def to_dict(self) -> dict:
        """Plain data (JSON-ready); the witness as its exact report (values, hex, bit patterns)."""
        d = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "witness"}
        d["verdict"] = self.verdict_text
        w = self.witness
        d["witness"] = w.report() if (w is not None and hasattr(w, "report")) else _plain(w)
        return d

    def summary(self) -> str:
        head = (f"Condition {self.condition} for {self.activation} in {self.format} "
                f"({self.implementation}, {self.method}): {self.verdict_text}")
        if self.holds:
            return f"{head}; witness {self.witness.short()}"
        if self.holds is False:
            return f"{head}; failing clause {self.failing_clause}"
        return f"{head}; {self.reason}"
