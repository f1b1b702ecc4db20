"""The one tree walk: a sympy expression in ``x`` becomes a closure ``f(backend, X) -> interval``.

The same closure runs on every backend (numpy arrays, mpmath, Arb), so the three enclose the same
formula.  Conditions of a ``Piecewise`` are decided exactly: the enclosure of ``lhs - rhs`` decides the
sign where it can, and the few undecided points are decided by sympy on the exact rational point.
Exact identities are used against cancellation and spurious overflow (they change no value, only the
width of enclosures): ``k*exp(u) - k = k*expm1(u)``, ``c + c*erf(u) = c*erfc(-u)``,
``c - c*erf(u) = c*erfc(u)``, ``c + c*tanh(u) = 2c/(1 + exp(-2u))``, ``c - c*tanh(u)**2 = c/cosh(u)**2``,
``log(1 + t) = log1p(t)``, ``log(1 + exp(u)) = u + log1p(exp(-u))`` (intersected with the former), and a
product with a factor ``(a + exp(v))**n`` (n < 0) is also evaluated as ``exp(n*v) * (a*exp(-v) + 1)**n``
with the exponentials merged; the two enclosures are intersected.  Division by an interval containing 0
gives ``(-inf, inf)``.
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import mpmath
import numpy as np
import sympy

from condcheck.errors import CondcheckError

from .arb_backend import HAVE_ARB, ArbBackend
from .mp_backend import MpBackend
from .numpy_backend import NumpyBackend

__all__ = ["Compiled", "compile_expression", "enclose_array", "enclose_arb", "enclose_mp"]


class _Compiler:
    def __init__(self):
        self.counter = 0

    def key(self):
        self.counter += 1
        return self.counter

    # ---- entry -------------------------------------------------------------------------------------
    def compile(self, e, alternatives=True):
        if not e.free_symbols:
            return self.constant(e)
        if isinstance(e, sympy.Symbol):
            if e.name != "x":
                raise CondcheckError(f"expression has a free symbol {e} other than x")
            return lambda B, X: B.var(X)
        if isinstance(e, sympy.Add):
            return self.add(e)
        if isinstance(e, sympy.Mul):
            return self.mul(e, alternatives)
        if isinstance(e, sympy.Pow):
            return self.pow(e)
        if isinstance(e, sympy.Piecewise):
            return self.piecewise(e)
        return self.function(e)

    # ---- constants ---------------------------------------------------------------------------------
    def constant(self, e):
        mp_fn = self.mp_constant(e)
        key = self.key()
        return lambda B, X: B.const(key, mp_fn, X)

    def mp_constant(self, e):
        """A closure evaluating a constant in the mpmath backend (numbers, pi, E and operations)."""
        if isinstance(e, sympy.Rational):       # Integer and Rational
            p, q = int(e.p), int(e.q)
            return lambda B, X: B.rational(p, q)
        if isinstance(e, sympy.Float):
            v = e._mpf_                          # the Float's exact binary value
            return lambda B, X: B.exact(v)
        if e is sympy.pi:
            return lambda B, X: B.pi()
        if e is sympy.E:
            return lambda B, X: B.e()
        if isinstance(e, (sympy.Add, sympy.Mul, sympy.Pow, sympy.Function, sympy.Piecewise)):
            # the same walk, with the mpmath backend only (no x)
            sub = _Compiler()
            sub.constant = lambda c: sub.mp_constant(c)
            inner = sub._structure(e)
            return lambda B, X: inner(B, X)
        raise CondcheckError(f"unsupported constant {e} ({type(e).__name__}) in an activation expression")

    def _structure(self, e):
        if isinstance(e, sympy.Add):
            return self.add(e)
        if isinstance(e, sympy.Mul):
            return self.mul(e, False)
        if isinstance(e, sympy.Pow):
            return self.pow(e)
        if isinstance(e, sympy.Piecewise):
            return self.piecewise(e)
        return self.function(e)

    # ---- sums --------------------------------------------------------------------------------------
    def add(self, e):
        c, rest = e.as_coeff_Add()
        terms = list(sympy.Add.make_args(rest))
        fns = []
        if c != 0:
            special = self._cancellation(c, terms)
            if special is not None:
                fn, used = special
                fns.append(fn)
                terms = [t for i, t in enumerate(terms) if i != used]
            else:
                fns.append(self.compile(c))
        fns += [self.compile(t) for t in terms]
        if not fns:
            return self.compile(sympy.Integer(0))

        def f(B, X, fns=fns):
            acc = fns[0](B, X)
            for g in fns[1:]:
                acc = B.add(acc, g(B, X))
            return acc
        return f

    def _cancellation(self, c, terms):
        """c + k*g(u) with an exact identity that avoids cancellation: (closure, index of the term)."""
        for i, t in enumerate(terms):
            k, g = t.as_coeff_Mul()
            if isinstance(g, sympy.exp) and k == -c:                     # k*(exp(u) - 1)
                u = self.compile(g.args[0])
                kk = self.compile(k)
                return (lambda B, X: B.mul(kk(B, X), B.expm1(u(B, X)))), i
            if isinstance(g, sympy.erf) and k in (c, -c):
                arg = -g.args[0] if k == c else g.args[0]                # c*erfc(-u) or c*erfc(u)
                u = self.compile(arg)
                cc = self.compile(c)
                return (lambda B, X: B.mul(cc(B, X), B.erfc(u(B, X)))), i
            if isinstance(g, sympy.tanh) and k in (c, -c):
                v = -2 * g.args[0] if k == c else 2 * g.args[0]
                return self.compile(2 * c / (1 + sympy.exp(v))), i
            if (isinstance(g, sympy.Pow) and isinstance(g.base, sympy.tanh) and g.exp == 2 and k == -c):
                return self.compile(c / sympy.cosh(g.base.args[0]) ** 2), i
        return None

    # ---- products ----------------------------------------------------------------------------------
    def mul(self, e, alternatives=True):
        factors = list(e.args)
        fns = [self.compile(t) for t in factors]

        def f(B, X, fns=fns):
            acc = fns[0](B, X)
            for g in fns[1:]:
                acc = B.mul(acc, g(B, X))
            return acc
        if not alternatives:
            return f
        alt = self._exp_alternative(e)
        if alt is None:
            return f
        g = self.compile(alt, alternatives=False)
        return lambda B, X: B.intersect(f(B, X), g(B, X))

    def _exp_alternative(self, e):
        """(a + exp(v))**n * rest = exp(n*v) * (a*exp(-v) + 1)**n * rest, exponentials merged."""
        for i, t in enumerate(e.args):
            if isinstance(t, sympy.Pow) and t.exp.is_Integer and t.exp < 0 and isinstance(t.base, sympy.Add):
                exps = [s for s in t.base.args if isinstance(s, sympy.exp)]
                if not exps:
                    continue
                v = exps[0].args[0]
                n = t.exp
                new_base = sympy.Add(*[sympy.powsimp(sympy.expand(s * sympy.exp(-v)), combine="exp")
                                       for s in t.base.args])
                rest = [s for j, s in enumerate(e.args) if j != i]
                alt = sympy.powsimp(sympy.Mul(*rest) * sympy.exp(n * v), combine="exp") * new_base ** n
                if alt == e:
                    return None
                return alt
        return None

    # ---- powers ------------------------------------------------------------------------------------
    def pow(self, e):
        b, n = e.base, e.exp
        if n.is_Integer:
            n = int(n)
            bf = self.compile(b)
            if n == 0:
                return self.compile(sympy.Integer(1))
            if n == 1:
                return bf
            if n == -1:
                return lambda B, X: B.recip(bf(B, X))
            if n > 0:
                return lambda B, X: B.powi(bf(B, X), n)
            return lambda B, X: B.recip(B.powi(bf(B, X), -n)) if -n > 1 else B.recip(bf(B, X))
        if n == sympy.S.Half:
            bf = self.compile(b)
            return lambda B, X: B.sqrt(bf(B, X))
        if n == -sympy.S.Half:
            bf = self.compile(b)
            return lambda B, X: B.recip(B.sqrt(bf(B, X)))
        # general power of a positive base: exp(n * log(b))
        return self.compile_log_form(b, n)

    def compile_log_form(self, b, n):
        bf = self.compile(b)
        nf = self.compile(n)
        return lambda B, X: B.exp(B.mul(nf(B, X), B.log(bf(B, X))))

    # ---- Piecewise ---------------------------------------------------------------------------------
    def piecewise(self, e):
        branches = [(self.compile(val), self.condition(cond)) for val, cond in e.args]
        return lambda B, X: B.piecewise(branches, X)

    def condition(self, c):
        if c is sympy.true or c == True:  # noqa: E712
            return lambda B, X: B.constant_bool(True, X)
        if c is sympy.false or c == False:  # noqa: E712
            return lambda B, X: B.constant_bool(False, X)
        rels = {sympy.StrictLessThan: "<", sympy.LessThan: "<=", sympy.StrictGreaterThan: ">",
                sympy.GreaterThan: ">=", sympy.Equality: "==", sympy.Unequality: "!="}
        for cls, rel in rels.items():
            if isinstance(c, cls):
                d = c.lhs - c.rhs
                dfn = self.compile(d)
                x_sym = next(iter(d.free_symbols), None)

                def exact(q, d=d, rel=rel, x_sym=x_sym):
                    val = d.subs(x_sym, sympy.Rational(q.numerator, q.denominator)) if x_sym else d
                    try:
                        return bool({"<": val < 0, "<=": val <= 0, ">": val > 0, ">=": val >= 0,
                                     "==": sympy.Eq(val, 0), "!=": sympy.Ne(val, 0)}[rel])
                    except TypeError:
                        raise CondcheckError(f"can not decide the condition {c} at x = {q}") from None
                return lambda B, X, dfn=dfn, rel=rel, exact=exact: B.sign_decide(dfn(B, X), rel, X, exact)
        if isinstance(c, (sympy.And, sympy.Or, sympy.Not)):
            op = {sympy.And: "and", sympy.Or: "or", sympy.Not: "not"}[type(c)]
            parts = [self.condition(a) for a in c.args]
            return lambda B, X: B.logical(op, [p(B, X) for p in parts])
        raise CondcheckError(f"unsupported Piecewise condition {c} ({type(c).__name__}); conditions must "
                             f"compare expressions in x (<, <=, >, >=, ==, !=, And, Or, Not)")

    # ---- functions ---------------------------------------------------------------------------------
    _UNARY = {sympy.exp: "exp", sympy.erf: "erf", sympy.erfc: "erfc", sympy.tanh: "tanh",
              sympy.sinh: "sinh", sympy.cosh: "cosh", sympy.atan: "atan", sympy.asinh: "asinh",
              sympy.sin: "sin", sympy.cos: "cos", sympy.Abs: "abs"}

    def function(self, e):
        t = type(e)
        for cls, op in self._UNARY.items():
            if t is cls:
                a = self.compile(e.args[0])
                return lambda B, X, op=op: getattr(B, op)(a(B, X))
        if t is sympy.log:
            if len(e.args) != 1:
                return self.compile(sympy.log(e.args[0]) / sympy.log(e.args[1]))
            arg = e.args[0]
            if isinstance(arg, sympy.Add):
                c, rest = arg.as_coeff_Add()
                if c == 1:
                    a = self.compile(rest)
                    if isinstance(rest, sympy.exp):
                        # log(1 + exp(u)) = u + log1p(exp(-u)): no overflow for large u; intersect
                        u = rest.args[0]
                        alt = self.compile(u)
                        b = self.compile(sympy.exp(-u))
                        return lambda B, X: B.intersect(B.log1p(a(B, X)), B.add(alt(B, X), B.log1p(b(B, X))))
                    return lambda B, X: B.log1p(a(B, X))
            a = self.compile(arg)
            return lambda B, X: B.log(a(B, X))
        if t in (sympy.Max, sympy.Min):
            fns = [self.compile(a) for a in e.args]
            op = "max" if t is sympy.Max else "min"

            def f(B, X, fns=fns, op=op):
                acc = fns[0](B, X)
                for g in fns[1:]:
                    acc = getattr(B, op)(acc, g(B, X))
                return acc
            return f
        if t is sympy.Heaviside:
            h0 = e.args[1] if len(e.args) > 1 else sympy.S.Half
            if not h0.is_Rational:
                raise CondcheckError(f"unsupported Heaviside value at 0 in {e}: {h0}")
            a = self.compile(e.args[0])
            return self._step(a, 0, Fraction(int(h0.p), int(h0.q)), 1)
        if t is sympy.sign:
            a = self.compile(e.args[0])
            return self._step(a, -1, 0, 1)
        raise CondcheckError(f"unsupported node {type(e).__name__} ({e}) in an activation expression; "
                             f"supported: +, *, powers, exp, log, erf, erfc, tanh, sinh, cosh, atan, asinh, "
                             f"sqrt, sin, cos, Abs, Max, Min, Heaviside, sign, Piecewise")

    def _step(self, a, neg, zero, pos):
        vals = [Fraction(neg), Fraction(zero), Fraction(pos)]
        return lambda B, X: B.step_rational(a(B, X), vals)


class Compiled:
    """A compiled expression: ``enclose_array(points)`` and ``enclose_mp(point, prec)``."""

    def __init__(self, expr):
        self.expr = expr
        self.fn = _Compiler().compile(expr)
        self._np = NumpyBackend()
        self._arb = {}

    def enclose_array(self, points):
        X = np.ascontiguousarray(np.asarray(points, dtype=np.float64).ravel())
        if not np.all(np.isfinite(X)):
            raise CondcheckError("enclosures are computed at finite points only")
        if X.size == 0:
            return np.empty(0), np.empty(0)
        with np.errstate(all="ignore"):
            lo, hi = self.fn(self._np, X)
        lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), X.shape).copy()
        hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), X.shape).copy()
        lo[np.isnan(lo)] = -np.inf
        hi[np.isnan(hi)] = np.inf
        return lo, hi

    def enclose_mp_raw(self, q: Fraction, prec: int):
        B = MpBackend(prec)
        return self.fn(B, B.point(Fraction(q)))

    def arb_backend(self, prec: int) -> "ArbBackend":
        """The Arb backend at ``prec`` bits for this expression (kept: it caches the constants)."""
        B = self._arb.get(prec)
        if B is None:
            B = self._arb[prec] = ArbBackend(prec)
        return B

    def enclose_arb_ends(self, q, prec: int):
        """(lo, hi) enclosing the expression at the exact rational ``q`` (a Fraction, or a float taken
        exactly), from Arb balls at ``prec`` bits: exact arbs, or the floats -inf/+inf for an unbounded
        side.  Needs python-flint."""
        if not HAVE_ARB:
            raise CondcheckError("the Arb backend needs python-flint (pip install python-flint)")
        return self.arb_backend(prec).ends_at(self.fn, q)

    def enclose_mp(self, q, prec: int):
        lo, hi = self.enclose_mp_raw(Fraction(q), prec)
        return mpmath.mp.make_mpf(lo), mpmath.mp.make_mpf(hi)      # exact, not rounded to mp.prec


@lru_cache(maxsize=None)
def compile_expression(expr) -> Compiled:
    """Compile a sympy expression in ``x`` once (cached)."""
    return Compiled(sympy.sympify(expr))


def enclose_array(expr, points):
    """(lo, hi) float64 arrays enclosing ``expr`` at every (exact float64) point."""
    return compile_expression(expr).enclose_array(points)


def enclose_mp(expr, point, prec: int = 64):
    """(lo, hi) mpmath numbers (exact, whatever mpmath.mp.prec is) enclosing ``expr`` at the exact rational ``point``, at ``prec`` bits."""
    from condcheck.formats import to_fraction
    return compile_expression(expr).enclose_mp(to_fraction(point), prec)


def enclose_arb(expr, point, prec: int = 64):
    """(lo, hi) enclosing ``expr`` at the exact rational ``point`` from Arb balls at ``prec`` bits: exact
    ``flint.arb`` numbers, or the floats -inf/+inf for an unbounded side."""
    from condcheck.formats import to_fraction
    return compile_expression(expr).enclose_arb_ends(to_fraction(point), prec)
