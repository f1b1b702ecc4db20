"""Condition 1's dead tail on a wide format: interval facts chained from -Omega to z_d.

A format of more than 8 bits is not enumerated inside Coq.  Its dead tail (sigma~ = L, sigma~' = 0 at
every value z <= z_d) is proved from facts about whole intervals of reals, chained without a gap
(``coq/Cover.v``: ``chain_b``, ``dead_cover_sound``).  The pieces come from the certified checker's
cover (the certificate's ``tail_cover``, or the symbolic method's when the certificate has none): the
cover's interval [a_i, b_i] becomes the piece [b_(i-1), b_i] (the first
starts at -Omega), so that consecutive pieces share an end and cover every real, not only the values
of the format.

Each piece is proved by ``interval`` on the activation written in e = exp(k x) (``Cover.v``:
``tanh_e``, ``sigmoid_e``, ...), with 0 <= e <= B, B a dyadic above exp(k b) but never below
2^-cap: ``interval`` adds exactly, so 1 + exp(-2^127) would be out of its reach, while 1 + 2^-cap
is not.  Before a piece is written it is checked here with mpmath's interval arithmetic on the same
expression, at the precision Coq will use; a piece that fails is split at its middle value (by bit
pattern) until each part passes (one that cannot be split is written as it is: Coq then judges it).
ReLU's tail is exact (ReLU(x) = ReLU'(x) = 0 for x <= 0); GELU has no such form (its tail needs erf
to within 2^-150 and beyond, far below the bounds ``ErfBounds.v`` gives), so its dead tail is a
hypothesis of the theorem (:data:`TAIL_FORMS`).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

import mpmath

from condcheck.errors import FormatOverflowError
from condcheck.formats import Format
from condcheck.rounding import midpoints_around, round_fraction

from .dyadic import term


@dataclass(frozen=True)
class TailForm:
    k: int                  # e = exp(k x)
    lemmas: tuple           # Cover.v lemmas rewriting sigma, sigma' into e (and x)
    side: bool              # the lemma needs x <= 0 (ELU)
    coq: tuple              # Coq names of sigma and sigma'
    iv: tuple               # the same two expressions on mpmath intervals, (x, e) -> value


#: activations whose dead tail is proved by ``interval`` (relu: exactly; gelu: a hypothesis)
TAIL_FORMS = {
    "tanh": TailForm(2, ("tanh_e", "dtanh_e"), False, ("tanh", "dtanh"),
                     (lambda x, e: 1 - 2 / (e + 1), lambda x, e: 4 * e / (e + 1) ** 2)),
    "sigmoid": TailForm(1, ("sigmoid_e", "dsigmoid_e"), False, ("sigmoid", "dsigmoid"),
                        (lambda x, e: e / (e + 1), lambda x, e: e / (e + 1) ** 2)),
    "swish": TailForm(1, ("swish_e", "dswish_e"), False, ("swish", "dswish"),
                      (lambda x, e: x * e / (e + 1), lambda x, e: e / (e + 1) + x * e / (e + 1) ** 2)),
    "elu": TailForm(1, ("elu_e", "delu_e"), True, ("elu", "delu"),
                    (lambda x, e: e - 1, lambda x, e: e)),
}
#: working precisions tried for a piece, in bits
PRECISIONS = (64, 128, 256)
#: pieces a cover may be split into before giving up
MAX_PIECES = 400


@dataclass(frozen=True)
class Piece:
    lo: Fraction
    hi: Fraction
    bound: Optional[Fraction]       # B >= exp(k hi) (None: relu, exact)
    prec: int


def rounding_bounds(v: Fraction, fmt: Format) -> tuple[Fraction, Fraction]:
    """Dyadics lo < v < hi such that RN maps every real of [lo, hi] to v: the rounding boundaries, or
    just inside them where a tie goes to the neighbour."""
    m_lo, m_hi = midpoints_around(v, fmt)

    def rounds_to_v(q):
        try:
            return round_fraction(q, fmt) == v
        except FormatOverflowError:
            return False
    lo = m_lo if rounds_to_v(m_lo) else m_lo + (v - m_lo) / 2 ** 20
    hi = m_hi if rounds_to_v(m_hi) else m_hi - (m_hi - v) / 2 ** 20
    return lo, hi


def _cap(fmt: Format) -> int:
    """2^-cap times Omega is far below half the smallest subnormal."""
    return (fmt.e_max + 1) + (fmt.M - fmt.e_min) + 64


def exp_bound(k: int, hi: Fraction, prec: int, fmt: Format) -> Fraction:
    """A dyadic B >= exp(k hi), about 2^-(prec - 24) above it, never below 2^-cap."""
    with mpmath.workprec(prec + 32):
        y = mpmath.exp(k * mpmath.mpf(hi.numerator) / hi.denominator) * (1 + mpmath.mpf(2) ** (24 - prec))
        floor = mpmath.mpf(2) ** -_cap(fmt)
        if y <= floor:
            return Fraction(1, 2 ** _cap(fmt))
        e = int(mpmath.floor(mpmath.log(y, 2))) - (prec - 16)
        return Fraction(int(mpmath.ceil(y / mpmath.mpf(2) ** e))) * Fraction(2) ** e


def _iv(q: Fraction, prec: int):
    with mpmath.workprec(prec + 64):
        return mpmath.mpf(q.numerator) / q.denominator


def piece_ok(form: TailForm, lo: Fraction, hi: Fraction, B: Fraction, targets, prec: int) -> bool:
    """Does interval arithmetic at ``prec`` bits put both forms inside their rounding bounds?"""
    ctx = mpmath.iv
    old = ctx.prec
    ctx.prec = prec
    try:
        x = ctx.mpf([_iv(lo, prec), _iv(hi, prec)])
        e = ctx.mpf([0, _iv(B, prec)])
        for f, (t_lo, t_hi) in zip(form.iv, targets):
            r = f(x, e)
            if not (r.a >= _iv(t_lo, prec) and r.b <= _iv(t_hi, prec)):
                return False
        return True
    finally:
        ctx.prec = old


def _middle(fmt: Format, lo: Fraction, hi: Fraction) -> Optional[Fraction]:
    """A value of F strictly between lo and hi (negative), by bit pattern; None if there is none."""
    a, b = fmt.to_bits(lo), fmt.to_bits(hi)
    m = fmt.from_bits((a + b) // 2)
    return m if lo < m < hi else None


def pieces(activation: str, fmt: Format, cover, z_dead: Fraction, L: Fraction) -> list[Piece]:
    """The chain of pieces proving the dead tail from -Omega to ``z_dead`` (values L and 0)."""
    om = fmt.max
    ends = [b for _, b in cover if b <= z_dead]
    if not ends or ends[-1] != z_dead:
        ends.append(z_dead)
    if activation == "relu":
        return [Piece(-om, z_dead, None, 0)]
    form = TAIL_FORMS[activation]
    targets = (rounding_bounds(L, fmt), rounding_bounds(Fraction(0), fmt))
    out, lo = [], -om
    todo = list(reversed(ends))
    while todo:
        hi = todo.pop()
        done = False
        for prec in PRECISIONS:
            B = exp_bound(form.k, hi, prec, fmt)
            if piece_ok(form, lo, hi, B, targets, prec):
                out.append(Piece(lo, hi, B, prec))
                lo, done = hi, True
                break
        if done:
            continue
        mid = _middle(fmt, lo, hi)
        if mid is None or len(out) + len(todo) > MAX_PIECES:
            # not bounded here (a false certificate written without the precheck): written as it is, so
            # that Coq judges it (and rejects it)
            out.append(Piece(lo, hi, exp_bound(form.k, hi, PRECISIONS[-1], fmt), PRECISIONS[-1]))
            lo = hi
            continue
        todo += [hi, mid]
    return out


def piece_proof(activation: str, fmt_coq: str, wf_coq: str, p: Piece, derivative: bool, v: Fraction,
                fmt: Format) -> str:
    """The Coq proof of ``fact_holds F g (Fact lo hi (Fin v))`` for one piece."""
    lo_b, hi_b = rounding_bounds(v, fmt)
    if activation == "relu":
        g = "drelu" if derivative else "relu"
        side = f"apply Rle_trans with (F2R {term(p.hi)}); [lra|apply nonpos_by_computation; vm_compute; reflexivity]"
        return (f"apply (fact_by_bounds {fmt_coq} {wf_coq} {g} {term(p.lo)} {term(p.hi)} {term(lo_b)} {term(hi_b)}); "
                f"[vm_compute; reflexivity|].\n"
                f"intros x Hx. rewrite {g}_le0 by ({side}).\ndyadic_to_R. interval with (i_prec 30).")
    form = TAIL_FORMS[activation]
    g, lemma = form.coq[derivative], form.lemmas[derivative]
    k = form.k
    side = (f" by (apply Rle_trans with (F2R {term(p.hi)}); [lra|apply nonpos_by_computation; vm_compute; "
            f"reflexivity])") if form.side else ""
    return "\n".join([
        f"apply (fact_by_bounds {fmt_coq} {wf_coq} {g} {term(p.lo)} {term(p.hi)} {term(lo_b)} {term(hi_b)}); "
        f"[vm_compute; reflexivity|].",
        f"intros x Hx.",
        f"assert (He := exp_range {k} x _ (F2R {term(p.bound)}) ltac:(lra) (proj2 Hx)",
        f"  ltac:(dyadic_to_R; interval with (i_prec {p.prec}))).",
        f"rewrite {lemma}{side}. revert He. generalize (exp ({k} * x)). intros e He.",
        f"dyadic_to_R. interval with (i_prec {p.prec})."])
