"""Theorem 5 targets as functions of the point's coordinates (condcheck construct --targets python:FILE).

Each result is rounded to the network's format from its exact value, so math.sin is fine here.
"""
import math


def values(x):
    return math.sin(x)          # f*(x)


def upstream(x):
    return 0.25 if x >= 0 else -0.5    # h*(x), the upstream value the gradient is claimed for


def gradients(x):
    return [2 * x]              # g*(x), one entry per coordinate
