r"""Condition 1: the states the Theorem 5 constructor gates with (condcheck's own statement).

The paper's text of Condition 1 was not available (docs/conditions.md).  Its role there: the network must
be able to distinguish inputs and to build exact indicator-like signals.  condcheck states it as what
its own constructor (condcheck/theorem5/) uses, so that the statement is exactly what a construction
relies on.  Clauses, and why each is there:

* (a) **dead tail**: a value z_d >= -Omega/2 such that every finite z <= z_d of F has sigma~(z) = L and
  sigma~'(z) = 0, with one L.  A neuron pushed below z_d outputs the constant L and passes no gradient,
  whatever its upstream value: this is how the constructor makes a branch silent away from its point
  (gates), and why its value path has AD gradient exactly 0.  The tail must reach up to -Omega/2 at
  least, so that a gate can push by a fixed amount without meeting the end of the format (a tail of
  one value at -Omega, as LeakyReLU has in float6, leaves no room).
* (b) **a live state** above the tail: some z > z_d with sigma~(z) finite and != L, so that a step
  neuron has two distinguishable outputs (dead and on).
* (c) **a constant state**: some b with sigma~(b) a positive power of two.  Constant neurons (zero
  input weights, bias b) supply the constants of the rounding chains and of the absorbing output sum,
  and a power of two makes every constant an exact weight.
* (d) **a zero state**: some z with sigma~(z) = 0, the off state of the value outputs, so that the
  output sum over all points is exactly the one value that is on.
* (e) **a live pass state**: some z > z_d with sigma~'(z) = +-2^k (finite, nonzero), so that a gradient
  branch can carry its gradient through a neuron by an exact power-of-two factor.

Distinguishability of a domain (per domain, not part of this condition): see
:func:`condcheck.separators.distinguishability` -- every gap between consecutive coordinate values must
be split monotonically by some first-layer neuron.

Negative controls: the identity fails (a) (sigma~' = 1 everywhere); a constant fails (b); the
Heaviside step fails (e) (sigma~' = 0 everywhere); LeakyReLU fails only (a) (its negative side has
slope 1/100, never a dead tail) while Conditions 2 and 3 hold.

Sufficiency, as measured (``benchmarks/sufficiency.py``): on every format of at most 8 bits in the
theorems' branches (E >= 4) every accepted built-in whose full d = 1 box is distinguishable constructs
and verifies, except on float8_e4m3b11fnuz (Omega = 30), where the steps' on values stay next to the
dead tail and no boost moves them (a known gap of the constructor, README "Sufficiency").  Formats with
E < 4 are outside both branches: nothing is claimed there.

Checkers: :func:`check_exhaustive` (formats of at most 16 bits: every value is enumerated, so a
"holds" is a proof and a "fails" comes with the clause and a counterexample) and
:func:`check_symbolic` for any format: clause (a) quantifies over every value below z_d (about 2^31
values in float32, 2^62 in float64) and is proved by the certified range check of
:mod:`conditions._tail` (interval arithmetic on sigma and sigma' over whole intervals of format values,
bisected from -Omega until each interval provably rounds to L and to 0; single values by certain
rounding), which finds exactly the exhaustive checker's z_d; clauses (b)-(e) are existential and are
proved by witness points evaluated with certain rounding; a clause without a witness among the
candidate points goes to the certified scan of :mod:`conditions._exists`, which covers every value of
the format by intervals (interval enclosures, monotonicity from the sign of the derivative's
enclosure, single values by certain rounding) and either finds a witness or *refutes* the clause (e.g.
sigmoid on float4_e2m1fn: sigmoid' <= 1/4 and RN(1/4) = 0, a tie to even, so no pass state (e)).
Never "holds" from sampling: where the range check does not apply (implementations other than "exact",
callable activations) or a scan hits its caps, the verdict is undecided with the reason.  A symbolic
"fails" comes only with a certificate: a counterexample point for (a) (-Omega not dead, or a non-dead
value <= -Omega/2), or a refutation cover of every value of the format for (b)-(e) (for (b): the whole
format proved dead), re-proved by ``condcheck recheck``.

Witness preference (exhaustive; the symbolic checker has the same z_d and picks the other states by the
same preferences among its candidate points): z_d the largest value with the tail property (the whole tail); the live state
the smallest z > z_d with sigma~(z) != L; the constant state with sigma~(b) nearest to 1 in binades,
then the smallest |b|; the zero state nearest to 0; the pass state with |sigma~'| >= 1/2 first, then
the smallest |sigma~(z)|, then the smallest z.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from condcheck.formats import Format, num_text

from ._exists import KINDS, cover_text, scan_exists
from ._search import candidate_points, exhaustive_format, resolve_format, safe_eval, verdict_names
from ._tail import scan_dead_tail
from .verdict import Verdict, exact_value, hex_text

CONDITION = 1

STATEMENT = r"""\textbf{Condition 1} (condcheck's statement; the constructor's gates). With $L=\tilde\sigma(-\Omega)$:
\begin{enumerate}
\item[(a)] (dead tail) there is $z_d\in\mathbb F$, $z_d\ge-\Omega/2$, such that $\tilde\sigma(z)=L$ and $\tilde\sigma'(z)=0$ for every finite $z\in\mathbb F$ with $z\le z_d$;
\item[(b)] (live state) there is $z\in\mathbb F$, $z>z_d$, with $\tilde\sigma(z)$ finite and $\tilde\sigma(z)\ne L$;
\item[(c)] (constant state) there is $b\in\mathbb F$ with $\tilde\sigma(b)=2^k$ for an integer $k$;
\item[(d)] (zero state) there is $z\in\mathbb F$ with $\tilde\sigma(z)=0$;
\item[(e)] (pass state) there is $z\in\mathbb F$, $z>z_d$, with $\tilde\sigma'(z)=\pm 2^k$ for an integer $k$.
\end{enumerate}
Here $\tilde\sigma=\mathrm{RN}_{\mathbb F}\circ\sigma$ and $\tilde\sigma'=\mathrm{RN}_{\mathbb F}\circ\sigma'$ (or the chosen implementation)
and $\Omega$ is the largest finite value of $\mathbb F$."""

CLAUSES = {
    "(a)": "dead tail: some z_d >= -Omega/2 with sigma~(z) = L = sigma~(-Omega) and sigma~'(z) = 0 for every finite z <= z_d",
    "(b)": "live state: some z > z_d with sigma~(z) finite and != L",
    "(c)": "constant state: some b with sigma~(b) a positive power of two",
    "(d)": "zero state: some z with sigma~(z) = 0",
    "(e)": "pass state: some z > z_d with sigma~'(z) = +-2^k",
}


@dataclass(frozen=True)
class Condition1Witness:
    z_dead: Fraction
    L: Fraction
    dead_count: int                 # values of F in [-Omega, z_dead]
    live: Fraction                  # smallest z > z_dead with sigma~(z) != L
    sigma_live: Fraction
    constant: Fraction              # b with sigma~(b) = 2^k
    sigma_constant: Fraction
    zero: Fraction                  # z with sigma~(z) = 0
    pass_state: Fraction
    dsigma_pass: Fraction
    fmt: Format = field(repr=False, compare=False)
    #: symbolic checker only: the intervals of format values (a, b), in order, that cover [-Omega, z_d]
    #: and were each proved dead (a == b: a single value decided by certain rounding)
    tail_cover: tuple = field(default=(), repr=False, compare=False)

    def short(self) -> str:
        return (f"z_d={num_text(self.z_dead)} (L={num_text(self.L)}, {self.dead_count} dead values), "
                f"live {num_text(self.live)}, constant sigma~({num_text(self.constant)})={num_text(self.sigma_constant)}, "
                f"zero at {num_text(self.zero)}, pass sigma~'({num_text(self.pass_state)})={num_text(self.dsigma_pass)}")

    def report(self) -> dict:
        f = self.fmt
        d = {"z_dead": exact_value(self.z_dead, f), "L": exact_value(self.L, f), "dead_count": self.dead_count,
                "live": exact_value(self.live, f), "sigma(live)": exact_value(self.sigma_live, f),
                "constant": exact_value(self.constant, f), "sigma(constant)": exact_value(self.sigma_constant, f),
                "zero": exact_value(self.zero, f), "pass": exact_value(self.pass_state, f),
                "dsigma(pass)": exact_value(self.dsigma_pass, f)}
        if self.tail_cover:
            # one string (hex floats; [a, b] from a to b, value by value, in order), re-checked by recheck
            d["tail_cover"] = " ".join(f"[{hex_text(a)}, {hex_text(b)}]" for a, b in self.tail_cover)
        return d


def _pow2(a: np.ndarray) -> np.ndarray:
    m, _ = np.frexp(np.abs(a))
    return (a != 0) & np.isfinite(a) & (m == 0.5)


def _binade(a: np.ndarray) -> np.ndarray:
    _, e = np.frexp(np.abs(a))
    return np.abs(e - 1)


def check_exhaustive(rounded, fmt=None) -> Verdict:
    """Decide Condition 1 over every value of F (formats of at most 16 bits)."""
    t0 = time.perf_counter()
    fmt = exhaustive_format(CONDITION, rounded, fmt)
    t = rounded.table()
    P = t.points
    S = np.where(t.sigma_overflow, np.nan, t.sigma)
    D = np.where(t.dsigma_overflow, np.nan, t.dsigma)
    names = verdict_names(CONDITION, rounded)
    head = f"{P.size} finite values of {fmt.name} enumerated"

    def fail(clause, counter):
        return Verdict(method="exhaustive", holds=False, failing_clause=f"{clause} {CLAUSES[clause]}",
                       counterexample=counter, evidence=head, seconds=time.perf_counter() - t0, **names)

    L = S[0]
    dead = (S == L) & (D == 0)
    if not dead[0]:
        return fail("(a)", {"z": exact_value(Fraction(float(P[0])), fmt),
                            "sigma(z)": None if np.isnan(S[0]) else exact_value(Fraction(float(S[0])), fmt),
                            "dsigma(z)": None if np.isnan(D[0]) else exact_value(Fraction(float(D[0])), fmt),
                            "why": "the most negative value is not dead (sigma~' != 0 or overflow there)"})
    n = int(np.argmin(dead)) if not dead.all() else P.size
    if n < P.size and P[n] <= -float(fmt.max) / 2:
        return fail("(a)", {"z": exact_value(Fraction(float(P[n])), fmt),
                            "sigma(z)": None if np.isnan(S[n]) else exact_value(Fraction(float(S[n])), fmt),
                            "dsigma(z)": None if np.isnan(D[n]) else exact_value(Fraction(float(D[n])), fmt),
                            "L": exact_value(Fraction(float(L)), fmt),
                            "why": "the tail ends below -Omega/2: this value is not dead"})
    above = np.arange(n, P.size)
    live = above[np.isfinite(S[above]) & (S[above] != L)]
    if live.size == 0:
        return fail("(b)", {"L": exact_value(Fraction(float(L)), fmt),
                            "why": f"sigma~ equals L at every finite value above z_d "
                                   f"({'none' if n == P.size else num_text(Fraction(float(P[n - 1])))})"})
    const = np.flatnonzero(_pow2(S) & (S > 0))
    if const.size == 0:
        return fail("(c)", {"why": "sigma~ takes no positive power-of-two value"})
    zero = np.flatnonzero(S == 0)
    if zero.size == 0:
        vals = S[np.isfinite(S)]
        return fail("(d)", {"smallest_|sigma|": exact_value(Fraction(float(np.min(np.abs(vals)))), fmt),
                            "why": "sigma~ never rounds to 0"})
    pas = above[_pow2(D[above])]
    if pas.size == 0:
        return fail("(e)", {"why": "sigma~' is never a nonzero power of two above the dead tail"})
    ic = const[np.lexsort((np.abs(P[const]), _binade(S[const])))[0]]
    iz = zero[np.argmin(np.abs(P[zero]))]
    ip = pas[np.lexsort((P[pas], np.abs(S[pas]), np.maximum(0, -np.log2(np.abs(D[pas])) - 1)))[0]]
    q = lambda i: Fraction(float(P[i]))          # noqa: E731
    w = Condition1Witness(q(n - 1), Fraction(float(L)), n, q(live[0]), Fraction(float(S[live[0]])),
                          q(ic), Fraction(float(S[ic])), q(iz), q(ip), Fraction(float(D[ip])), fmt)
    problems = recheck(rounded, w)
    if problems:
        raise AssertionError(f"internal: exhaustive Condition 1 witness fails its re-check: {problems}")
    return Verdict(method="exhaustive", holds=True, witness=w, seconds=time.perf_counter() - t0,
                   evidence=f"{head}; {n} values from -Omega to z_d are dead (sigma~ = L, sigma~' = 0); "
                            f"{live.size} live values, {const.size} constant states, {zero.size} zero states, "
                            f"{pas.size} pass states above the tail", **names)


def recheck(rounded, w: Condition1Witness) -> list[str]:
    """The point clauses of a witness, re-checked exactly (not the tail's 'for every z <= z_d')."""
    bad = []
    v = lambda z: safe_eval(rounded.value, z)          # noqa: E731
    dv = lambda z: safe_eval(rounded.derivative, z)    # noqa: E731
    if v(w.z_dead) != w.L or dv(w.z_dead) != 0:
        bad.append("(a) z_d is not dead")
    if not (w.live > w.z_dead and v(w.live) is not None and v(w.live) != w.L):
        bad.append("(b)")
    s = v(w.constant)
    if s is None or s <= 0 or (s.numerator & (s.numerator - 1)) or (s.denominator & (s.denominator - 1)):
        bad.append("(c)")
    if v(w.zero) != 0:
        bad.append("(d)")
    d = dv(w.pass_state)
    if d is None or d == 0 or not (w.pass_state > w.z_dead):
        bad.append("(e)")
    else:
        a = abs(d)
        if (a.numerator & (a.numerator - 1)) or (a.denominator & (a.denominator - 1)):
            bad.append("(e) not a power of two")
    return bad


def _undecided_without_ranges(rounded, names, t0, why_not):
    """The old candidate-point report, for implementations the range check does not cover."""
    fmt = rounded.format
    om = Fraction(fmt.max)
    L = safe_eval(rounded.value, -om)
    pts = sorted({p for p in candidate_points(fmt) if p < 0}, reverse=True)
    dead_pts = [p for p in pts if safe_eval(rounded.value, p) == L and safe_eval(rounded.derivative, p) == 0]
    z = max(dead_pts) if dead_pts else -om
    return Verdict(method="symbolic", holds=None, seconds=time.perf_counter() - t0,
                   evidence=f"candidate dead tail: sigma~ = {num_text(L) if L is not None else 'overflow'} and "
                            f"sigma~' = 0 at {len(dead_pts)} of {len(pts)} negative candidate points, the "
                            f"largest {num_text(z)}",
                   reason=f"clause (a) quantifies over every value of {fmt.name} below z_d; {why_not}", **names)


def _point_report(rounded, q, fmt):
    s, d = safe_eval(rounded.value, q), safe_eval(rounded.derivative, q)
    return {"z": exact_value(q, fmt), "sigma(z)": None if s is None else exact_value(s, fmt),
            "dsigma(z)": None if d is None else exact_value(d, fmt)}


def _is_pow2(q) -> bool:
    if q is None or q == 0:
        return False
    a = abs(q)
    return not (a.numerator & (a.numerator - 1)) and not (a.denominator & (a.denominator - 1))


def _pow2_exp(q: Fraction) -> int:
    a = abs(q)
    return a.numerator.bit_length() - a.denominator.bit_length()


#: caps of the range check (interval enclosures and seconds); beyond them the verdict is undecided
MAX_INTERVALS = 4000
TIME_LIMIT = 20.0


#: the existence clauses: which rounded function each asks about, and the kind of value it needs
_EXISTENCE = {"(b)": ("sigma", "finite_not_L"), "(c)": ("sigma", "positive_pow2"), "(d)": ("sigma", "zero"),
              "(e)": ("derivative", "nonzero_pow2")}


def check_symbolic(rounded, fmt=None, *, max_intervals: int = MAX_INTERVALS,
                   time_limit: float = TIME_LIMIT) -> Verdict:
    """Condition 1 without enumeration: the dead tail by a certified range check, the other clauses at
    witness points.

    Clause (a): :func:`conditions._tail.scan_dead_tail` covers the values from -Omega up by intervals,
    each proved with interval arithmetic over the whole interval (sigma in the exact set of reals that
    round to L, sigma' in the set that rounds to 0), bisecting until proved; the first value that is not
    dead (certain point rounding) ends the tail, so z_d is exactly the exhaustive checker's z_d.
    Clauses (b)-(e) are existence claims: a witness point, checked with certain rounding, proves each;
    a clause with no witness among the candidate points is decided by
    :func:`conditions._exists.scan_exists` over every value of the format (a witness, or a refutation).
    Verdicts: "holds" (all proved); "fails" with a certified counterexample point for (a) (-Omega not
    dead, or a value <= -Omega/2 that is not dead), or with a refutation cover for (b)-(e) (the first
    refuted clause in order; an earlier clause the scan could not decide is named in the evidence);
    "undecided" when a cap is hit, or for implementations other than the correctly rounded one of a
    sympy expression (the range checks need the expression).
    """
    t0 = time.perf_counter()
    fmt = resolve_format(rounded, fmt)
    names = verdict_names(CONDITION, rounded)
    act = rounded.activation
    if act.is_callable or act.expr is None:
        return _undecided_without_ranges(rounded, names, t0, "the certified range check needs a sympy "
                                         "expression, and a callable activation has none")
    if rounded.implementation != "exact":
        return _undecided_without_ranges(rounded, names, t0, f"the certified range check covers the correctly "
                                         f"rounded ('exact') implementation only, not {rounded.implementation!r}")
    scan = scan_dead_tail(rounded, max_intervals=max_intervals, time_limit=time_limit)
    om = Fraction(fmt.max)
    method = (f"interval arithmetic (mpmath, {scan.prec} bits) on sigma and sigma' over whole intervals of "
              f"{fmt.name} values, bisected by ordinal from -Omega until each is proved; single values by "
              f"certain rounding")

    def fail(clause, counter, evidence):
        return Verdict(method="symbolic", holds=False, failing_clause=f"{clause} {CLAUSES[clause]}",
                       counterexample=counter, evidence=evidence, seconds=time.perf_counter() - t0, **names)

    if scan.status == "not-dead-at-start":
        c = _point_report(rounded, -om, fmt)
        c["why"] = "the most negative value is not dead (sigma~' != 0 or overflow there)"
        return fail("(a)", c, "certain rounding of sigma and sigma' at -Omega")
    if scan.status == "undecided":
        done = (f"every value from -Omega to {num_text(scan.proved_to)} proved dead"
                if scan.proved_to is not None else "nothing proved")
        return Verdict(method="symbolic", holds=None, seconds=time.perf_counter() - t0,
                       evidence=f"{method}; {scan.intervals} interval enclosures; {done}",
                       reason=f"the certified range check of clause (a) did not finish: {scan.reason}", **names)
    L = scan.L
    tail_text = (f"clause (a) proved by {method}: {scan.intervals} interval enclosures, {scan.proved_intervals} "
                 f"intervals and {scan.proved_points} single values cover all {scan.dead_count} values from "
                 f"-Omega = {num_text(-om)} to z_d = {num_text(scan.z_dead)} (widest proved interval "
                 f"[{num_text(scan.widest[0]) if scan.widest else '-'}, "
                 f"{num_text(scan.widest[1]) if scan.widest else '-'}]); sigma in {scan.value_set.text()} "
                 f"(rounds to L = {num_text(L)}) and sigma' in {scan.derivative_set.text()} (rounds to 0)")
    if scan.first_live is None:
        # every value of F is dead: sigma~ = L everywhere, so (b) fails; the tail cover is the refutation
        ref = {"clause": "(b)", "function": "sigma", "kind": "finite_not_L", "excludes": KINDS["finite_not_L"],
               "L": exact_value(L, fmt), "range": "every finite value of the format, from -Omega to Omega",
               "cover": cover_text([(a, b, "p" if a == b else "e") for a, b in scan.cover])}
        return fail("(b)", {"L": exact_value(L, fmt), "why": "sigma~ equals L at every finite value above "
                            "z_d (none): every value of the format was proved dead", "refutation": ref}, tail_text)
    n = scan.first_live
    if n <= -om / 2:
        c = _point_report(rounded, n, fmt)
        c["L"] = exact_value(L, fmt)
        c["why"] = "the tail ends below -Omega/2: this value is not dead"
        return fail("(a)", c, f"{tail_text}; the next value is not dead (certain rounding)")
    z_d = scan.z_dead
    # clauses (b)-(e): witness points (the first value above the tail, its successors, the candidates)
    pts = {Fraction(p) for p in candidate_points(fmt)} | {z_d, n}
    q = n
    for _ in range(8):
        if q >= om:
            break
        q = fmt.next_up(q)
        pts.add(q)
    pts = sorted(pts)
    val = {p: safe_eval(rounded.value, p) for p in pts}
    der = {p: safe_eval(rounded.derivative, p) for p in pts if p > z_d}
    live = [p for p in pts if p > z_d and val[p] is not None and val[p] != L]
    const = [p for p in pts if val[p] is not None and val[p] > 0 and _is_pow2(val[p])]
    zero = [p for p in pts if val[p] == 0]
    pas = [p for p in pts if p > z_d and _is_pow2(der[p])]
    found = {"(b)": live, "(c)": const, "(d)": zero, "(e)": pas}
    missing = [c for c, lst in found.items() if not lst]
    # a clause without a witness among the candidates: scan every value of F for one, or refute it
    searched, undecided = [], []
    for c in missing:
        function, kind = _EXISTENCE[c]
        ex = scan_exists(rounded, function, kind, L_value=L, max_intervals=max_intervals, time_limit=time_limit)
        if ex.status == "witness":
            p = ex.witness
            val.setdefault(p, safe_eval(rounded.value, p))
            der.setdefault(p, safe_eval(rounded.derivative, p))
            found[c].append(p)
            searched.append(f"clause {c}: no witness among the candidates, found {num_text(p)} by the certified "
                            f"scan of every value ({ex.intervals} interval evaluations, {ex.points} single values)")
            continue
        if ex.status == "refuted":
            ref = {"clause": c, "function": function, "kind": kind, "excludes": KINDS[kind],
                   "range": "every finite value of the format, from -Omega to Omega", "cover": ex.cover_text()}
            if kind == "finite_not_L":
                ref["L"] = exact_value(L, fmt)
            g = "sigma~" if function == "sigma" else "sigma~'"
            why = (f"{g} is never "
                   f"{KINDS[kind]} on any finite value of {fmt.name} (proved by the refutation cover)")
            earlier = (f"; clause{'s' if len(undecided) > 1 else ''} {', '.join(u for u, _ in undecided)} before it "
                       f"undecided ({'; '.join(r for _, r in undecided)})" if undecided else "")
            return fail(c, {"why": why, "refutation": ref},
                        f"{tail_text}; clause {c} refuted: {ex.summary()}{earlier}")
        undecided.append((c, ex.reason))
    if undecided:
        return Verdict(method="symbolic", holds=None, seconds=time.perf_counter() - t0,
                       evidence=f"{tail_text}; {len(pts)} candidate points evaluated with certain rounding"
                                + "".join(f"; {t}" for t in searched),
                       reason=f"no witness for clause{'s' if len(undecided) > 1 else ''} "
                              f"{', '.join(c for c, _ in undecided)} among the {len(pts)} candidate points, and the "
                              f"certified scan of every value neither found one nor refuted "
                              f"{'them' if len(undecided) > 1 else 'it'}: {'; '.join(r for _, r in undecided)}",
                       **names)
    live, const, zero, pas = (sorted(found[c]) for c in ("(b)", "(c)", "(d)", "(e)"))
    ic = min(const, key=lambda p: (abs(_pow2_exp(val[p])), abs(p)))
    iz = min(zero, key=abs)
    ip = min(pas, key=lambda p: (max(0, -_pow2_exp(der[p]) - 1), abs(val[p]) if val[p] is not None else om, p))
    cover = tuple(scan.cover)
    w = Condition1Witness(z_d, L, scan.dead_count, live[0], val[live[0]], ic, val[ic], iz, ip, der[ip], fmt,
                          tail_cover=cover)
    problems = recheck(rounded, w)
    if problems:
        raise AssertionError(f"internal: symbolic Condition 1 witness fails its re-check: {problems}")
    return Verdict(method="symbolic", holds=True, witness=w, seconds=time.perf_counter() - t0,
                   evidence=f"{tail_text}; the next value {num_text(n)} is not dead (certain rounding); clauses "
                            f"(b)-(e) at witness points among {len(pts)} candidates, with certain rounding"
                            + "".join(f"; {t}" for t in searched),
                   **names)
