"""An independent judge of condition certificates for the mutation suite: does a certificate state only
true facts?

Written from the statements -- the docstrings of conditions/condition1-3.py and the field list of
condcheck/recheck/schema.py -- and not from recheck's code (nothing here imports ``condcheck.recheck``):

* values of a format and their bit patterns are decoded by tests/fp_reference.py (ml_dtypes views, or the
  IEEE formula for bM_E), RN(zeta + |x|) is its brute-force nearest-value rounding;
* sigma~ and sigma~' come from the rounded activation (the certain evaluation all parts share);
* the conditions are decided by brute force over every value (formats of at most 16 bits): Condition 1 by
  a scan from -Omega, Condition 2 by pass and shrinking value sets per exponent, Condition 3 (formats of
  at most 8 bits) over every pair (zeta, x).

For formats too wide to enumerate (float32) the judge takes the universally quantified facts of the
unmutated certificate as given -- the dead tail up to its z_d and the verdicts, which the checkers' own
tests and recheck establish -- and decides everything else (every point, count and the structure of the
covers) itself.  ``judge(cert)`` returns (True, "") or (False, why); ``Undecidable`` is raised where the
judge cannot tell (the suite then fails: every mutant must be judged).

Statement meanings (as the schema documents them): a "fails" with method exhaustive names the *first*
failing clause; with method symbolic a clause that no candidate satisfies together with the clauses
before it.  A cover's tags ``e``/``m`` are proof hints (not facts), ``p`` states a single value; the
pair cover of Condition 2 states only that it tiles the format.  A proof that no longer proves is still
a true statement, and recheck may reject it (that is allowed).
"""
from __future__ import annotations

import bisect
import re
from fractions import Fraction
from functools import lru_cache

import ml_dtypes
import numpy as np

from conditions import condition1, condition2, condition3
from condcheck.activations import get_activation
from condcheck.check import SEMANTICS
from condcheck.errors import CondcheckError, FormatOverflowError
from condcheck.formats import get_format
from condcheck.rounded_activation import get_rounded
from fp_reference import NearestReference, decode_custom, decode_dtype

