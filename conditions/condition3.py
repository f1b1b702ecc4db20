r"""Condition 3: a first-layer gradient source.

Statement (:data:`STATEMENT`; docs/conditions.md, as a reproduction read arXiv 2605.01702 v2).  Role
(construction notes 3.4): the zero-output, target-gradient block (Lemma 3.5) needs one neuron
sigma~(w x_j + b) whose derivative at the active point is usable, |sigma~'(xi)| >= 2^-M, so that a
non-zero gradient can be created in the first layer and then shaped by multiplication transfer, while
the neuron's values stay finite and bounded by 2^e_max at the points the gate produces.

* Route (a): the point 0 itself, |sigma~'(0)| >= 2^-M, with sigma~ finite and bounded at -zeta, 0, zeta.
* Route (b): a point x away from 0 (|x| >= zeta) with |sigma~'(x)| >= 2^-M; x must have an **even last
  significand bit**, because the construction moves x by zeta with the ties-to-even absorption trick
  (x (+) tiny rounds back to the even x, as in C (+) tiny); sigma~ must be finite and bounded at
  -(zeta + |x|), 0 and zeta + |x|.

How "zeta + |x| finite" is read here: the network computes the **rounded** sum s = RN_F(zeta + |x|);
we require s to be finite (no overflow) and evaluate sigma~ at -s, 0, s.  (By Sterbenz's lemma, every
value of F in (|x|, 2|x|] is zeta + |x| exactly for some admissible zeta, and s = |x| itself is
reachable by absorption exactly when the ulp of x is at least twice the smallest subnormal.)
As for Condition 2, sigma~' must be finite where its size is required (at 0 for route (a), at x for
route (b)), and sigma~(x) must be finite for route (b).

Checkers: :func:`check_exhaustive` (formats of at most 16 bits, all of F, vectorized, verdict True or
False) and :func:`check_symbolic` (any format; a witness from a deterministic candidate set re-checked
with exact rationals, else undecided; False only when route (a) fails at the point 0 and a scan of every
value of F (:mod:`conditions._exists`) proves |sigma~'| < 2^-M everywhere, so route (b) has no x).

Witness preference (both checkers): route (a) when it holds, else route (b).  Route (a): the zeta
nearest to 1 in binades (smallest |floor(log2 zeta)|), then the smallest.  Route (b): the x nearest to 1
in binades, then the smallest |x|, then positive before negative; for that x, the zeta nearest to 1 in
binades, then the smallest.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional

import numpy as np

from condcheck.formats import Format, num_text
from condcheck.rounding import round_array, round_or_none

from ._exists import KINDS, scan_exists, scans_apply
from ._search import exhaustive_format, resolve_format, verdict_names, binade_distance_key, candidate_points, power_of_two_exponents, safe_eval
from .verdict import Verdict, exact_value

CONDITION = 3

STATEMENT = r"""\textbf{Condition 3.} At least one of the following holds.
\begin{enumerate}
\item[(a)] $\tilde\sigma'(0)$ is finite with $|\tilde\sigma'(0)|\ge 2^{-M}$, and there is $\zeta\in\mathbb F$, $\zeta>0$, such that
  $\tilde\sigma$ is finite with $|\tilde\sigma(t)|\le 2^{e_{\max}}$ at $t\in\{-\zeta,\,0,\,\zeta\}$.
\item[(b)] There are $\zeta\in\mathbb F$, $\zeta>0$, and $x\in\mathbb F$ with $|x|\ge\zeta$ such that the last bit of the
  significand of $x$ is $0$, $s=\mathrm{RN}_{\mathbb F}(\zeta+|x|)$ is finite, $\tilde\sigma(x)$ and $\tilde\sigma'(x)$ are finite
  with $|\tilde\sigma'(x)|\ge 2^{-M}$, and $\tilde\sigma$ is finite with $|\tilde\sigma(t)|\le 2^{e_{\max}}$ at
  $t\in\{-s,\,0,\,s\}$.
