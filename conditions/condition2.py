r"""Condition 2: gradient suppression (and exact pass-through) without overflow.

Statement (:data:`STATEMENT`; docs/conditions.md, as a reproduction read arXiv 2605.01702 v2).  Why each
clause is there (construction notes 3.2, 3.6):

* ``delta_1`` is the exact **pass-through** state: sigma~'(delta_1) = +-2^k is a power of two, so a
  gradient multiplied by it is rescaled exactly (no rounding), and 2^-M <= |sigma~'(delta_1)| <= 1
  keeps it a plain rescaling of at most M binades.
* ``delta_0`` is the **gradient-shrinking** state: 2^eta_0 |sigma~'(delta_0)| <= |sigma~'(delta_1)|
  with eta_0 >= 1, so each layer that routes the "indicator = 1" code through delta_0 shrinks the
  backward signal by at least 2^eta_0 relative to the pass state (exactly zero when
  sigma~'(delta_0) = 0).
* (i) sigma~(delta_0) != sigma~(delta_1) makes the two states carry one bit; the bounds by 2^e_max
  (the difference taken exactly) let the affine decoder (sigma~(delta_1) - sigma~(u)) / (sigma~(delta_1)
  - sigma~(delta_0)) be formed without overflow.
* (iii)-(iv): eta_1 and eta_2 bound the **power-of-two rescalings** by which the binary codes
  {sigma~(delta_0), sigma~(delta_1)} are renormalised (multiplied by 2^eta_1 or 2^-eta_2 and by the
  pass derivative 2^k) without overflow or underflow.

Both sigma~ and sigma~' must be finite (no overflow) at delta_0 and delta_1.

Checkers:

* :func:`check_exhaustive` (formats of at most 16 bits) decides the condition over all of F x F using
  the correctly rounded tables, vectorized: for every pass candidate delta_1 the admissible
  sigma~(delta_0) values form at most four intervals in sigma~-order, and the best delta_0 in them is a
  range-minimum query over the preference rank.  Its verdict is True or False, never undecided.
* :func:`check_symbolic` (any format) searches a deterministic candidate set and proves "holds" by
  re-checking every clause at the witness with exact rationals and the certain, correctly rounded
  evaluation.  If no candidate passes it returns ``holds=None`` (undecided), with one exception: every
  value of F is then scanned for a pass state (:mod:`conditions._exists`), and a proof that sigma~' is
  nowhere +-2^k with 2^-M <= 2^k <= 1 (e.g. sigmoid on float4_e2m1fn, where sigma~' = 0 everywhere)
  makes (ii) fail for every delta_1, a proof that it is nowhere such a value with also -k <= e_max and
  k <= -e_min + M (sigmoid on formats with e_max = 1) makes (iii) fail: holds=False, with the refutation
  cover as certificate.  When neither decides, the pair clauses are decided over every pair of values by
  the certified pair scan (:mod:`conditions._pairs`, :func:`_decide_pairs`): interval covers of F with
  certified ranges of sigma~ and sigma~' prove that no possible pass state has a compatible shrinking
  partner (holds=False at the first clause so refuted, (ii)-(iv), worded as the exhaustive checker
  words it and re-proved by ``condcheck recheck``), or a depth-first search finds a witness pair
  (holds=True, re-checked exactly).  E.g. GELU, GELU-tanh and Mish on b3_2 .. b13_2 fail (iv), and Swish
  on b5_2 holds only by pairs off the candidate points.  A scan that hits its caps leaves the verdict
  undecided, with the reason in the evidence.

Best witness (both checkers, over the pairs each examines): the largest eta_0, an unbounded eta_0
(sigma~'(delta_0) = 0, reported as ``eta_0=None, eta_0_unbounded=True``) first; then the smallest
|delta_1|, then delta_1 positive before negative, then the smallest |delta_0|, then delta_0 positive
before negative.  eta_1 and eta_2 are the smallest admissible values, eta_1 = -k and eta_2 = k (the
smallest values make (iv) weakest, so they are admissible whenever any are).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional

import numpy as np

from condcheck.formats import Format, num_text

from ._exists import KINDS, scan_exists, scans_apply
from ._pairs import scan_pairs
from ._search import (exhaustive_format, resolve_format, verdict_names, NO_DERIVATIVE_EXPONENT, RangeMin, candidate_points, ceil_log2, ceil_log2_array,
                      exact_lower_bound, exact_upper_bound, power_of_two_array, power_of_two_exponent,
                      safe_eval, subtract_range, value_at, value_index)
from .verdict import Verdict, exact_value

CONDITION = 2

STATEMENT = r"""\textbf{Condition 2.} There are $\delta_0,\delta_1\in\mathbb F$ and integers
$\eta_0,\eta_1,\eta_2$ such that $\tilde\sigma$ and $\tilde\sigma'$ are finite at $\delta_0$ and $\delta_1$, and
\begin{enumerate}
\item[(i)] $\tilde\sigma(\delta_0)\neq\tilde\sigma(\delta_1)$ and
  $|\tilde\sigma(\delta_0)|,\ |\tilde\sigma(\delta_1)|,\ |\tilde\sigma(\delta_0)-\tilde\sigma(\delta_1)|\le 2^{e_{\max}}$
  (the difference taken exactly, in $\mathbb R$);