DTYPES = {"float4_e2m1fn": ml_dtypes.float4_e2m1fn, "float6_e2m3fn": ml_dtypes.float6_e2m3fn,
          "float6_e3m2fn": ml_dtypes.float6_e3m2fn, "float8_e4m3": ml_dtypes.float8_e4m3,
          "float8_e5m2": ml_dtypes.float8_e5m2, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
          "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
PAPER_SIX = ("relu", "elu", "gelu", "swish", "sigmoid", "tanh")


class Undecidable(Exception):
    """The judge cannot decide a statement (a test-design problem, not a verdict)."""


class Bad(Exception):
    """A false or malformed statement (the message says which)."""


def need(ok, why):
    if not ok:
        raise Bad(why)


# ---- the format, decoded independently ---------------------------------------------------------------
class Grid:
    """Every finite value of a format (ascending Fractions) and the bit pattern of each (small formats), or
    a float32 stand-in (ordinal and bits by numpy views)."""

    def __init__(self, name: str):
        self.name = name
        if name == "float32":
            self.values = None
            self.bits = 32
            self.omega = Fraction(float(np.finfo(np.float32).max))
            self.M, self.E, self.e_min, self.e_max = 23, 8, -126, 127
            return
        m = re.fullmatch(r"b(\d+)_(\d+)", name)
        dec = decode_custom(int(m[1]), int(m[2])) if m else decode_dtype(DTYPES[name])
        self.bits = dec.bits
        self.pattern = dec.pattern_of()
        self.values = dec.sorted_values()
        self.index = {v: i for i, v in enumerate(self.values)}
        self.rn = NearestReference(dec)
        self.omega = self.values[-1]
        f = get_format(name)                   # fields only (M, E, e_min, e_max): the statements use them
        self.M, self.E, self.e_min, self.e_max = f.M, f.E, f.e_min, f.e_max
        need(self.omega == f.max, "grid")

    def contains(self, q) -> bool:
        if self.values is None:
            return _f64(q) and abs(q) <= self.omega and Fraction(float(np.float32(float(q)))) == q
        return q in self.index

    def bits_of(self, q) -> str:
        if self.values is None:
            return format(int(np.array([float(q)], np.float32).view(np.uint32)[0]), "032b")
        return format(self.pattern[q], f"0{self.bits}b")

    def ordinal(self, q) -> int:
        if self.values is None:
            i = int(np.array([float(q)], np.float32).view(np.int32)[0])
            return i if i >= 0 else -(i & 0x7FFFFFFF)
        return self.index[q]

    def neighbours(self, q):
        """(the value below, the value above), None at the ends."""
        if self.values is None:
            f = np.float32(float(q))
            with np.errstate(over="ignore"):
                dn, up = np.nextafter(f, np.float32(-np.inf)), np.nextafter(f, np.float32(np.inf))
            ok = lambda v: Fraction(float(v)) if np.isfinite(v) else None     # noqa: E731
            return ok(dn), ok(up)
        i = self.index[q]
        return (self.values[i - 1] if i > 0 else None), (self.values[i + 1] if i + 1 < len(self.values) else None)

    def round(self, x):
        if self.values is None:                  # float32: condcheck's exact rounding (shared arithmetic)
            from condcheck.rounding import round_fraction
            try:
                return round_fraction(Fraction(x), get_format("float32"))
            except FormatOverflowError:
                return None
        return self.rn.round(x)


def _f64(q) -> bool:
    try:
        return Fraction(float(q)) == q
    except OverflowError:
        return False


@lru_cache(maxsize=None)
def grid(name: str) -> Grid:
    return Grid(name)


# ---- exact values as the certificate writes them ----------------------------------------------------
HEX = re.compile(r"^(-?)0x([0-9a-fA-F]+)(?:\.([0-9a-fA-F]*))?p([+-][0-9]+)$")


def hex_value(t):
    m = HEX.match(t) if isinstance(t, str) else None
    need(m is not None, f"{t!r} is not a hexadecimal float")
    sign, whole, frac, exp = m.groups()
    frac = frac or ""
    q = Fraction(int(whole + frac, 16)) * Fraction(2) ** (int(exp) - 4 * len(frac))
    return -q if sign else q


def value(G: Grid, rec, where):
    need(isinstance(rec, dict) and set(rec) == {"hex", "fraction", "bits"}, f"{where}: not a value record")
    q = hex_value(rec["hex"])
    need(isinstance(rec["fraction"], str) and re.fullmatch(r"-?\d+(/\d+)?", rec["fraction"]) is not None,
         f"{where}: fraction")
    need(Fraction(rec["fraction"]) == q and str(q) == rec["fraction"], f"{where}: fraction and hex differ")
    need(G.contains(q), f"{where}: not in the format")
    need(rec["bits"] == G.bits_of(q), f"{where}: bits")
    return q


def pow2(q) -> bool:
    a = abs(Fraction(q))
    return a > 0 and a.numerator & (a.numerator - 1) == 0 and a.denominator & (a.denominator - 1) == 0


def log2(q) -> int:
    a = abs(Fraction(q))
    return a.numerator.bit_length() - a.denominator.bit_length()


# ---- sigma~ and the conditions by brute force ---------------------------------------------------------
class Truth:
    """sigma~ and sigma~' of one (activation, format, implementation), and the conditions decided over
    every value (small formats)."""

    def __init__(self, act: str, fmt: str, impl: str, reference=None):
        self.G = G = grid(fmt)
        self.r = get_rounded(act, fmt, impl)
        self.act, self.fmt, self.impl, self.reference = act, fmt, impl, reference
        self.T = Fraction(2) ** G.e_max
        self._memo, self._cache = {}, {}
        if G.values is not None and G.bits <= 16:
            t = self.r.table()
            for i, q in enumerate(G.values):
                assert Fraction(float(t.points[i])) == q
                self._memo[q] = (None if t.sigma_overflow[i] else Fraction(float(t.sigma[i])),
                                 None if t.dsigma_overflow[i] else Fraction(float(t.dsigma[i])))

    def s(self, q):
        return self._pair(q)[0]

    def d(self, q):
        return self._pair(q)[1]

    def _pair(self, q):
        q = Fraction(q)
        if q not in self._memo:
            def ev(fn):
                try:
                    return fn(q)
                except FormatOverflowError:
                    return None
            self._memo[q] = (ev(self.r.value), ev(self.r.derivative))
        return self._memo[q]

    @property
    def enumerable(self):
        return self.G.values is not None

    def dead(self, q, L) -> bool:
        return L is not None and self.s(q) == L and self.d(q) == 0

    # Condition 1 -----------------------------------------------------------------------------------
    @property
    def L(self):
        return self.s(-self.G.omega)

    def first_live(self):
        """The first value (from -Omega) that is not dead, or None."""
        if "first" not in self._cache:
            if not self.enumerable:
                self._cache["first"] = self.G.neighbours(self.reference_zd())[1]
            else:
                self._cache["first"] = next((q for q in self.G.values if not self.dead(q, self.L)), None)
        return self._cache["first"]

    def reference_zd(self):
        w = self.reference["conditions"]["1"]["witness"]
        if w is None:
            raise Undecidable("no reference dead tail")
        return Fraction(w["z_dead"]["fraction"])

    def all_dead_upto(self, z) -> bool:
        f = self.first_live()
        return f is None or z < f

    def c1_first_failing(self):
        if "c1" not in self._cache:
            self._cache["c1"] = self._c1_first_failing()
        return self._cache["c1"]

    def _c1_first_failing(self):
        if not self.enumerable:
            raise Undecidable("Condition 1 on a wide format")
        V, L, om = self.G.values, self.L, self.G.omega
        f = self.first_live()
        if f is not None and f <= -om / 2:
            return "(a)"
        above = [q for q in V if f is not None and q >= f]
        if not any(self.s(q) is not None and self.s(q) != L for q in above):
            return "(b)"
        if not any(self.s(q) is not None and self.s(q) > 0 and pow2(self.s(q)) for q in V):
            return "(c)"
        if not any(self.s(q) == 0 for q in V):
            return "(d)"
        if not any(self.d(q) is not None and pow2(self.d(q)) for q in above):
            return "(e)"
        return None

    # Condition 2 -----------------------------------------------------------------------------------
    def c2_stage_holds(self, stage: int) -> bool:
        if ("c2", stage) not in self._cache:
            self._cache[("c2", stage)] = self._c2_stage_holds(stage)
        return self._cache[("c2", stage)]

    def _c2_stage_holds(self, stage: int) -> bool:
        if not self.enumerable:
            raise Undecidable("Condition 2 on a wide format")
        G, T = self.G, self.T
        A = [q for q in G.values if self.s(q) is not None and self.d(q) is not None and abs(self.s(q)) <= T]
        if stage == 1:
            vs = sorted({self.s(q) for q in A})
            return any(b - a <= T for a, b in zip(vs, vs[1:]))
        for k in range(-G.M, 1):
            if stage >= 3 and not (-k <= G.e_max and k <= -G.e_min + G.M):
                continue
            p = Fraction(2) ** k
            P = sorted({self.s(q) for q in A if abs(self.d(q)) == p})
            B = sorted({self.s(q) for q in A if 2 * abs(self.d(q)) <= p})
            for s1 in P:
                lo, hi = s1 - T, s1 + T
                for s0 in B[bisect.bisect_left(B, lo):bisect.bisect_right(B, hi)]:
                    if s0 == s1:
                        continue
                    if stage >= 4:
                        m = max(abs(s0), abs(s1))
                        if not Fraction(2) ** (G.e_min + k) <= m <= Fraction(2) ** (G.e_max + k):
                            continue
                    return True
        return False

    def pair_stages(self, d0, d1) -> int:
        G, T = self.G, self.T
        s0, s1, g0, g1 = self.s(d0), self.s(d1), self.d(d0), self.d(d1)
        if None in (s0, s1, g0, g1) or s0 == s1 or max(abs(s0), abs(s1), abs(s0 - s1)) > T:
            return 0
        if not (pow2(g1) and -G.M <= log2(g1) <= 0 and 2 * abs(g0) <= abs(g1)):
            return 1
        k = log2(g1)
        if not (-k <= G.e_max and k <= -G.e_min + G.M):
            return 2
        if not Fraction(2) ** (G.e_min + k) <= max(abs(s0), abs(s1)) <= Fraction(2) ** (G.e_max + k):
            return 3
        return 4

    def c2_first_failing(self):
        for stage, c in enumerate(("(i)", "(ii)", "(iii)", "(iv)"), 1):
            if not self.c2_stage_holds(stage):
                return c
        return None

    # Condition 3 -----------------------------------------------------------------------------------
    def bounded(self, t) -> bool:
        v = self.s(t)
        return v is not None and abs(v) <= self.T

    def even(self, x) -> bool:
        return int(self.G.bits_of(abs(x))[-1]) == 0

    def c3_holds(self) -> bool:
        if "c3" not in self._cache:
            self._cache["c3"] = self._c3_holds()
        return self._cache["c3"]

    def _c3_holds(self) -> bool:
        G = self.G
        if not self.enumerable or G.bits > 8:
            raise Undecidable("Condition 3 over every (zeta, x) on a format of more than 8 bits")
        thr = Fraction(2) ** -G.M
        pos = [q for q in G.values if q > 0]
        d0 = self.d(0)
        if d0 is not None and abs(d0) >= thr and any(self.bounded(-z) and self.bounded(0) and self.bounded(z)
                                                      for z in pos):
            return True
        for x in G.values:
            if x == 0 or not self.even(x) or self.s(x) is None or self.d(x) is None or abs(self.d(x)) < thr:
                continue
            for z in pos:
                if z > abs(x):
                    break
                s = G.round(z + abs(x))
                if s is not None and self.bounded(-s) and self.bounded(0) and self.bounded(s):
                    return True
        return False

    def condition_truth(self, key):
        """True / False for the condition (None: the judge takes the reference's verdict)."""
        if self.enumerable and self.G.bits <= 16 and (key != "3" or self.G.bits <= 8):
            return {"1": lambda: self.c1_first_failing() is None, "2": lambda: self.c2_first_failing() is None,
                    "3": self.c3_holds}[key]()
        if self.reference is None or self.reference["conditions"][key]["holds"] is None:
            raise Undecidable(f"Condition {key} on {self.fmt}")
        return self.reference["conditions"][key]["holds"]

    # the kinds of value a refutation excludes -------------------------------------------------------
    def of_kind(self, kind, v, L) -> bool:
        G = self.G
        if v is None:
            return False
        if kind == "finite_not_L":
            return v != L
        if kind == "positive_pow2":
            return v > 0 and pow2(v)
        if kind == "zero":
            return v == 0
        if kind == "nonzero_pow2":
            return pow2(v)
        if kind == "pass_pow2":
            return pow2(v) and -G.M <= log2(v) <= 0
        if kind == "pass_pow2_iii":
            k = log2(v) if pow2(v) else None
            return k is not None and -G.M <= k <= 0 and -k <= G.e_max and k <= -G.e_min + G.M
        if kind == "abs_at_least_2^-M":
            return abs(v) >= Fraction(2) ** -G.M
        raise Bad(f"unknown kind {kind!r}")


_TRUTHS = {}


def truth(act, fmt, impl, reference) -> Truth:
    """One Truth per (activation, format, implementation, reference certificate)."""
    key = (act, fmt, impl, id(reference))
    if key not in _TRUTHS:
        if len(_TRUTHS) > 16:
            _TRUTHS.clear()
        _TRUTHS[key] = Truth(act, fmt, impl, reference)
    return _TRUTHS[key]


# ---- the certificate ------------------------------------------------------------------------------
CLAUSE_TEXT = {"1": {c: f"{c} {w}" for c, w in condition1.CLAUSES.items()},
               "2": {c: f"{c} {w}" for c, w in condition2.CLAUSES.items()},
               "3": {"(a)+(b)": f"(a)+(b) neither route: (a) {condition3.CLAUSES['(a)']}; (b) {condition3.CLAUSES['(b)']}"}}
KIND_OF = {("1", "(b)"): ("sigma", "finite_not_L"), ("1", "(c)"): ("sigma", "positive_pow2"), ("1", "(d)"): ("sigma", "zero"),
           ("1", "(e)"): ("derivative", "nonzero_pow2"), ("2", "(ii)"): ("derivative", "pass_pow2"),
           ("2", "(iii)"): ("derivative", "pass_pow2_iii"), ("3", "(b)"): ("derivative", "abs_at_least_2^-M")}
BEFORE = {"(ii)": "(i)", "(iii)": "(i)-(ii)", "(iv)": "(i)-(iii)"}
STAGE = {"(i)": 1, "(ii)": 2, "(iii)": 3, "(iv)": 4}


def keys(obj, want, where):
    need(isinstance(obj, dict), f"{where}: not an object")
    need(set(obj) == set(want), f"{where}: fields {sorted(set(obj) ^ set(want))}")


def judge(cert, reference=None) -> tuple[bool, str]:
    try:
        _judge(cert, reference)
        return True, ""
    except Bad as e:
        return False, str(e)


def _judge(c, reference):
    need(isinstance(c, dict), "not an object")
    required = {"schema", "activation", "format", "implementation", "semantics", "holds", "conditions",
                "theorem_branch", "M_sigma", "H_sigma", "constants_source", "depth_bounds"}
    need(required <= set(c) <= required | {"sigma_source", "seconds"}, f"top fields {sorted(set(c) ^ required)}")
    need(c["schema"] == "condcheck.check/2", "schema")
    for k in ("activation", "format", "implementation"):
        need(isinstance(c[k], str), k)
    try:
        act = get_activation(c["activation"]).name
        fmt = get_format(c["format"]).name
        r = get_rounded(act, fmt, c["implementation"])
    except CondcheckError:
        raise Bad("names") from None
    need(act == c["activation"] and fmt == c["format"], "names as the registries spell them")
    need(c["semantics"] == SEMANTICS, "semantics")
    t = truth(act, fmt, c["implementation"], reference)
    G = t.G
    # the paper's statements (arXiv 2605.01702)
    need(c["theorem_branch"] == ("main (E >= 6)" if G.E >= 6 else "low-exponent appendix (E = 4, 5)"
                                 if G.E in (4, 5) else "not covered (E < 4)"), "theorem_branch")
    M_s, H_s = {"relu": (G.e_max - 2, None), "elu": (G.e_max - 2, None), "gelu": (G.e_max - 2, None),
                "swish": (G.e_max - 2, None), "sigmoid": (G.e_max - 1, G.M - 1), "tanh": (G.e_max - 1, G.M - 2)}.get(act, (None, None))
    if M_s is None:
        need(c["M_sigma"] is None and c["H_sigma"] is None, "M_sigma, H_sigma: none for this activation")
    else:
        need(c["M_sigma"] is not None and hex_value(c["M_sigma"]) == Fraction(2) ** M_s, "M_sigma")
        need(c["H_sigma"] is not None and hex_value(c["H_sigma"]) == (G.omega if H_s is None else Fraction(2) ** H_s), "H_sigma")
    need(c["constants_source"] == ("paper (arXiv 2605.01702)" if act in PAPER_SIX else
                                   "unknown: the paper's formulas for M_sigma, H_sigma from witnesses are not available"),
         "constants_source")
    t7 = 2 ** (G.E + 1) + 2 * G.M
    need(c["depth_bounds"] == {"theorem5": {"openreview": 7, "arxiv_v2": 9},
                               "theorem7": {"openreview": t7 + 9, "arxiv_v2": t7 + 11}}
         and all(type(v) is int for d in c["depth_bounds"].values() for v in d.values()), "depth_bounds")
    note = get_rounded(act, fmt, c["implementation"]).source_note
    need(c.get("sigma_source") == (note or None) and (bool(note) == ("sigma_source" in c)), "sigma_source")
    keys(c["conditions"], ("1", "2", "3"), "conditions")
    states = []
    for k in ("1", "2", "3"):
        states.append(_condition(t, k, c["conditions"][k]))
    overall = False if False in states else None if None in states else True
    need(c["holds"] is overall, "holds is not the conjunction")


def _condition(t: Truth, k, v):
    G = t.G
    keys(v, ("verdict", "holds", "method", "witness", "failing_clause", "counterexample"), f"condition {k}")
    holds = v["holds"]
    need(holds is None or type(holds) is bool, "holds type")
    need(v["verdict"] == {True: "holds", False: "fails", None: "undecided"}[holds], "verdict text")
    need(v["method"] in ("exhaustive", "symbolic"), "method")
    if v["method"] == "exhaustive":
        # up to 16 bits in one pass, 17 to 32 bits in chunks (the schema's "exhaustive")
        need(G.bits <= 32 and holds is not None, "exhaustive: at most 32 bits, and decided")
    for name in {True: ("failing_clause", "counterexample"), False: ("witness",),
                 None: ("witness", "failing_clause", "counterexample")}[holds]:
        need(v[name] is None, f"{name} must be null")
    if holds is None:
        return None
    if holds:                                  # a valid witness proves the condition
        {"1": _w1, "2": _w2, "3": _w3}[k](t, v["witness"], v["method"])
    else:
        need(t.condition_truth(k) is False, f"Condition {k} holds")
        clause = next((cid for cid, text in CLAUSE_TEXT[k].items() if text == v["failing_clause"]), None)
        need(clause is not None, "failing clause text")
        {"1": _f1, "2": _f2, "3": _f3}[k](t, v, clause)
    return holds


def _eq(t, rec, actual, where):
    got = None if rec is None else value(t.G, rec, where)
    need(got == actual, f"{where}: reported {got}, actual {actual}")


def _w1(t, w, method):
    G = t.G
    want = {"z_dead", "L", "dead_count", "live", "sigma(live)", "constant", "sigma(constant)", "zero", "pass",
            "dsigma(pass)"} | ({"tail_cover"} if method == "symbolic" else set())
    keys(w, want, "witness 1")
    zd = value(G, w["z_dead"], "z_dead")
    L = t.L
    _eq(t, w["L"], L, "L")
    need(zd >= -G.omega / 2 and t.all_dead_upto(zd), "the tail up to z_d is not dead, or z_d < -Omega/2")
    need(type(w["dead_count"]) is int and w["dead_count"] == G.ordinal(zd) - G.ordinal(-G.omega) + 1, "dead_count")
    if method == "symbolic":
        _tail_cover(t, w["tail_cover"], zd)
    live, b, z0, p = (value(G, w[n], n) for n in ("live", "constant", "zero", "pass"))
    _eq(t, w["sigma(live)"], t.s(live), "sigma(live)")
    need(live > zd and t.s(live) is not None and t.s(live) != L, "live")
    _eq(t, w["sigma(constant)"], t.s(b), "sigma(constant)")
    need(t.s(b) is not None and t.s(b) > 0 and pow2(t.s(b)), "constant")
    need(t.s(z0) == 0, "zero")
    _eq(t, w["dsigma(pass)"], t.d(p), "dsigma(pass)")
    need(p > zd and t.d(p) is not None and pow2(t.d(p)), "pass")


def _intervals(t, text, tagged, end):
    G = t.G
    need(isinstance(text, str), "cover text")
    pat = r"([epm])\[([^,\]\s]+), ([^\]\s]+)\]" if tagged else r"\[([^,\]\s]+), ([^\]\s]+)\]"
    items = re.findall(pat, text)
    need(" ".join(f"{i[0]}[{i[1]}, {i[2]}]" if tagged else f"[{i[0]}, {i[1]}]" for i in items) == text and items,
         "cover syntax")
    out, expect = [], -G.omega
    for it in items:
        tag, a, b = it if tagged else ("", *it)
        a, b = hex_value(a), hex_value(b)
        need(G.contains(a) and G.contains(b) and a == expect and a <= b <= end, "cover does not tile")
        need(tag != "p" or a == b, "p with two ends")
        out.append((tag, a, b))
        if b == end:
            break
        expect = G.neighbours(b)[1]
    need(out and out[-1][2] == end and len(out) == len(items), "cover does not end at its end")
    return out


def _values_in(t, a, b):
    V = t.G.values
    if V is None:
        raise Undecidable("the values of an interval of a wide format")
    return V[bisect.bisect_left(V, a):bisect.bisect_right(V, b)]


def _tail_cover(t, text, zd):
    for _, a, b in _intervals(t, text, False, zd):
        if t.enumerable:
            need(all(t.dead(q, t.L) for q in _values_in(t, a, b)), "a tail interval is not dead")
        else:
            need(t.all_dead_upto(b), "a tail interval is not dead")


def _refutation(t, ref, cond, clause, L=None):
    keys(ref, ("clause", "function", "kind", "cover"), "refutation")
    need(ref["clause"] == clause and (ref["function"], ref["kind"]) == KIND_OF[(cond, clause)], "refutation fields")
    fn = t.s if ref["function"] == "sigma" else t.d
    for _, a, b in _intervals(t, ref["cover"], True, t.G.omega):
        need(not any(t.of_kind(ref["kind"], fn(q), L) for q in _values_in(t, a, b)), "a cover interval holds the kind")


def _f1(t, v, clause):
    G, cx = t.G, v["counterexample"]
    if v["method"] == "exhaustive" and clause != "(a)":      # (a) is the first clause: its point proves it
        need(t.c1_first_failing() == clause, "first failing clause of Condition 1")
    elif clause != "(a)":
        pass                                   # refuted by the cover below, over every value
    point = {"z", "sigma(z)", "dsigma(z)"}
    if clause == "(a)":
        keys(cx, point, "counterexample")
        z = value(G, cx["z"], "z")
        _eq(t, cx["sigma(z)"], t.s(z), "sigma(z)")
        _eq(t, cx["dsigma(z)"], t.d(z), "dsigma(z)")
        need(z <= -G.omega / 2 and not t.dead(z, t.L), "z")
        return
    want = ({"L"} if clause == "(b)" else set()) | ({"smallest_|sigma|"} if clause == "(d)" and v["method"] == "exhaustive"
                                                    else set()) | ({"refutation"} if v["method"] == "symbolic" else set())
    keys(cx, want, "counterexample")
    if clause == "(b)":
        _eq(t, cx["L"], t.L, "L")
    if "smallest_|sigma|" in want:
        _eq(t, cx["smallest_|sigma|"], min(abs(t.s(q)) for q in G.values if t.s(q) is not None), "smallest |sigma|")
    if v["method"] == "symbolic":
        _refutation(t, cx["refutation"], "1", clause, t.L)


def _pair(t, rec, where):
    keys(rec, ("delta_0", "delta_1", "sigma(delta_0)", "sigma(delta_1)", "dsigma(delta_0)", "dsigma(delta_1)"), where)
    d0, d1 = value(t.G, rec["delta_0"], where), value(t.G, rec["delta_1"], where)
    for n, q, fn in (("sigma(delta_0)", d0, t.s), ("sigma(delta_1)", d1, t.s), ("dsigma(delta_0)", d0, t.d),
                     ("dsigma(delta_1)", d1, t.d)):
        need(rec[n] is not None, where)
        _eq(t, rec[n], fn(q), f"{where}.{n}")
    return d0, d1


def _f2(t, v, clause):
    cx = v["counterexample"]
    stage = STAGE[clause]
    need(not t.c2_stage_holds(stage), f"a pair satisfies (i)..{clause}")
    if v["method"] == "exhaustive":
        need(t.c2_first_failing() == clause, "first failing clause of Condition 2")
        if clause == "(i)":
            keys(cx, ("distinct_sigma_values", "count"), "counterexample")
            vals = sorted({t.s(q) for q in t.G.values if t.s(q) is not None and t.d(q) is not None
                           and abs(t.s(q)) <= t.T})
            need(isinstance(cx["distinct_sigma_values"], list)
                 and [value(t.G, x, "distinct") for x in cx["distinct_sigma_values"]] == vals[:8], "distinct values")
            need(cx["count"] == len(vals) and type(cx["count"]) is int, "count")
            return
        keys(cx, (f"pair_for_{BEFORE[clause]}",), "counterexample")
    else:
        ref = cx.get("refutation") if isinstance(cx, dict) else None
        if isinstance(ref, dict) and ref.get("kind") == "pairs":
            keys(cx, ("refutation", f"pair_for_{BEFORE.get(clause, '?')}"), "counterexample")
            keys(ref, ("clause", "kind", "cover"), "pair refutation")
            need(ref["clause"] == clause, "pair refutation clause")
            _intervals(t, ref["cover"], True, t.G.omega)         # a proof object: it states that it tiles
        else:
            keys(cx, ("refutation",), "counterexample")
            need((("2", clause)) in KIND_OF, "no refutation for this clause")
            _refutation(t, ref, "2", clause)
            return
    key = f"pair_for_{BEFORE[clause]}"
    d0, d1 = _pair(t, cx[key], key)
    need(t.pair_stages(d0, d1) >= stage - 1, "the pair does not satisfy the clauses before")


def _w2(t, w, method):
    G = t.G
    keys(w, ("delta_0", "delta_1", "sigma(delta_0)", "sigma(delta_1)", "dsigma(delta_0)", "dsigma(delta_1)", "eta_0",
             "eta_0_unbounded", "eta_1", "eta_2", "k"), "witness 2")
    d0, d1 = _pair(t, {k: w[k] for k in ("delta_0", "delta_1", "sigma(delta_0)", "sigma(delta_1)", "dsigma(delta_0)",
                                         "dsigma(delta_1)")}, "witness 2")
    s0, s1, g0, g1 = t.s(d0), t.s(d1), t.d(d0), t.d(d1)
    need(s0 != s1 and max(abs(s0), abs(s1), abs(s0 - s1)) <= t.T, "(i)")
    k, e0, e1, e2, unb = w["k"], w["eta_0"], w["eta_1"], w["eta_2"], w["eta_0_unbounded"]
    need(type(k) is int and pow2(g1) and log2(g1) == k and -G.M <= k <= 0, "k")
    need(type(unb) is bool, "eta_0_unbounded")
    if unb:
        need(e0 is None and g0 == 0, "unbounded eta_0")
    else:
        need(type(e0) is int and e0 >= 1 and Fraction(2) ** e0 * abs(g0) <= abs(g1), "eta_0")
    need(type(e1) is int and type(e2) is int and -k <= e1 <= G.e_max and k <= e2 <= -G.e_min + G.M, "(iii)")
    need(Fraction(2) ** (G.e_min + e2) <= max(abs(s0), abs(s1)) <= Fraction(2) ** (G.e_max - e1), "(iv)")


def _w3(t, w, method):
    G = t.G
    need(isinstance(w, dict) and w.get("route") in ("a", "b"), "route")
    route = w["route"]
    d_key = "dsigma(0)" if route == "a" else "dsigma(x)"
    keys(w, ("route", "zeta", "x", "s", d_key, "sigma(-s)", "sigma(0)", "sigma(s)"), "witness 3")
    zeta = value(G, w["zeta"], "zeta")
    thr = Fraction(2) ** -G.M
    need(zeta > 0, "zeta > 0")
    if route == "a":
        need(w["x"] is None, "x is null for route (a)")
        _eq(t, w[d_key], t.d(0), "dsigma(0)")
        need(t.d(0) is not None and abs(t.d(0)) >= thr, "|sigma'(0)|")
        s = zeta
    else:
        x = value(G, w["x"], "x")
        need(abs(x) >= zeta, "|x| >= zeta")
        need(t.even(x), "x even")
        s = G.round(zeta + abs(x))
        need(s is not None, "s finite")
        _eq(t, w[d_key], t.d(x), "dsigma(x)")
        need(t.s(x) is not None and t.d(x) is not None and abs(t.d(x)) >= thr, "route (b) derivative")
    _eq(t, w["s"], s, "s")
    for n, q in (("sigma(-s)", -s), ("sigma(0)", Fraction(0)), ("sigma(s)", s)):
        _eq(t, w[n], t.s(q), n)
        need(t.bounded(q), f"{n} bounded")


def _f3(t, v, clause):
    G, cx = t.G, v["counterexample"]
    thr = Fraction(2) ** -G.M
    want = {"dsigma(0)", "threshold_2^-M"} | ({"largest_|dsigma|", "x_candidates_route_b"} if v["method"] == "exhaustive"
                                             else {"refutation"})
    keys(cx, want, "counterexample")
    _eq(t, cx["threshold_2^-M"], thr, "threshold")
    _eq(t, cx["dsigma(0)"], t.d(0), "dsigma(0)")
    if v["method"] == "exhaustive":
        ds = [abs(t.d(q)) for q in G.values if t.d(q) is not None]
        _eq(t, cx["largest_|dsigma|"], max(ds) if ds else None, "largest")
        n = sum(1 for x in G.values if x != 0 and t.even(x) and t.s(x) is not None and t.d(x) is not None
                and abs(t.d(x)) >= thr)
        need(cx["x_candidates_route_b"] == n and type(n) is int, "x candidates")
    else:
        need(t.d(0) is None or abs(t.d(0)) < thr, "route (a) fails at 0")
        _refutation(t, cx["refutation"], "3", "(b)")
