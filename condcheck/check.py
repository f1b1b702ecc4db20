"""``check_activation``: the verdict on Conditions 1-3 for one (activation, format, implementation).

Formats of at most 16 bits are checked exhaustively (every value enumerated); wider formats
symbolically (a witness checked with certain rounding proves "holds"; otherwise "undecided"), or, with
``method="exhaustive"``, by enumerating every value of a format of at most 32 bits (float32) in chunks
on a Dask cluster (:mod:`conditions.chunked`, :mod:`condcheck.distributed`), for any implementation.

Condition 1 is condcheck's own statement (``conditions.condition1``: the dead tail and the states the
Theorem 5 constructor gates with); it is decided exhaustively for formats of at most 16 bits and
symbolically for wider ones (the dead tail by the certified range check of ``conditions._tail``, the
existence clauses by witness points or, failing those, by the certified scan of ``conditions._exists``,
which finds a witness or refutes the clause).  Conditions 2 and 3: ``conditions.condition2``,
``conditions.condition3``.  ``method="symbolic"`` runs the symbolic checkers on a small format too.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from conditions import condition1, condition2, condition3

from .activations import PAPER_ACTIVATIONS, get_activation
from .errors import CondcheckError
from .formats import get_format
from .paper import depth_bounds, paper_constants, theorem_branch
#: Conditions 1-3 are checked under finite semantics only: the IEEE-through-Inf option (condcheck.ieee)
#: applies to networks (``Network.semantics``, ``condcheck verify``), not to these checks.
from .recheck.schema import SEMANTICS
from .rounded_activation import get_rounded

SCHEMA = "condcheck.check/2"


@dataclass
class CheckResult:
    activation: str
    format: str
    implementation: str
    holds: bool | None
    conditions: dict                 # "1", "2", "3" -> dict (Verdict.to_dict() or the pending record)
    branch: str
    constants: dict
    depth_bounds: dict
    seconds: float
    semantics: str = SEMANTICS
    verdicts: dict = field(default_factory=dict, repr=False)   # "1", "2", "3" -> the Verdict objects
    #: Where sigma~ and sigma~' came from when they are not certified (callable plug-in, torch table).
    source_note: str = ""
    #: How a chunked exhaustive check (beyond 16 bits) enumerated the format (conditions.chunked); {} otherwise.
    enumeration: dict = field(default_factory=dict)

    def to_certificate(self) -> dict:
        """The condition certificate (docs/file-formats.md; ``schema: "condcheck.check/2"``, every field a statement
        ``condcheck recheck`` re-derives: :mod:`condcheck.recheck.schema`)."""
        from .certificate import certificate
        return certificate(self)

    def text(self) -> str:
        verdict = {True: "HOLDS", False: "FAILS", None: "UNDECIDED"}[self.holds]
        lines = [f"{self.activation} on {self.format} ({self.implementation} implementation): {verdict}",
                 f"semantics: {self.semantics}"]
        if self.source_note:
            lines.append(f"sigma~ and sigma~': {self.source_note}")
        if self.enumeration:
            e = self.enumeration
            lines.append(f"enumerated: {e['points']:,} values in {e['chunks']:,} chunks on {e['engine']}")
        for key in ("1", "2", "3"):
            v = self.verdicts.get(key)
            if v is None:
                lines.append(f"Condition {key}: undecided -- {self.conditions[key]['reason']}")
            else:
                lines.append(v.summary())
        c = self.constants
        lines.append(f"theorem branch: {self.branch}")
        lines.append(f"M_sigma = {c['M_sigma']}, H_sigma = {c['H_sigma']}"
                     + ("" if self.activation in PAPER_ACTIVATIONS else " (not stated by the paper for this activation)"))
        d = self.depth_bounds
        lines.append(f"depth bounds: Theorem 5 L >= {d['theorem5']['openreview']} (OpenReview) / "
                     f"{d['theorem5']['arxiv_v2']} (arXiv v2); Theorem 7 L >= {d['theorem7']['openreview']} / "
                     f"{d['theorem7']['arxiv_v2']}")
        lines.append(f"time: {self.seconds:.2f} s")
        return "\n".join(lines)


METHODS = ("auto", "exhaustive", "symbolic")
#: the widest exponent field check accepts (float64's; the paper's constants are computed in float64)
MAX_EXPONENT_BITS = 11


def check_activation(activation, format, implementation: str = "exact", method: str = "auto", *,
                     scheduler: str | None = None, workers: int | None = None, progress=None) -> CheckResult:
    """Decide Conditions 1-3 for an activation on a format, with witnesses and evidence.

    ``method``: "auto" (exhaustive for formats of at most 16 bits, symbolic beyond), "exhaustive" (every
    value; beyond 16 bits, up to 32, in chunks on Dask: a LocalCluster of ``workers`` processes, default
    all cores, or the cluster at ``scheduler`` "tcp://HOST:PORT"; ``progress`` a bar on stderr, default
    when stderr is a terminal) or "symbolic" (any format; on small formats it is the cross-check of the
    exhaustive checker).

    >>> from condcheck import check_activation
    >>> res = check_activation("relu", "float8_e4m3")
    >>> res.holds, [res.conditions[k]["verdict"] for k in "123"]
    (True, ['holds', 'holds', 'holds'])
    >>> check_activation("sigmoid", "float4_e2m1fn").holds
    False
    """
    t0 = time.perf_counter()
    if method not in METHODS:
        raise CondcheckError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    act = get_activation(activation)
    fmt = get_format(format)
    if fmt.E > MAX_EXPONENT_BITS:
        raise CondcheckError(f"format {fmt.name!r} has E = {fmt.E} exponent bits; check supports formats with at "
                             f"most {MAX_EXPONENT_BITS} (float64's exponent range), e.g. b60_11")
    rounded = get_rounded(act, fmt, implementation)
    exhaustive = fmt.bits <= 16 if method == "auto" else method == "exhaustive"
    verdicts, enumeration = {}, {}
    if exhaustive and fmt.bits > 16:
        from conditions.chunked import check_chunked
        verdicts, enumeration = check_chunked(rounded, scheduler=scheduler, workers=workers, progress=progress)
    for key, module in (("1", condition1), ("2", condition2), ("3", condition3)):
        if key not in verdicts:
            verdicts[key] = module.check_exhaustive(rounded) if exhaustive else module.check_symbolic(rounded)
    note = rounded.source_note
    if note:
        for v in verdicts.values():
            v.evidence = f"{note}; {v.evidence}" if v.evidence else note
    conditions = {k: v.to_dict() for k, v in verdicts.items()}
    states = [conditions[k]["holds"] for k in ("1", "2", "3")]
    holds = False if False in states else (None if None in states else True)
    return CheckResult(act.name, fmt.name, rounded.implementation, holds, conditions, theorem_branch(fmt),
                       paper_constants(act.name, fmt), depth_bounds(fmt), time.perf_counter() - t0,
                       verdicts=verdicts, source_note=note, enumeration=enumeration)
