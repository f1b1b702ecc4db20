"""recheck's own enumeration of a format of at most 16 bits: Conditions 1-3 decided from every value.

Written from the statements (``recheck.schema``), not from the checkers: every value of the format and
sigma~, sigma~' there (the certain evaluation's table, shared) become Python integers in units of the
smallest subnormal, so every comparison and difference below is exact.

* Condition 1: the first value from -Omega up that is not dead ends the tail; clause (a) fails when it
  is at most -Omega/2; (b) asks for a finite sigma~ != L above the tail, (c) a positive power of two
  anywhere, (d) a zero anywhere, (e) sigma~' = +-2^k above the tail.  (Any z_d >= -Omega/2 below the
  first live value is as good as the largest: the values in between are dead.)
* Condition 2 by stages: stage s holds when some pair satisfies clauses (i)..(s).  With
  A = {z : sigma~, sigma~' finite, |sigma~(z)| <= 2^e_max}, for each exponent k allowed at the stage the
  pass values P_k = {sigma~(z) : z in A, |sigma~'(z)| = 2^k} and shrinking values
  B_k = {sigma~(z) : z in A, 2 |sigma~'(z)| <= 2^k} (some eta_0 >= 1); a pair needs s_1 in P_k, s_0 in B_k,
  s_0 != s_1, |s_0 - s_1| <= 2^e_max, and at stage 4 2^(e_min+k) <= max(|s_0|, |s_1|) <= 2^(e_max+k)
  (eta_1 = -k, eta_2 = k, the weakest choice).  Each s_1 is tested against the sorted B_k by bisection.
* Condition 3: route (a) at 0 and every zeta > 0; route (b) for every even x != 0 with a usable
  derivative, over the values s = RN(zeta + |x|) that some 0 < zeta <= |x| reaches: every value of F in
  (|x|, min(2|x|, Omega)] (it is |x| + (s - |x|) exactly, s - |x| being a value of F by Sterbenz's
  lemma), and |x| itself when the smallest subnormal is absorbed, omega <= ulp(|x|)/2 (x is even, so
  the tie rounds to x).  A larger zeta + |x| rounds to at most 2|x| (or overflows).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache


def _is_pow2_int(n: int) -> bool:
    n = abs(n)
    return n > 0 and n & (n - 1) == 0


@dataclass
class Enumeration:
    """Every finite value of a format (ascending) with sigma~ and sigma~' (None: overflow), as integers in
    units of ``unit`` (the smallest subnormal)."""

    fmt: object
    unit: Fraction
    z: list
    s: list
    d: list

    @classmethod
    def of(cls, ctx) -> "Enumeration":
        return _enumeration(ctx.rounded)

    @classmethod
    def build(cls, rounded) -> "Enumeration":
        fmt = rounded.format
        t = rounded.table()
        unit = Fraction(2) ** (fmt.e_min - fmt.M)
        inv = 1 / unit                      # a power of two: an integer

        def ints(arr, over=None):
            out = []
            for i, v in enumerate(arr.tolist()):
                if over is not None and over[i]:
                    out.append(None)
                    continue
                n, den = v.as_integer_ratio()
                out.append(n * int(inv) // den)
            return out
        return cls(fmt, unit, ints(t.points), ints(t.sigma, t.sigma_overflow.tolist()),
                   ints(t.dsigma, t.dsigma_overflow.tolist()))

    def n(self, q: Fraction) -> int:
        return int(Fraction(q) / self.unit)

    def q(self, n: int) -> Fraction:
        return n * self.unit

    @cached_property
    def T(self) -> int:
        return self.n(Fraction(2) ** self.fmt.e_max)

    def pow2_exponent(self, n: int) -> int:
        """k with |n| * unit = 2^k (n a power of two)."""
        return abs(n).bit_length() - 1 + (self.fmt.e_min - self.fmt.M)

    # ---- Condition 1 ----------------------------------------------------------------------------------
    @cached_property
    def condition1(self):
        """(first failing clause or None, details): details has L, z_first (the first value that is not
        dead, or None), smallest_abs_sigma."""
        z, s, d = self.z, self.s, self.d
        L = s[0]
        dead = [s[i] is not None and s[i] == L and d[i] == 0 for i in range(len(z))]
        first = next((i for i, x in enumerate(dead) if not x), None)
        finite = [abs(v) for v in s if v is not None]
        info = {"L": None if L is None else self.q(L),
                "z_first": None if first is None else self.q(z[first]),
                "smallest_abs_sigma": self.q(min(finite)) if finite else None}
        if first is not None and 2 * z[first] <= -z[-1]:      # z <= -Omega/2 (includes -Omega itself)
            return "(a)", info
        above = range(first, len(z)) if first is not None else range(0)
        if not any(s[i] is not None and s[i] != L for i in above):
            return "(b)", info
        if not any(v is not None and v > 0 and _is_pow2_int(v) for v in s):
            return "(c)", info
        if not any(v == 0 for v in s):
            return "(d)", info
        if not any(d[i] is not None and _is_pow2_int(d[i]) for i in above):
            return "(e)", info
        return None, info

    # ---- Condition 2 ----------------------------------------------------------------------------------
    def admissible(self) -> list:
        return [i for i in range(len(self.z))
                if self.s[i] is not None and self.d[i] is not None and abs(self.s[i]) <= self.T]

    def stage_exponents(self, stage: int) -> list:
        fmt = self.fmt
        ks = list(range(-fmt.M, 1))
        if stage >= 3:
            ks = [k for k in ks if -k <= fmt.e_max and k <= -fmt.e_min + fmt.M]
        return ks

    def stage_holds(self, stage: int) -> bool:
        """Does some pair satisfy clauses (i)..(stage) of Condition 2?"""
        A = self.admissible()
        T = self.T
        if stage == 1:
            vals = sorted({self.s[i] for i in A})
            return any(b - a <= T for a, b in zip(vals, vals[1:]))
        for k in self.stage_exponents(stage):
            p = self.n(Fraction(2) ** k)
            P = sorted({self.s[i] for i in A if abs(self.d[i]) == p})
            B = sorted({self.s[i] for i in A if 2 * abs(self.d[i]) <= p})
            if not P or not B:
                continue
            lo = self.n(Fraction(2) ** (self.fmt.e_min + k)) if stage >= 4 else 0
            hi = min(T, self.n(Fraction(2) ** (self.fmt.e_max + k))) if stage >= 4 else T
            for s1 in P:
                if abs(s1) > hi:
                    continue
                a, b = max(s1 - T, -hi), min(s1 + T, hi)
                pieces = [(a, b)] if abs(s1) >= lo else [(a, min(b, -lo)), (max(a, lo), b)]
                for u, v in pieces:
                    if u > v:
                        continue
                    i, j = bisect.bisect_left(B, u), bisect.bisect_right(B, v)
                    count = j - i - (1 if u <= s1 <= v and s1 in B else 0)
                    if count > 0:
                        return True
        return False

    @cached_property
    def condition2(self):
        """The first stage (1..4) no pair satisfies, as its clause id, or None when Condition 2 holds."""
        for stage, clause in ((1, "(i)"), (2, "(ii)"), (3, "(iii)"), (4, "(iv)")):
            if not self.stage_holds(stage):
                return clause
        return None

    def distinct_admissible_sigma(self) -> list:
        return [self.q(v) for v in sorted({self.s[i] for i in self.admissible()})]

    # ---- Condition 3 ----------------------------------------------------------------------------------
    @cached_property
    def condition3(self) -> dict:
        """{"holds", "dsigma(0)", "largest_|dsigma|", "x_candidates_route_b"}."""
        fmt, z, s, d, T = self.fmt, self.z, self.s, self.d, self.T
        index = {v: i for i, v in enumerate(z)}
        i0 = index[0]
        thr = self.n(Fraction(2) ** -fmt.M)

        def bounded(i):
            return s[i] is not None and abs(s[i]) <= T
        pos = [i for i in range(i0 + 1, len(z))]
        good = {z[i]: bounded(i) and bounded(index[-z[i]]) and bounded(i0) for i in pos}
        d0 = d[i0]
        route_a = d0 is not None and abs(d0) >= thr and any(good.values())
        xs = [i for i in range(len(z)) if z[i] != 0 and even_int(fmt, self, z[i]) and s[i] is not None
              and d[i] is not None and abs(d[i]) >= thr]
        positives = [z[i] for i in pos]
        prefix = [0]
        for v in positives:
            prefix.append(prefix[-1] + (1 if good[v] else 0))
        omega = 1                                  # the smallest subnormal, in units
        route_b = False
        for i in xs:
            ax = abs(z[i])
            top = min(2 * ax, positives[-1])
            lo = bisect.bisect_right(positives, ax)        # first value > |x|
            hi = bisect.bisect_right(positives, top)
            if prefix[hi] - prefix[lo] > 0:
                route_b = True
                break
            if 2 * omega <= ulp_int(fmt, self, ax) and good[ax]:
                route_b = True
                break
        finite_d = [abs(v) for v in d if v is not None]
        return {"holds": route_a or route_b, "dsigma(0)": None if d0 is None else self.q(d0),
                "largest_|dsigma|": self.q(max(finite_d)) if finite_d else None,
                "x_candidates_route_b": len(xs)}


@lru_cache(maxsize=8)
def _enumeration(rounded) -> Enumeration:
    """One enumeration per rounded activation (sigma~ and sigma~' of a format do not change)."""
    return Enumeration.build(rounded)


def ulp_int(fmt, en: Enumeration, a: int) -> int:
    """The spacing of the values of fmt at the value a (in units of the smallest subnormal, which is the
    spacing of the subnormals and of the first normal binade)."""
    return 1 << max(abs(a).bit_length() - 1 - fmt.M, 0)


def even_int(fmt, en: Enumeration, n: int) -> bool:
    """Is the last significand bit of the value n (units) zero?"""
    return (abs(n) // ulp_int(fmt, en, n)) % 2 == 0