\item[(ii)] $\eta_0\ge 1$, $2^{\eta_0}\,|\tilde\sigma'(\delta_0)|\le|\tilde\sigma'(\delta_1)|$, and
  $\tilde\sigma'(\delta_1)=\pm 2^{k}$ for an integer $k$ with $2^{-M}\le|\tilde\sigma'(\delta_1)|\le 1$;
\item[(iii)] $-k\le\eta_1\le e_{\max}$ and $k\le\eta_2\le -e_{\min}+M$;
\item[(iv)] $2^{e_{\min}+\eta_2}\le\max\bigl(|\tilde\sigma(\delta_0)|,|\tilde\sigma(\delta_1)|\bigr)\le 2^{e_{\max}-\eta_1}$.
\end{enumerate}
Here $\tilde\sigma=\mathrm{RN}_{\mathbb F}\circ\sigma$ and $\tilde\sigma'=\mathrm{RN}_{\mathbb F}\circ\sigma'$ (or the chosen
implementation), $M$ is the number of stored fraction bits, and $e_{\min}$, $e_{\max}$ are the exponents of the
smallest normal and of the largest finite value of $\mathbb F$."""

CLAUSES = {
    "(i)": "sigma~(delta_0) != sigma~(delta_1) and |sigma~(delta_0)|, |sigma~(delta_1)|, "
           "|sigma~(delta_0) - sigma~(delta_1)| <= 2^e_max (sigma~, sigma~' finite at both)",
    "(ii)": "eta_0 >= 1, 2^eta_0 |sigma~'(delta_0)| <= |sigma~'(delta_1)|, sigma~'(delta_1) = +-2^k with "
            "2^-M <= |sigma~'(delta_1)| <= 1",
    "(iii)": "-k <= eta_1 <= e_max and k <= eta_2 <= -e_min + M",
    "(iv)": "2^(e_min + eta_2) <= max(|sigma~(delta_0)|, |sigma~(delta_1)|) <= 2^(e_max - eta_1)",
}


@dataclass(frozen=True)
class Condition2Witness:
    """delta_0 (shrinking state), delta_1 (pass state), the eta's and k with sigma~'(delta_1) = +-2^k.

    ``eta_0`` is None exactly when ``eta_0_unbounded`` (sigma~'(delta_0) = 0: every eta_0 >= 1 works).
    """

    delta_0: Fraction
    delta_1: Fraction
    eta_0: Optional[int]
    eta_0_unbounded: bool
    eta_1: int
    eta_2: int
    k: int
    sigma_0: Fraction
    sigma_1: Fraction
    dsigma_0: Fraction
    dsigma_1: Fraction
    fmt: Format = field(repr=False, compare=False)

    def eta_0_text(self) -> str:
        return "unbounded (sigma~'(delta_0) = 0)" if self.eta_0_unbounded else str(self.eta_0)

    def short(self) -> str:
        return (f"delta_0={num_text(self.delta_0)}, delta_1={num_text(self.delta_1)}, "
                f"eta_0={self.eta_0_text()}, eta_1={self.eta_1}, eta_2={self.eta_2}, k={self.k}")

    def report(self) -> dict:
        f = self.fmt
        return {
            "delta_0": exact_value(self.delta_0, f), "delta_1": exact_value(self.delta_1, f),
            "sigma(delta_0)": exact_value(self.sigma_0, f), "sigma(delta_1)": exact_value(self.sigma_1, f),
            "dsigma(delta_0)": exact_value(self.dsigma_0, f), "dsigma(delta_1)": exact_value(self.dsigma_1, f),
            "eta_0": self.eta_0, "eta_0_unbounded": self.eta_0_unbounded, "eta_1": self.eta_1,
            "eta_2": self.eta_2, "k": self.k,
        }


# ---- the exact check of one pair --------------------------------------------------------------------
def check_pair(rounded, delta_0, delta_1):
    """Check every clause at (delta_0, delta_1) with exact rationals and the certain evaluation.

    Returns ``(witness, None)`` with the largest eta_0 and the smallest eta_1, eta_2 when all clauses
    hold, else ``(None, (clause, detail))`` for the first failing clause.
    """
    fmt = rounded.format
    d0, d1 = fmt.check(delta_0, "delta_0"), fmt.check(delta_1, "delta_1")
    vals = {}
    for name, fn, q in (("sigma~(delta_0)", rounded.value, d0), ("sigma~(delta_1)", rounded.value, d1),
                        ("sigma~'(delta_0)", rounded.derivative, d0), ("sigma~'(delta_1)", rounded.derivative, d1)):
        v = safe_eval(fn, q)
        if v is None:
            return None, ("(i)", f"{name} overflows at {num_text(q)}")
        vals[name] = v
    s0, s1 = vals["sigma~(delta_0)"], vals["sigma~(delta_1)"]
    ds0, ds1 = vals["sigma~'(delta_0)"], vals["sigma~'(delta_1)"]
    T = Fraction(2) ** fmt.e_max
    if s0 == s1:
        return None, ("(i)", f"sigma~(delta_0) = sigma~(delta_1) = {num_text(s0)}")
    for name, v in (("|sigma~(delta_0)|", abs(s0)), ("|sigma~(delta_1)|", abs(s1)),
                    ("|sigma~(delta_0) - sigma~(delta_1)|", abs(s0 - s1))):
        if v > T:
            return None, ("(i)", f"{name} = {num_text(v)} > 2^e_max = 2^{fmt.e_max}")
    k = power_of_two_exponent(ds1)
    if k is None:
        return None, ("(ii)", f"sigma~'(delta_1) = {num_text(ds1)} is not +-a power of two")
    if not -fmt.M <= k <= 0:
        return None, ("(ii)", f"|sigma~'(delta_1)| = 2^{k} is outside [2^-M, 1] = [2^{-fmt.M}, 1]")
    if ds0 == 0:
        eta_0, unbounded = None, True
    else:
        eta_0, unbounded = k - ceil_log2(abs(ds0)), False
        if eta_0 < 1:
            return None, ("(ii)", f"the largest eta_0 with 2^eta_0 |sigma~'(delta_0)| <= 2^{k} is {eta_0} < 1 "
                                  f"(sigma~'(delta_0) = {num_text(ds0)})")
    eta_1, eta_2 = -k, k
    if eta_1 > fmt.e_max or eta_2 > -fmt.e_min + fmt.M:
        return None, ("(iii)", f"no eta_1 in [{-k}, {fmt.e_max}] or no eta_2 in [{k}, {-fmt.e_min + fmt.M}]")
    m = max(abs(s0), abs(s1))
    lo, hi = Fraction(2) ** (fmt.e_min + eta_2), Fraction(2) ** (fmt.e_max - eta_1)
    if not lo <= m <= hi:
        return None, ("(iv)", f"max(|sigma~(delta_0)|, |sigma~(delta_1)|) = {num_text(m)} is outside "
                              f"[2^{fmt.e_min + eta_2}, 2^{fmt.e_max - eta_1}]")
    return Condition2Witness(delta_0=d0, delta_1=d1, eta_0=eta_0, eta_0_unbounded=unbounded, eta_1=eta_1,
                             eta_2=eta_2, k=k, sigma_0=s0, sigma_1=s1, dsigma_0=ds0, dsigma_1=ds1, fmt=fmt), None


def pair_report(fmt, d0, d1, s0, s1, ds0, ds1) -> dict:
    return {"delta_0": exact_value(d0, fmt), "delta_1": exact_value(d1, fmt),
            "sigma(delta_0)": exact_value(s0, fmt), "sigma(delta_1)": exact_value(s1, fmt),
            "dsigma(delta_0)": exact_value(ds0, fmt), "dsigma(delta_1)": exact_value(ds1, fmt)}


# ---- exhaustive ----------------------------------------------------------------------------------------
class _Exhaustive:
    """All pairs of F x F, vectorized (see the module docstring)."""

    def __init__(self, rounded):
        fmt = self.fmt = rounded.format
        t = rounded.table()
        self.P, self.S, self.D = t.points, t.sigma, t.dsigma
        self.T = 2.0 ** fmt.e_max
        finite = ~t.sigma_overflow & ~t.dsigma_overflow
        self.valid = finite & (np.abs(np.where(finite, self.S, 0.0)) <= self.T)
        self.c = ceil_log2_array(np.where(finite, self.D, 1.0))          # ceil(log2 |sigma~'|)
        self.pow2, self.k = power_of_two_array(np.where(finite, self.D, 3.0))
        idx0 = np.flatnonzero(self.valid)
        P0 = self.P[idx0]
        pref = np.lexsort((P0 < 0, np.abs(P0), self.c[idx0]))       # delta_0 preference: c, |d0|, sign
        rank = np.empty(idx0.size, dtype=np.int64)
        rank[pref] = np.arange(idx0.size)
        order = np.argsort(self.S[idx0], kind="stable")
        self.S0 = self.S[idx0][order]                                 # admissible sigma~ values, sorted
        self.d0_of = idx0[order]                                      # point index of each entry
        self.rmq = RangeMin(rank[order]) if idx0.size else None
        self.n_valid = int(idx0.size)

    def d1_mask(self, stage: int) -> np.ndarray:
        M, fmt = self.fmt.M, self.fmt
        m = self.valid.copy()
        if stage >= 2:
            m &= self.pow2 & (self.k >= -M) & (self.k <= 0)
        if stage >= 3:
            m &= (-self.k <= fmt.e_max) & (self.k <= -fmt.e_min + M)
        return m

    def search(self, stage: int, need_eta: bool = True):
        """Best pair under clauses (i)..(stage); returns dict of arrays for the best, and the number of
        delta_1 admitting some delta_0, or (None, 0)."""
        if self.rmq is None:
            return None, 0
        fmt = self.fmt
        i1 = np.flatnonzero(self.d1_mask(stage))
        if i1.size == 0:
            return None, 0
        S1 = self.S[i1]
        k = self.k[i1]
        T = np.full(S1.shape, self.T)
        lb = exact_lower_bound(S1, -T)
        ub = exact_upper_bound(S1, T)
        keep = np.ones(i1.size, dtype=bool)
        small = np.zeros(i1.size, dtype=bool)
        L = np.zeros(i1.size)
        if stage >= 4:
            U = np.ldexp(1.0, (fmt.e_max + k).astype(np.int64))
            L = np.ldexp(1.0, (fmt.e_min + k).astype(np.int64))
            keep &= np.abs(S1) <= U
            lb = np.maximum(lb, -U)
            ub = np.minimum(ub, U)
            small = np.abs(S1) < L
        ss = self.S0
        lo = np.searchsorted(ss, lb, "left")
        hi = np.searchsorted(ss, ub, "right")
        pieces = [(lo, np.where(keep, hi, lo))]
        pieces = subtract_range(pieces, np.searchsorted(ss, S1, "left"), np.searchsorted(ss, S1, "right"))
        if stage >= 4:
            x = np.where(small, np.searchsorted(ss, -L, "right"), 0)
            y = np.where(small, np.searchsorted(ss, L, "left"), 0)
            pieces = subtract_range(pieces, x, y)
        best = self.rmq.argmin_pieces(pieces)
        found = best >= 0
        d1 = i1[found]
        d0 = self.d0_of[best[found]]
        rank = self.rmq.values[best[found]]
        if stage >= 2:
            c0 = self.c[d0]
            unb = c0 == NO_DERIVATIVE_EXPONENT
            eta = np.where(unb, np.iinfo(np.int64).max, k[found] - c0)
            if need_eta:
                ok = eta >= 1
                d1, d0, rank, eta = d1[ok], d0[ok], rank[ok], eta[ok]
        else:
            eta = np.zeros(d1.size, dtype=np.int64)
        if d1.size == 0:
            return None, 0
        P1 = self.P[d1]
        order = np.lexsort((rank, P1 < 0, np.abs(P1), -eta.astype(np.float64)))
        b = order[0]
        return {"d0": int(d0[b]), "d1": int(d1[b]), "eta": int(eta[b])}, int(d1.size)

    def fr(self, arr, i):
        return Fraction(float(arr[i]))

    def pair_dict(self, best) -> dict:
        d0, d1 = best["d0"], best["d1"]
        return pair_report(self.fmt, self.fr(self.P, d0), self.fr(self.P, d1), self.fr(self.S, d0),
                            self.fr(self.S, d1), self.fr(self.D, d0), self.fr(self.D, d1))


def check_exhaustive(rounded, fmt=None) -> Verdict:
    """Decide Condition 2 over all of F x F (formats of at most 16 bits)."""
    t0 = time.perf_counter()
    fmt = exhaustive_format(CONDITION, rounded, fmt)
    ex = _Exhaustive(rounded)
    n = ex.P.size
    n_pass = int(ex.d1_mask(2).sum())
    n_groups = len(set(zip(ex.S[ex.d1_mask(2)].tolist(), ex.k[ex.d1_mask(2)].tolist())))
    head = (f"{n} finite values of {fmt.name}; {ex.n_valid} admissible points (sigma~, sigma~' finite, "
            f"|sigma~| <= 2^{fmt.e_max}); {n_pass} pass candidates delta_1 (sigma~' = +-2^k, -{fmt.M} <= k <= 0) "
            f"in {n_groups} distinct (sigma~(delta_1), k) groups; for each delta_1 the best delta_0 among all "
            f"{ex.n_valid} admissible points by exact range-minimum over sigma~-order")
    best, count = ex.search(4)
    if best is not None:
        d0, d1 = ex.fr(ex.P, best["d0"]), ex.fr(ex.P, best["d1"])
        w, fail = check_pair(rounded, d0, d1)
        if w is None:
            raise AssertionError(f"internal: exhaustive witness ({d0}, {d1}) fails the exact re-check: {fail}")
        return Verdict(method="exhaustive", holds=True, witness=w, seconds=time.perf_counter() - t0,
                       evidence=f"{head}; {count} delta_1 admit a delta_0 satisfying (i)-(iv)", **verdict_names(CONDITION, rounded))
    # Diagnose: the first stage (clause) that nothing passes.
    failing, counter = None, None
    prev = None
    for stage, clause in ((1, "(i)"), (2, "(ii)"), (3, "(iii)"), (4, "(iv)")):
        b, _ = ex.search(stage)
        if b is not None:
            prev = b
            continue
        failing = clause
        break
    if failing == "(i)":
        vals = np.unique(ex.S[ex.valid])
        if ex.n_valid == 0:
            text = f"(i) no point where sigma~ and sigma~' are finite and |sigma~| <= 2^{fmt.e_max}"
        else:
            text = (f"(i) no delta_0, delta_1 with sigma~(delta_0) != sigma~(delta_1) and "
                    f"|sigma~(delta_0) - sigma~(delta_1)| <= 2^{fmt.e_max} (sigma~ takes {vals.size} distinct "
                    f"admissible value(s))")
        counter = {"distinct_sigma_values": [exact_value(Fraction(float(v)), fmt) for v in vals[:8]],
                   "count": int(vals.size)}
    elif failing == "(ii)":
        if n_pass == 0:
            text = f"(ii) no delta_1 with sigma~'(delta_1) a power of two in [2^-{fmt.M}, 1]"
            dv = np.unique(np.abs(ex.D[ex.valid]))
            counter = {"best_pair_for_(i)": ex.pair_dict(prev),
                       "distinct_|sigma'|_values": [exact_value(Fraction(float(v)), fmt) for v in dv[:8]],
                       "count": int(dv.size)}
        else:
            text = ("(ii) no delta_0 with 2^eta_0 |sigma~'(delta_0)| <= |sigma~'(delta_1)| for an eta_0 >= 1 "
                    "(together with (i))")
            b, _ = ex.search(2, need_eta=False)
            counter = {"best_pair": ex.pair_dict(b), "largest_eta_0": b["eta"]}
    elif failing == "(iii)":
        text = (f"(iii) for every pass candidate sigma~'(delta_1) = +-2^k, -k > e_max = {fmt.e_max} or "
                f"k > -e_min + M = {-fmt.e_min + fmt.M}")
        counter = {"best_pair_for_(i)-(ii)": ex.pair_dict(prev)}
    else:
        text = (f"(iv) no pair satisfying (i)-(iii) has 2^(e_min + eta_2) <= max(|sigma~(delta_0)|, "
                f"|sigma~(delta_1)|) <= 2^(e_max - eta_1), even with eta_1 = -k, eta_2 = k")
        counter = {"best_pair_for_(i)-(iii)": ex.pair_dict(prev)}
        _, detail = check_pair(rounded, Fraction(float(ex.P[prev["d0"]])), Fraction(float(ex.P[prev["d1"]])))
        counter["why"] = detail[1] if detail else None
    return Verdict(method="exhaustive", holds=False, failing_clause=text, counterexample=counter,
                   seconds=time.perf_counter() - t0,
                   evidence=f"{head}; no pair satisfies (i)-(iv) (first failing clause {failing})", **verdict_names(CONDITION, rounded))


# ---- symbolic ------------------------------------------------------------------------------------------
def _evaluate(rounded, pts):
    out = []
    for q in pts:
        s = safe_eval(rounded.value, q)
        d = safe_eval(rounded.derivative, q) if s is not None else None
        if s is not None and d is not None:
            out.append((q, s, d))
    return out


def _pass_points_by_bisection(rounded, evaluated, budget: int = 40):
    """Points where sigma~' is exactly +-2^k, k in [-M, 0], near sign changes of sigma~' -+ 2^k between
    consecutive candidates (bisection over the format's values, at most ``budget`` brackets)."""
    fmt = rounded.format
    ev = sorted(evaluated, key=lambda t: t[0])
    found = []
    used = 0
    for k in range(0, -fmt.M - 1, -1):
        for sgn in (1, -1):
            target = sgn * Fraction(2) ** k
            for (qa, _, da), (qb, _, db) in zip(ev, ev[1:]):
                if used >= budget:
                    return found
                if (da - target) * (db - target) >= 0:
                    continue
                used += 1
                ia, ib = value_index(fmt, qa), value_index(fmt, qb)
                fa = da - target
                while ib - ia > 1:
                    im = (ia + ib) // 2
                    dm = safe_eval(rounded.derivative, value_at(fmt, im))
                    if dm is None:
                        break
                    if dm == target:
                        found.append(value_at(fmt, im))
                        break
                    if (dm - target) * fa > 0:
                        ia = im
                    else:
                        ib = im
    return found


def _symbolic_search(rounded, evaluated):
    fmt = rounded.format
    M = fmt.M
    pass_pts, block_pts = [], []
    for q, s, d in evaluated:
        if abs(s) > Fraction(2) ** fmt.e_max:
            continue
        k = power_of_two_exponent(d)
        if k is not None and -M <= k <= 0 and -k <= fmt.e_max and k <= -fmt.e_min + M:
            pass_pts.append((q, s, d, k))
        if d == 0 or abs(d) <= Fraction(1, 2):
            block_pts.append((q, s, d, NO_DERIVATIVE_EXPONENT if d == 0 else ceil_log2(abs(d))))
    pass_pts.sort(key=lambda t: (abs(t[0]), t[0] < 0))
    block_pts.sort(key=lambda t: (t[3], abs(t[0]), t[0] < 0))
    T = Fraction(2) ** fmt.e_max
    best, best_eta = None, None
    seen = set()
    pairs_checked = 0
    for q1, s1, d1, k in pass_pts:
        if (s1, k) in seen:
            continue
        seen.add((s1, k))
        rejected = set()
        lo, hi = Fraction(2) ** (fmt.e_min + k), Fraction(2) ** (fmt.e_max + k)
        for q0, s0, d0, c0 in block_pts:
            eta = float("inf") if c0 == NO_DERIVATIVE_EXPONENT else k - c0
            if eta < 1 or (best_eta is not None and eta <= best_eta):
                break
            if (s0, c0) in rejected:
                continue
            pairs_checked += 1
            m = max(abs(s0), abs(s1))
            if s0 != s1 and abs(s0 - s1) <= T and lo <= m <= hi:
                best, best_eta = (q0, q1), eta
                break
            rejected.add((s0, c0))
        if best_eta == float("inf"):
            break
    return best, len(pass_pts), len(block_pts), pairs_checked


def check_symbolic(rounded, fmt=None) -> Verdict:
    """Prove Condition 2 for any format by a witness from a deterministic candidate set (see
    :func:`conditions._search.candidate_points`; if none passes, also points where sigma~' is exactly a
    power of two found by bisection near sign changes of sigma~' -+ 2^k).  Returns holds=True with a
    witness re-checked exactly, or holds=None (undecided); holds=False only when no value of F is a pass
    state of (ii), or of (ii) and (iii), proved by :func:`_refute_pass_state`, or when no pair of values
    satisfies the clauses up to the failing one, proved by :func:`_decide_pairs` (which may also find a
    witness pair off the candidate points)."""
    t0 = time.perf_counter()
    fmt = resolve_format(rounded, fmt)
    pts = candidate_points(fmt)
    evaluated = _evaluate(rounded, pts)
    best, n_pass, n_block, checked = _symbolic_search(rounded, evaluated)
    extra = 0
    if best is None:
        more = [q for q in _pass_points_by_bisection(rounded, evaluated) if q not in set(pts)]
        extra = len(more)
        evaluated += _evaluate(rounded, more)
        best, n_pass, n_block, checked = _symbolic_search(rounded, evaluated)
    evidence = (f"{len(pts)} candidate points (0, +-2^j, small integers, +-3*2^j, +-Omega){f' plus {extra} bisection points' if extra else ''}; "
                f"{len(evaluated)} with sigma~ and sigma~' finite; {n_pass} pass candidates, {n_block} shrinking "
                f"candidates; {checked} pairs checked exactly")
    if best is not None:
        w, fail = check_pair(rounded, *best)
        if w is None:
            raise AssertionError(f"internal: symbolic witness {best} fails the exact re-check: {fail}")
        return Verdict(method="symbolic", holds=True, witness=w, evidence=evidence,
                       seconds=time.perf_counter() - t0, **verdict_names(CONDITION, rounded))
    reason = ("no candidate pair satisfies (i)-(iv); the condition is existential, so this does not show it "
              "fails (only the exhaustive check over all of F x F can)")
    refuted = _refute_pass_state(rounded, evidence, t0, evaluated)
    if isinstance(refuted, Verdict):
        return refuted
    if refuted:
        evidence += f"; {refuted}"
    decided = _decide_pairs(rounded, evidence, t0, evaluated)
    if isinstance(decided, Verdict):
        return decided
    if decided:
        evidence += f"; {decided}"
        reason = ("no candidate pair satisfies (i)-(iv), and the certified pair scan of every value did not "
                  "decide the condition (see the evidence); the condition is existential, so this does not "
                  "show it fails")
    if n_pass == 0:
        reason = (f"no candidate delta_1 has sigma~'(delta_1) = +-2^k with -{fmt.M} <= k <= 0; " + reason)
    return Verdict(method="symbolic", holds=None, reason=reason, evidence=evidence,
                   seconds=time.perf_counter() - t0, **verdict_names(CONDITION, rounded))


def _pair_i_ii(fmt, evaluated) -> bool:
    """Do two evaluated points satisfy clauses (i) and (ii) together (not (iii), (iv))?"""
    T = Fraction(2) ** fmt.e_max
    pas = [(s, abs(d)) for _, s, d in evaluated
           if abs(s) <= T and (k := power_of_two_exponent(d)) is not None and -fmt.M <= k <= 0]
    blk = [(s, abs(d)) for _, s, d in evaluated if abs(s) <= T]
    return any(s0 != s1 and abs(s0 - s1) <= T and 2 * d0 <= d1 for s1, d1 in pas for s0, d0 in blk)


def _refute_pass_state(rounded, evidence, t0, evaluated, *, max_intervals: int = 4000, time_limit: float = 20.0):
    """No candidate pair: scan every value of F (:mod:`conditions._exists`) for the pass state.

    First, if no candidate is a pass value of (ii) (sigma~' = +-2^k, -M <= k <= 0), for one; a
    refutation proves (ii) fails for every delta_1.  Then for a pass value that also meets (iii)
    (-k <= e_max, k <= -e_min + M); a refutation proves (iii) fails for every delta_1 (e.g. sigmoid on
    b3_2: sigmoid' <= 1/4, so k <= -2 < -e_max = -1).  Either way Condition 2 fails: returns that
    Verdict, with the refutation cover as its certificate.  The failing clause is worded as the
    exhaustive checker words it when candidate points show that the clauses before it hold together
    (then it is the first failing clause); otherwise the wording says which were not decided.  When
    nothing is refuted, returns a note (str) for the evidence ("" when the scans do not apply)."""
    if not scans_apply(rounded):
        return ""
    fmt = rounded.format
    T = Fraction(2) ** fmt.e_max
    notes = []

    def verdict(clause, kind, text, ex):
        ref = {"clause": clause[:4] if clause.startswith("(ii)") else clause[:5], "function": "derivative",
               "kind": kind, "excludes": KINDS[kind],
               "range": "every finite value of the format, from -Omega to Omega", "cover": ex.cover_text()}
        return Verdict(method="symbolic", holds=False, failing_clause=text,
                       counterexample={"why": f"sigma~' is never {KINDS[kind]} on any finite value of "
                                              f"{fmt.name} (proved by the refutation cover), so no delta_1 "
                                              f"satisfies {ref['clause']}", "refutation": ref},
                       evidence=f"{evidence}; clause {ref['clause']} refuted: {ex.summary()}",
                       seconds=time.perf_counter() - t0, **verdict_names(CONDITION, rounded))

    has_pass = any(abs(s) <= T and (k := power_of_two_exponent(d)) is not None and -fmt.M <= k <= 0
                   for _, s, d in evaluated)
    if not has_pass:
        ex = scan_exists(rounded, "derivative", "pass_pow2", max_intervals=max_intervals, time_limit=time_limit)
        if ex.status == "refuted":
            vals = sorted({s for _, s, _ in evaluated if abs(s) <= T})
            text = f"(ii) no delta_1 with sigma~'(delta_1) a power of two in [2^-{fmt.M}, 1]"
            if not any(b - a <= T for a, b in zip(vals, vals[1:])):
                text += " (clause (i) not decided: no candidate pair satisfies it)"
            return verdict("(ii)", "pass_pow2", text, ex)
        if ex.status != "witness":
            return f"the certified scan for a pass state did not finish: {ex.reason}"
        evaluated = evaluated + _evaluate(rounded, [ex.witness])
        notes.append(f"the certified scan of every value found sigma~'({num_text(ex.witness)}) = "
                     f"{num_text(ex.witness_value)}, a pass value of (ii)")
    ex = scan_exists(rounded, "derivative", "pass_pow2_iii", max_intervals=max_intervals, time_limit=time_limit)
    if ex.status == "refuted":
        text = (f"(iii) for every pass candidate sigma~'(delta_1) = +-2^k, -k > e_max = {fmt.e_max} or "
                f"k > -e_min + M = {-fmt.e_min + fmt.M}")
        if not _pair_i_ii(fmt, evaluated):
            text += " (clauses (i)-(ii) not decided together: no candidate pair satisfies them)"
        return verdict("(iii)", "pass_pow2_iii", text, ex)
    if ex.status == "witness":
        notes.append(f"sigma~'({num_text(ex.witness)}) = {num_text(ex.witness_value)} is a pass value of (ii) "
                     f"and (iii), but no pair with a candidate satisfies (i)-(iv)")
    else:
        notes.append(f"the certified scan for a pass value of (ii)-(iii) did not finish: {ex.reason}")
    return "; ".join(notes)


#: the exhaustive checker's wording of each first failing clause, by stage (see check_exhaustive)
_STAGE_CLAUSE = {1: "(i)", 2: "(ii)", 3: "(iii)", 4: "(iv)"}


def stage_text(fmt, stage: int) -> str:
    """The exhaustive checker's wording of the failing clause when stage 2, 3 or 4 is the first that no pair
    of values passes (stage 2: with pass candidates)."""
    if stage == 4:
        return ("(iv) no pair satisfying (i)-(iii) has 2^(e_min + eta_2) <= max(|sigma~(delta_0)|, "
                "|sigma~(delta_1)|) <= 2^(e_max - eta_1), even with eta_1 = -k, eta_2 = k")
    if stage == 3:
        return (f"(iii) for every pass candidate sigma~'(delta_1) = +-2^k, -k > e_max = {fmt.e_max} or "
                f"k > -e_min + M = {-fmt.e_min + fmt.M}")
    return ("(ii) no delta_0 with 2^eta_0 |sigma~'(delta_0)| <= |sigma~'(delta_1)| for an eta_0 >= 1 "
            "(together with (i))")


def _decide_pairs(rounded, evidence, t0, evaluated, *, max_intervals: int = 40000, time_limit: float = 20.0):
    """No candidate pair and no refutation of a pass state: decide the pair clauses over every pair of
    values of F by the certified branch and bound of :mod:`conditions._pairs`.

    Stage 4 (all clauses): a witness pair proves "holds" (re-checked by :func:`check_pair`); a
    refutation proves that no pair satisfies (i)-(iv).  The failing clause is then the first stage whose
    scan refutes while the stage before it has a witness pair (which shows the clauses before hold
    together, as the exhaustive checker's wording says): (iv), (iii) or (ii) ("no delta_0 ...", worded
    so only when some evaluated value is a pass state of (ii) with sigma~ finite and at most 2^e_max,
    as the exhaustive checker words it).  The refutation cover is the certificate, re-proved by
    ``condcheck recheck``.  Returns that Verdict, or a note (str) for the evidence ("" when the scan does
    not apply: callable activations, implementations other than "exact")."""
    if not scans_apply(rounded):
        return ""
    fmt = rounded.format
    T = Fraction(2) ** fmt.e_max
    scans = []
    for stage in (4, 3, 2, 1):
        sc = scan_pairs(rounded, stage, check_pair, max_intervals=max_intervals, time_limit=time_limit)
        scans.append(sc)
        if sc.status != "refuted":
            break
    last = scans[-1]
    if scans[0].status == "witness":
        w, fail = check_pair(rounded, *last.witness)
        if w is None:
            raise AssertionError(f"internal: pair-scan witness {last.witness} fails the exact re-check: {fail}")
        return Verdict(method="symbolic", holds=True, witness=w, seconds=time.perf_counter() - t0,
                       evidence=(f"{evidence}; the certified pair scan (interval covers of every value of "
                                 f"{fmt.name}, depth-first search) found the witness pair in "
                                 f"{last.seconds:.2f} s ({last.intervals} interval and {last.points} point "
                                 f"evaluations)"), **verdict_names(CONDITION, rounded))
    if last.status == "undecided":
        if len(scans) == 1:
            return f"the certified pair scan of (i)-(iv) did not finish: {last.reason}"
        return (f"the certified pair scan refuted clauses (i)..{_STAGE_CLAUSE[scans[-2].stage]} together but did not "
                f"finish (i)..{_STAGE_CLAUSE[last.stage]}: {last.reason}")
    if last.status == "refuted":
        return "the certified pair scan refuted every stage down to (i) alone; not worded as the exhaustive checker words (i)"
    # scans[-2] refuted stage s, scans[-1] has a witness of stage s - 1
    failing = scans[-2]
    stage = failing.stage
    d0, d1 = last.witness
    known_pass = None
    if stage == 2:
        known_pass = next((q for q, s, d in evaluated if abs(s) <= T and (k := power_of_two_exponent(d)) is not None
                           and -fmt.M <= k <= 0), None)
        if known_pass is None:
            return ("the certified pair scan refuted (i)-(ii) together, but no evaluated value is a pass state "
                    "with |sigma~| <= 2^e_max, so the exhaustive wording of (ii) is not decided")
    text = stage_text(fmt, stage)
    before = {4: "(i)-(iii)", 3: "(i)-(ii)", 2: "(i)"}[stage]
    s0, s1 = rounded.value(d0), rounded.value(d1)
    ds0, ds1 = rounded.derivative(d0), rounded.derivative(d1)
    _, why = check_pair(rounded, d0, d1)
    ref = {"clause": _STAGE_CLAUSE[stage], "kind": "pairs", "stage": stage,
           "excludes": f"every pair (delta_0, delta_1) of values satisfying clauses (i)..{_STAGE_CLAUSE[stage]}",
           "range": "every finite value of the format, from -Omega to Omega, for delta_0 and for delta_1",
           "cover": failing.cover_text()}
    counter = {"why": (f"no pair of values of {fmt.name} satisfies clauses (i)..{_STAGE_CLAUSE[stage]} (proved by "
                       f"the refutation cover: no pass interval has a compatible shrinking partner), while the pair "
                       f"below satisfies {before}"),
               "refutation": ref, f"pair_for_{before}": pair_report(fmt, d0, d1, s0, s1, ds0, ds1),
               "pair_fails": why[1] if why else None}
    if known_pass is not None:
        counter["pass_state"] = exact_value(known_pass, fmt)
    return Verdict(method="symbolic", holds=False, failing_clause=text, counterexample=counter,
                   seconds=time.perf_counter() - t0,
                   evidence=(f"{evidence}; clauses (i)..{_STAGE_CLAUSE[stage]} refuted over every pair by the "
                             f"certified pair scan: {failing.summary()}; {before} hold at "
                             f"(delta_0, delta_1) = ({num_text(d0)}, {num_text(d1)})"),
                   **verdict_names(CONDITION, rounded))
