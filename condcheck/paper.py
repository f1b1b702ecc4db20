"""The paper's constants for an activation on a format (arXiv 2605.01702), in one place: which version of its
theorems covers the format, M_sigma (the half-width of the box of input points) and H_sigma (the
largest upstream value), and the depth bounds of Theorems 5 and 7.  ``check`` reports them and the
constructors read them here.
"""
from __future__ import annotations

from .formats import Format


def theorem_branch(fmt: Format) -> str:
    """Which version of the paper's theorems covers the format (arXiv 2605.01702)."""
    if fmt.E >= 6:
        return "main (E >= 6)"
    if fmt.E in (4, 5):
        return "low-exponent appendix (E = 4, 5)"
    return "not covered (E < 4)"


def paper_constants(activation: str, fmt: Format) -> dict:
    """M_sigma, H_sigma as the paper states them for its six activations (arXiv 2605.01702); None otherwise."""
    if activation in ("relu", "elu", "gelu", "swish"):
        return {"M_sigma": 2.0 ** (fmt.e_max - 2), "H_sigma": float(fmt.max) if fmt.fits_float64 else str(fmt.max)}
    if activation == "sigmoid":
        return {"M_sigma": 2.0 ** (fmt.e_max - 1), "H_sigma": 2.0 ** (fmt.M - 1)}
    if activation == "tanh":
        return {"M_sigma": 2.0 ** (fmt.e_max - 1), "H_sigma": 2.0 ** (fmt.M - 2)}
    return {"M_sigma": None, "H_sigma": None}


def box_bound(activation: str, fmt: Format) -> float:
    """The half-width of the box [-M_sigma, M_sigma]^d the constructors accept points in: the paper's
    M_sigma, and for an activation the paper does not cover (``paper_constants`` says None) condcheck's
    own choice 2^(e_max - 2), the M_sigma of relu, elu, gelu and swish."""
    m = paper_constants(activation, fmt)["M_sigma"]
    return float(2.0 ** (fmt.e_max - 2) if m is None else m)


def depth_bounds(fmt: Format) -> dict:
    """The depth bounds of both paper versions (arXiv 2605.01702)."""
    return {"theorem5": {"openreview": 7, "arxiv_v2": 9},
            "theorem7": {"openreview": 2 ** (fmt.E + 1) + 2 * fmt.M + 9,
                         "arxiv_v2": 2 ** (fmt.E + 1) + 2 * fmt.M + 11}}
