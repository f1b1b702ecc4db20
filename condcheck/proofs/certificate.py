"""What a condition certificate claims, read once (the one place that knows the certificate's layout).

A certificate (``condcheck check ACT FMT --json``, schema ``condcheck.check/2``, every field documented
in :mod:`condcheck.recheck.schema`) is a list of statements: per condition, a verdict and, where it
holds, a witness with the rounded values it claims (each an exact value record whose ``hex`` is read).
:func:`read_claims` turns it into a :class:`Claims` record of exact values (Fractions), which the Coq
generator states and proves.  Everything the generator needs from a certificate goes through this
module, so that a new schema version is one change here.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional

from condcheck.errors import CondcheckError
from condcheck.formats import Format, get_format
from condcheck.hexfloat import parse_exact
from condcheck.recheck.schema import SCHEMA


@dataclass(frozen=True)
class Witness1:
    z_dead: Fraction
    L: Fraction
    live: Fraction
    sigma_live: Fraction
    constant: Fraction
    sigma_constant: Fraction
    zero: Fraction
    pass_state: Fraction
    dsigma_pass: Fraction
    tail_cover: tuple = ()      # ((a, b), ...): the certified checker's cover of the dead tail (symbolic method)


@dataclass(frozen=True)
class Witness2:
    delta_0: Fraction
    delta_1: Fraction
    sigma_0: Fraction
    sigma_1: Fraction
    dsigma_0: Fraction
    dsigma_1: Fraction
    eta_0: int                  # 1 when the certificate says "unbounded" (sigma~'(delta_0) = 0, eta_0 null)
    eta_0_unbounded: bool
    eta_1: int
    eta_2: int
    k: int


@dataclass(frozen=True)
class Witness3:
    route: str                  # "a" or "b"
    zeta: Fraction
    x: Optional[Fraction]
    s: Fraction
    dsigma_at: Fraction
    sigma_minus_s: Fraction
    sigma_0: Fraction
    sigma_s: Fraction


@dataclass(frozen=True)
class Claims:
    """The statements of one certificate: verdict per condition (True/False) and the witnesses."""

    activation: str
    format: Format
    implementation: str
    holds: dict                          # "1", "2", "3" -> bool
    witnesses: dict = field(default_factory=dict)   # "1" -> Witness1, ... for conditions that hold

    @property
    def overall(self) -> bool:
        return all(self.holds.values())


def load_certificate(path) -> dict:
    """The JSON object of a certificate file, or a one-line error."""
    try:
        with open(path) as fh:
            cert = json.load(fh)
    except OSError as e:
        raise CondcheckError(f"cannot read certificate {str(path)!r}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise CondcheckError(f"certificate {str(path)!r} is not JSON: {e}") from None
    if not isinstance(cert, dict):
        raise CondcheckError(f"certificate {str(path)!r} is not a JSON object")
    return cert


def _value(w: dict, key: str, what: str) -> Fraction:
    """An exact value record {"hex", "fraction", "bits"} of the witness, by its ``hex`` (recheck, run by
    the precheck, also holds the other two to the same value)."""
    v = w.get(key)
    if not isinstance(v, dict) or "hex" not in v:
        raise CondcheckError(f"certificate: {what} {key!r} is not an exact value record {{hex, fraction, bits}}")
    return parse_exact(v["hex"], f"certificate: {what} {key!r}")


def _int(w: dict, key: str, what: str) -> int:
    v = w.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise CondcheckError(f"certificate: {what} {key!r} = {v!r} is not an integer")
    return v


def _tail_cover(w: dict, what: str) -> tuple:
    """The intervals of ``tail_cover`` ("[a, b] [a, b] ..."), or () when the witness has none."""
    text = w.get("tail_cover")
    if text is None:
        return ()
    items = _COVER_ITEM.findall(text) if isinstance(text, str) else []
    if not items or " ".join(f"[{a}, {b}]" for a, b in items) != text:
        raise CondcheckError(f"certificate: {what} 'tail_cover' is not a list of intervals [a, b]")
    return tuple((parse_exact(a, f"certificate: {what} tail_cover"), parse_exact(b, f"certificate: {what} tail_cover"))
                 for a, b in items)


_COVER_ITEM = re.compile(r"\[([^,\[\]]+), ([^,\[\]]+)\]")


def _witness1(w: dict) -> Witness1:
    what = "Condition 1 witness"
    return Witness1(*(_value(w, k, what) for k in ("z_dead", "L", "live", "sigma(live)", "constant",
                                                     "sigma(constant)", "zero", "pass", "dsigma(pass)")),
                    tail_cover=_tail_cover(w, what))


def _witness2(w: dict) -> Witness2:
    what = "Condition 2 witness"
    unbounded = bool(w.get("eta_0_unbounded"))
    eta_0 = 1 if unbounded else _int(w, "eta_0", what)
    return Witness2(*(_value(w, k, what) for k in ("delta_0", "delta_1", "sigma(delta_0)", "sigma(delta_1)",
                                                     "dsigma(delta_0)", "dsigma(delta_1)")),
                    eta_0, unbounded, _int(w, "eta_1", what), _int(w, "eta_2", what), _int(w, "k", what))


def _witness3(w: dict) -> Witness3:
    what = "Condition 3 witness"
    route = w.get("route")
    if route not in ("a", "b"):
        raise CondcheckError(f"certificate: {what} route {route!r} is not 'a' or 'b'")
    x = _value(w, "x", what) if route == "b" else None
    return Witness3(route, _value(w, "zeta", what), x, _value(w, "s", what),
                    _value(w, "dsigma(0)" if route == "a" else "dsigma(x)", what),
                    _value(w, "sigma(-s)", what), _value(w, "sigma(0)", what), _value(w, "sigma(s)", what))


_READERS = {"1": _witness1, "2": _witness2, "3": _witness3}


def read_claims(cert: dict) -> Claims:
    """The claims of a certificate (a dict as ``condcheck check --json`` writes it), checked for shape."""
    if not isinstance(cert, dict):
        raise CondcheckError("a certificate is a JSON object (as `condcheck check ACT FMT --json` writes)")
    schema = cert.get("schema")
    if schema != SCHEMA:
        raise CondcheckError(f"not a condition certificate: schema {schema!r}, expected {SCHEMA!r} "
                             f"(write one with condcheck check ACT FMT --json)")
    act, fmt_name = cert.get("activation"), cert.get("format")
    if not isinstance(act, str) or not isinstance(fmt_name, str):
        raise CondcheckError("certificate: 'activation' and 'format' must be names")
    fmt = get_format(fmt_name)
    impl = cert.get("implementation", "exact")
    conds = cert.get("conditions")
    if not isinstance(conds, dict):
        raise CondcheckError("certificate: 'conditions' is missing")
    holds, witnesses = {}, {}
    for k in ("1", "2", "3"):
        c = conds.get(k)
        if not isinstance(c, dict):
            raise CondcheckError(f"certificate: no verdict for Condition {k}")
        h = c.get("holds")
        if h is None:
            raise CondcheckError(f"certificate: Condition {k} is undecided; only decided verdicts can be proved")
        if not isinstance(h, bool):
            raise CondcheckError(f"certificate: Condition {k} 'holds' = {h!r} is not true, false or null")
        holds[k] = h
        if h:
            w = c.get("witness")
            if not isinstance(w, dict):
                raise CondcheckError(f"certificate: Condition {k} holds but gives no witness")
            witnesses[k] = _READERS[k](w)
    overall = cert.get("holds")
    if overall is not None and overall != all(holds.values()):
        raise CondcheckError(f"certificate: overall 'holds' = {overall!r} is not the conjunction of the three verdicts")
    return Claims(act, fmt, impl, holds, witnesses)
