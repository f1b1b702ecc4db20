"""Deciding a Piecewise condition from an enclosure, shared by the three interval backends.

``decided_by_sign`` reads a relation ``d < 0`` (or <=, >, >=, ==, !=) off the signs of an enclosure
of ``d``; ``PointConditions`` is the logic of the one-point backends (mpmath, Arb), where each
condition is a bool and the first branch that holds is taken.
"""
from __future__ import annotations

from condcheck.errors import CondcheckError

__all__ = ["PointConditions", "decided_by_sign"]


def decided_by_sign(rel, lo, hi):
    """(yes, no) for ``rel(d, 0)`` with ``d`` in ``[lo, hi]``: where it surely holds and where it surely
    fails.  ``lo``, ``hi`` are float arrays, numbers or signs (-1, 0, 1); both False: undecided."""
    if rel == "<":
        return hi < 0, lo >= 0
    if rel == "<=":
        return hi <= 0, lo > 0
    if rel == ">":
        return lo > 0, hi <= 0
    if rel == ">=":
        return lo >= 0, hi < 0
    if rel == "==":
        return (lo == 0) & (hi == 0), (lo > 0) | (hi < 0)
    if rel == "!=":
        return (lo > 0) | (hi < 0), (lo == 0) & (hi == 0)
    raise AssertionError(rel)



class PointConditions:
    """Conditions of a Piecewise at one point (the mpmath and Arb backends): each is a bool."""

    def logical(self, op, parts):
        if op == "and":
            return all(parts)
        if op == "or":
            return any(parts)
        return not parts[0]

    def constant_bool(self, value, X):
        return bool(value)

    def piecewise(self, branches, X):
        for val_fn, cond_fn in branches:
            if cond_fn(self, X):
                return val_fn(self, X)
        raise CondcheckError(f"Piecewise is undefined at x = {X[0]} (no condition holds)")