\end{enumerate}
Here $\tilde\sigma=\mathrm{RN}_{\mathbb F}\circ\sigma$, $\tilde\sigma'=\mathrm{RN}_{\mathbb F}\circ\sigma'$ (or the chosen implementation),
$M$ is the number of stored fraction bits and $e_{\max}$ the exponent of the largest finite value of $\mathbb F$."""

CLAUSES = {
    "(a)": "|sigma~'(0)| >= 2^-M (finite) and some zeta > 0 with sigma~ finite, |sigma~| <= 2^e_max at -zeta, 0, zeta",
    "(b)": "zeta > 0, |x| >= zeta, x even, s = RN(zeta + |x|) finite, sigma~(x), sigma~'(x) finite, "
           "|sigma~'(x)| >= 2^-M, sigma~ finite and |sigma~| <= 2^e_max at -s, 0, s",
}


@dataclass(frozen=True)
class Condition3Witness:
    """route 'a' (x is None) or 'b'; s = RN(zeta + |x|) for route (b), s = zeta for route (a)."""

    route: str
    zeta: Fraction
    x: Optional[Fraction]
    s: Fraction
    dsigma_at: Fraction            # sigma~'(0) for route (a), sigma~'(x) for route (b)
    sigma_minus_s: Fraction
    sigma_0: Fraction
    sigma_s: Fraction
    fmt: Format = field(repr=False, compare=False)

    def short(self) -> str:
        if self.route == "a":
            return f"route (a): zeta={num_text(self.zeta)}, sigma~'(0)={num_text(self.dsigma_at)}"
        return (f"route (b): zeta={num_text(self.zeta)}, x={num_text(self.x)}, s=RN(zeta+|x|)={num_text(self.s)}, "
                f"sigma~'(x)={num_text(self.dsigma_at)}")

    def report(self) -> dict:
        f = self.fmt
        d = {"route": self.route, "zeta": exact_value(self.zeta, f),
             "x": exact_value(self.x, f) if self.x is not None else None,
             "s": exact_value(self.s, f),
             ("dsigma(0)" if self.route == "a" else "dsigma(x)"): exact_value(self.dsigma_at, f),
             "sigma(-s)": exact_value(self.sigma_minus_s, f), "sigma(0)": exact_value(self.sigma_0, f),
             "sigma(s)": exact_value(self.sigma_s, f)}
        return d


# ---- exact checks -----------------------------------------------------------------------------------
def _bounded_at(rounded, pts):
    """(ok, values or detail): sigma~ finite and |sigma~| <= 2^e_max at each point."""
    T = Fraction(2) ** rounded.format.e_max
    vals = []
    for t in pts:
        v = safe_eval(rounded.value, t)
        if v is None:
            return False, f"sigma~({num_text(t)}) overflows"
        if abs(v) > T:
            return False, f"|sigma~({num_text(t)})| = {num_text(abs(v))} > 2^{rounded.format.e_max}"
        vals.append(v)
    return True, vals


def check_route_a(rounded, zeta):
    """(witness, None) or (None, detail) for route (a) at zeta, exactly."""
    fmt = rounded.format
    zeta = fmt.check(zeta, "zeta")
    if zeta <= 0:
        return None, "zeta must be > 0"
    d = safe_eval(rounded.derivative, Fraction(0))
    if d is None:
        return None, "sigma~'(0) overflows"
    if abs(d) < Fraction(2) ** -fmt.M:
        return None, f"|sigma~'(0)| = {num_text(abs(d))} < 2^-M = 2^-{fmt.M}"
    ok, vals = _bounded_at(rounded, (-zeta, Fraction(0), zeta))
    if not ok:
        return None, vals
    return Condition3Witness("a", zeta, None, zeta, d, vals[0], vals[1], vals[2], fmt), None


def check_route_b(rounded, zeta, x):
    """(witness, None) or (None, detail) for route (b) at (zeta, x), exactly."""
    fmt = rounded.format
    zeta, x = fmt.check(zeta, "zeta"), fmt.check(x, "x")
    if zeta <= 0:
        return None, "zeta must be > 0"
    if abs(x) < zeta:
        return None, f"|x| = {num_text(abs(x))} < zeta = {num_text(zeta)}"
    if not fmt.has_even_significand(x):
        return None, f"x = {num_text(x)} has an odd last significand bit"
    s = round_or_none(zeta + abs(x), fmt)
    if s is None:
        return None, "RN(zeta + |x|) overflows"
    if safe_eval(rounded.value, x) is None:
        return None, "sigma~(x) overflows"
    d = safe_eval(rounded.derivative, x)
    if d is None:
        return None, "sigma~'(x) overflows"
    if abs(d) < Fraction(2) ** -fmt.M:
        return None, f"|sigma~'(x)| = {num_text(abs(d))} < 2^-M = 2^-{fmt.M}"
    ok, vals = _bounded_at(rounded, (-s, Fraction(0), s))
    if not ok:
        return None, vals
    return Condition3Witness("b", zeta, x, s, d, vals[0], vals[1], vals[2], fmt), None


def _binade_key_array(a: np.ndarray):
    """(|floor(log2 |a|)|, |a|) as lexsort keys (a != 0)."""
    _, e = np.frexp(np.abs(a))
    return np.abs(e - 1), np.abs(a)


# ---- exhaustive -------------------------------------------------------------------------------------------
def check_exhaustive(rounded, fmt=None) -> Verdict:
    """Decide Condition 3 over all zeta, x in F (formats of at most 16 bits)."""
    t0 = time.perf_counter()
    fmt = exhaustive_format(CONDITION, rounded, fmt)
    t = rounded.table()
    P, S, D = t.points, t.sigma, t.dsigma
    Tb = 2.0 ** fmt.e_max
    bounded = ~t.sigma_overflow & (np.abs(np.where(t.sigma_overflow, 0.0, S)) <= Tb)
    i0 = int(np.searchsorted(P, 0.0))
    assert P[i0] == 0.0
    pos = np.arange(i0 + 1, P.size)                      # indices of positive values, ascending
    Ppos = P[pos]
    neg_of = np.searchsorted(P, -Ppos)                   # index of -v (every format here is symmetric)
    good = bounded[pos] & bounded[neg_of] & bounded[i0]  # G(v): sigma~ bounded at -v, 0, v
    n = P.size
    thr = 2.0 ** -fmt.M
    d0 = D[i0]
    d0_ok = (not t.dsigma_overflow[i0]) and abs(d0) >= thr
    head = f"{n} finite values of {fmt.name}; {int(good.sum())} positive t with sigma~ finite and bounded at -t, 0, t"
    # Route (a)
    if d0_ok and good.any():
        cand = Ppos[good]
        be, mag = _binade_key_array(cand)
        zeta = Fraction(float(cand[np.lexsort((mag, be))[0]]))
        w, fail = check_route_a(rounded, zeta)
        if w is None:
            raise AssertionError(f"internal: exhaustive route (a) witness zeta={zeta} fails: {fail}")
        return Verdict(method="exhaustive", holds=True, witness=w, seconds=time.perf_counter() - t0,
                       evidence=f"{head}; route (a): |sigma~'(0)| = {abs(float(d0))!r} >= 2^-{fmt.M} and "
                                f"{int(good.sum())} admissible zeta", **verdict_names(CONDITION, rounded))
    # Route (b): candidates x (x != 0, even, sigma~(x), sigma~'(x) finite, |sigma~'(x)| >= 2^-M)
    sig, m, e = _decompose_array(P, fmt)
    even = (m % 2 == 0) & (P != 0)
    xok = even & ~t.sigma_overflow & ~t.dsigma_overflow & (np.abs(np.where(t.dsigma_overflow, 0.0, D)) >= thr)
    ix = np.flatnonzero(xok)
    # reachable s for x: from s_min (|x| itself when ulp(|x|) >= 2 omega, else next_up(|x|)) up to the
    # largest value <= min(2|x|, Omega); count good s in that range with prefix sums over positives.
    ax = np.abs(P[ix])
    j = np.searchsorted(Ppos, ax)                         # position of |x| among positives
    ulp_is_omega = ax < 2.0 ** (fmt.e_min + 1)
    lo = np.where(ulp_is_omega, j + 1, j)
    hi = np.searchsorted(Ppos, 2.0 * ax, "right")         # exclusive; 2|x| beyond Omega caps at the end
    pref = np.concatenate([[0], np.cumsum(good)])
    lo_c = np.minimum(lo, Ppos.size)
    has = (hi > lo_c) & (pref[np.maximum(hi, lo_c)] - pref[lo_c] > 0)
    ixb = ix[has]
    if ixb.size:
        be, mag = _binade_key_array(P[ixb])
        x = Fraction(float(P[ixb[np.lexsort((P[ixb] < 0, mag, be))[0]]]))
        ax_f = float(abs(x))
        zetas = Ppos[Ppos <= ax_f]
        s_arr, over = round_array(zetas + ax_f, fmt)      # fits_float64: one float64 sum, rounded once more
        ok_z = ~over & good[np.minimum(np.searchsorted(Ppos, s_arr), Ppos.size - 1)] & \
            (Ppos[np.minimum(np.searchsorted(Ppos, s_arr), Ppos.size - 1)] == s_arr)
        zc = zetas[ok_z]
        be, mag = _binade_key_array(zc)
        zeta = Fraction(float(zc[np.lexsort((mag, be))[0]]))
        w, fail = check_route_b(rounded, zeta, x)
        if w is None:
            raise AssertionError(f"internal: exhaustive route (b) witness zeta={zeta}, x={x} fails: {fail}")
        why_a = (f"|sigma~'(0)| = {abs(float(d0))!r} < 2^-{fmt.M}" if not d0_ok
                 else "no zeta with sigma~ bounded at -zeta, 0, zeta")
        return Verdict(method="exhaustive", holds=True, witness=w, seconds=time.perf_counter() - t0,
                       evidence=f"{head}; route (a) fails ({why_a}); route (b): {ix.size} x candidates (even, "
                                f"|sigma~'(x)| >= 2^-{fmt.M}), {ixb.size} admit a zeta", **verdict_names(CONDITION, rounded))
    # Fails: say why for each route.
    if t.dsigma_overflow[i0]:
        fa = "(a) sigma~'(0) overflows"
    elif not d0_ok:
        fa = f"(a) |sigma~'(0)| = {abs(float(d0))!r} < 2^-{fmt.M}"
    else:
        fa = "(a) no zeta > 0 with sigma~ finite and |sigma~| <= 2^e_max at -zeta, 0, zeta"
    n_even_big = int((even & ~t.dsigma_overflow & (np.abs(np.where(t.dsigma_overflow, 0.0, D)) >= thr)).sum())
    if n_even_big == 0:
        fb = f"(b) no x in F with an even last significand bit and |sigma~'(x)| >= 2^-{fmt.M}"
    elif ix.size == 0:
        fb = "(b) sigma~ overflows at every even x with |sigma~'(x)| >= 2^-M"
    else:
        fb = "(b) for every admissible x, sigma~ is unbounded or overflows at -s, 0 or s for every reachable s = RN(zeta + |x|)"
    dv = np.unique(np.abs(D[~t.dsigma_overflow]))
    counter = {"sigma'(0)": exact_value(Fraction(float(d0)), fmt) if not t.dsigma_overflow[i0] else "overflow",
               "largest_|sigma'|": exact_value(Fraction(float(dv[-1])), fmt) if dv.size else None,
               "threshold_2^-M": exact_value(Fraction(2) ** -fmt.M, fmt),
               "x_candidates_route_b": int(ix.size)}
    return Verdict(method="exhaustive", holds=False, failing_clause=f"{fa}; {fb}", counterexample=counter,
                   seconds=time.perf_counter() - t0,
                   evidence=f"{head}; route (a) and route (b) both fail over all of F", **verdict_names(CONDITION, rounded))


def _decompose_array(P: np.ndarray, fmt: Format):
    """(sign, integer significand m, exponent e) of float64 values of fmt, vectorized."""
    a = np.abs(P)
    _, ex = np.frexp(a)
    e = np.maximum(ex - 1, fmt.e_min)
    m = np.where(a == 0, 0, np.ldexp(a, (fmt.M - e).astype(np.int64))).astype(np.int64)
    return np.sign(P), m, e


# ---- symbolic ---------------------------------------------------------------------------------------------
def _zeta_candidates(fmt: Format, upto: Optional[Fraction] = None) -> list[Fraction]:
    """+-free zeta candidates: 2^j for the exponents of :func:`power_of_two_exponents` (and |x| itself),
    ordered nearest to 1 in binades, then smallest; only those <= ``upto``."""
    zs = {Fraction(2) ** j for j in power_of_two_exponents(fmt)}
    if upto is not None:
        zs = {z for z in zs if z <= upto}
        zs.add(upto)
    return sorted((z for z in zs if fmt.contains(z) and z > 0), key=binade_distance_key)


def check_symbolic(rounded, fmt=None, max_checks: int = 4000) -> Verdict:
    """Prove Condition 3 for any format by a witness from deterministic candidates (route (a): zeta =
    2^j; route (b): x from the candidate set of :func:`conditions._search.candidate_points`, zeta = 2^j
    <= |x| or |x|), each re-checked exactly.  Returns holds=True or None (undecided); False only with a
    refutation (:func:`_refute_usable_derivative`)."""
    t0 = time.perf_counter()
    fmt = resolve_format(rounded, fmt)
    checks = 0
    d0 = safe_eval(rounded.derivative, Fraction(0))
    why_a = None
    if d0 is None or abs(d0) < Fraction(2) ** -fmt.M:
        why_a = "sigma~'(0) overflows" if d0 is None else f"|sigma~'(0)| = {num_text(abs(d0))} < 2^-{fmt.M}"
    else:
        for z in _zeta_candidates(fmt):
            checks += 1
            w, _ = check_route_a(rounded, z)
            if w is not None:
                return Verdict(method="symbolic", holds=True, witness=w, seconds=time.perf_counter() - t0,
                               evidence=f"route (a): sigma~'(0) = {num_text(d0)}; {checks} zeta candidates tried",
                               **verdict_names(CONDITION, rounded))
        why_a = "no candidate zeta = 2^j with sigma~ bounded at -zeta, 0, zeta"
    xs = [x for x in candidate_points(fmt) if x != 0 and fmt.has_even_significand(x)]
    xs.sort(key=binade_distance_key)
    n_x = 0
    for x in xs:
        dx = safe_eval(rounded.derivative, x)
        if dx is None or abs(dx) < Fraction(2) ** -fmt.M or safe_eval(rounded.value, x) is None:
            continue
        n_x += 1
        for z in _zeta_candidates(fmt, abs(x)):
            checks += 1
            w, _ = check_route_b(rounded, z, x)
            if w is not None:
                return Verdict(method="symbolic", holds=True, witness=w, seconds=time.perf_counter() - t0,
                               evidence=f"route (a) not found ({why_a}); route (b): {n_x} x candidates with "
                                        f"|sigma~'(x)| >= 2^-{fmt.M} tried, {checks} (zeta, x) checks",
                               **verdict_names(CONDITION, rounded))
            if checks >= max_checks:
                break
        if checks >= max_checks:
            break
    note = ""
    if n_x == 0 and (d0 is None or abs(d0) < Fraction(2) ** -fmt.M):
        refuted = _refute_usable_derivative(rounded, d0, t0, f"{len(xs)} even nonzero candidate x")
        if isinstance(refuted, Verdict):
            return refuted
        note = f"; {refuted}" if refuted else ""
    return Verdict(method="symbolic", holds=None, seconds=time.perf_counter() - t0,
                   reason=(f"route (a): {why_a}; route (b): no candidate (zeta, x) passes ({n_x} x candidates, "
                           f"{checks} checks); the condition is existential, so this does not show it fails"),
                   evidence=f"{len(xs)} even nonzero candidate x, zeta = 2^j{note}", **verdict_names(CONDITION, rounded))


def _refute_usable_derivative(rounded, d0, t0, head, *, max_intervals: int = 4000, time_limit: float = 20.0):
    """Route (a) fails at the point 0 (|sigma~'(0)| < 2^-M or overflow, certain rounding) and no
    candidate x has |sigma~'(x)| >= 2^-M: scan every value of F (:mod:`conditions._exists`).  A
    refutation (|sigma~'| < 2^-M or overflow at every value) makes route (b) fail for every x, so
    Condition 3 fails: returns that Verdict.  Otherwise a note (str) for the evidence."""
    if not scans_apply(rounded):
        return ""
    fmt = rounded.format
    kind = "abs_at_least_2^-M"
    ex = scan_exists(rounded, "derivative", kind, max_intervals=max_intervals, time_limit=time_limit)
    if ex.status == "refuted":
        fa = "(a) sigma~'(0) overflows" if d0 is None else f"(a) |sigma~'(0)| = {abs(float(d0))!r} < 2^-{fmt.M}"
        fb = f"(b) no x in F with an even last significand bit and |sigma~'(x)| >= 2^-{fmt.M}"
        ref = {"clause": "(b)", "function": "derivative", "kind": kind, "excludes": KINDS[kind],
               "range": "every finite value of the format, from -Omega to Omega", "cover": ex.cover_text()}
        return Verdict(method="symbolic", holds=False, failing_clause=f"{fa}; {fb}",
                       counterexample={"sigma'(0)": exact_value(d0, fmt) if d0 is not None else "overflow",
                                       "threshold_2^-M": exact_value(Fraction(2) ** -fmt.M, fmt),
                                       "why": f"route (a) fails at 0 (certain rounding); route (b): sigma~' is "
                                              f"never {KINDS[kind]} on any finite value of {fmt.name} (proved "
                                              f"by the refutation cover)", "refutation": ref},
                       evidence=f"{head}; route (b) refuted: {ex.summary()}",
                       seconds=time.perf_counter() - t0, **verdict_names(CONDITION, rounded))
    if ex.status == "witness":
        return (f"the certified scan of every value found |sigma~'({num_text(ex.witness)})| = "
                f"{num_text(abs(ex.witness_value))} >= 2^-{fmt.M}, off the candidates")
    return f"the certified scan for |sigma~'| >= 2^-M did not finish: {ex.reason}"
