"""Mutants of a condition certificate: every field changed the ways a careless or dishonest edit would.

For every field of the JSON tree: a value record one ulp up and one ulp down (hex, fraction and bits
together), and its hex, fraction or bits alone changed; an integer +-1; a boolean flipped; null made 0;
a name swapped (activation, format, implementation, method, verdict, route, failing clause, refutation
clause, kind, function, theorem branch, constants source); hexadecimal constants one ulp and one binade
off; every endpoint of every cover interval one ulp up and down, tags swapped, intervals deleted; every
field deleted; a field inserted into every object.  Plus compound mutants that make a *weaker* claim
(a decided condition made undecided, the overall verdict adjusted) or keep a valid witness.
``python3 -m tests.mutation_score`` runs the whole matrix and prints the score.
"""
from __future__ import annotations

import copy
import re
from fractions import Fraction

from certificate_oracle import CLAUSE_TEXT, grid, hex_value

ACTIVATIONS = ("relu", "gelu", "sigmoid", "tanh", "swish", "leaky_relu", "sin")
#: format swaps: the small formats for every certificate (b3_4 has float8_e4m3's values and bit patterns,
#: so a float8_e4m3 certificate renamed b3_4 can stay true), plus a twin of the same width for wide ones
FORMATS = ("float4_e2m1fn", "float6_e2m3fn", "float8_e4m3", "b3_4", "float8_e5m2", "b3_2")
WIDE_TWINS = {"float16": ("b10_5",), "float32": ("b23_8",)}
KINDS = ("finite_not_L", "positive_pow2", "zero", "nonzero_pow2", "pass_pow2", "pass_pow2_iii", "abs_at_least_2^-M",
         "pairs")
BRANCHES = ("main (E >= 6)", "low-exponent appendix (E = 4, 5)", "not covered (E < 4)")
SOURCES = ("paper (arXiv 2605.01702)", "unknown: the paper's formulas for M_sigma, H_sigma from witnesses are not available")
SWAPS = {"activation": ACTIVATIONS, "format": FORMATS, "implementation": ("exact", "float32-upcast"),
         "method": ("exhaustive", "symbolic"), "verdict": ("holds", "fails", "undecided"), "route": ("a", "b"),
         "clause": ("(a)", "(b)", "(c)", "(d)", "(e)", "(i)", "(ii)", "(iii)", "(iv)"), "kind": KINDS,
         "function": ("sigma", "derivative"), "theorem_branch": BRANCHES, "constants_source": SOURCES}


def _rec(G, q):
    return {"hex": float(q).hex(), "fraction": str(q), "bits": G.bits_of(q)}


def _is_value(x) -> bool:
    return isinstance(x, dict) and set(x) == {"hex", "fraction", "bits"}


def _set(tree, path, value):
    t = copy.deepcopy(tree)
    d = t
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    return t


def _delete(tree, path):
    t = copy.deepcopy(tree)
    d = t
    for k in path[:-1]:
        d = d[k]
    del d[path[-1]]
    return t


def _name(path) -> str:
    return ".".join(str(p) for p in path) or "(top)"


def _cover_mutants(G, text):
    """(description, text) variants of a cover text."""
    items = re.findall(r"(?:([epm])\[|\[)([^,\]\s]+), ([^\]\s]+)\]", text)
    tagged = text.startswith(("e[", "m[", "p["))

    def render(its):
        return " ".join(f"{t}[{a}, {b}]" if tagged else f"[{a}, {b}]" for t, a, b in its)
    for i, (tag, a, b) in enumerate(items):
        for end, which in ((1, "a"), (2, "b")):
            q = hex_value(items[i][end])
            for step, q2 in zip(("down", "up"), G.neighbours(q)):
                if q2 is None:
                    continue
                its = [list(x) for x in items]
                its[i][end] = float(q2).hex()
                yield f"interval {i} end {which} one ulp {step}", render(its)
        if tagged:
            for new in "emp":
                if new != tag:
                    its = [list(x) for x in items]
                    its[i][0] = new
                    yield f"interval {i} tag {tag}->{new}", render(its)
        if len(items) > 1:
            yield f"interval {i} deleted", render([x for j, x in enumerate(items) if j != i])


def mutants(cert):
    """(description, mutant) pairs for one certificate."""
    G = grid(cert["format"])
    out = []

    def walk(node, path):
        if _is_value(node):
            q = Fraction(node["fraction"])
            down, up = G.neighbours(q) if G.contains(q) else (None, None)
            for step, q2 in (("down", down), ("up", up)):
                if q2 is not None:
                    out.append((f"{_name(path)} one ulp {step}", _set(cert, path, _rec(G, q2))))
            other = up if up is not None else down
            out.append((f"{_name(path)}.hex alone", _set(cert, path, {**node, "hex": float(other).hex()})))
            out.append((f"{_name(path)}.fraction alone", _set(cert, path, {**node, "fraction": str(other)})))
            flipped = node["bits"][:-1] + ("1" if node["bits"][-1] == "0" else "0")
            out.append((f"{_name(path)}.bits last bit", _set(cert, path, {**node, "bits": flipped})))
            out.append((f"{_name(path)} deleted", _delete(cert, path)))
            return
        if isinstance(node, dict):
            for k in list(node):
                walk(node[k], path + (k,))
            out.append((f"{_name(path)} + inserted field", _set(cert, path + ("note",), "inserted")
                        if path else {**copy.deepcopy(cert), "note": "inserted"}))
            return
        if isinstance(node, list):
            for i, x in enumerate(node):
                walk(x, path + (i,))
            if node:
                out.append((f"{_name(path)} last element deleted", _set(cert, path, copy.deepcopy(node[:-1]))))
            return
        key = path[-1] if path else None
        if path and isinstance(key, str) and not _is_value(node):
            out.append((f"{_name(path)} deleted", _delete(cert, path)))
        if isinstance(node, bool):
            out.append((f"{_name(path)} flipped", _set(cert, path, not node)))
        elif isinstance(node, int):
            for d in (1, -1):
                out.append((f"{_name(path)} {d:+d}", _set(cert, path, node + d)))
        elif isinstance(node, float):
            out.append((f"{_name(path)} changed", _set(cert, path, node * 2 + 1)))
        elif node is None:
            out.append((f"{_name(path)} null->0", _set(cert, path, 0)))
            if key == "holds":
                for b in (True, False):
                    out.append((f"{_name(path)} null->{b}", _set(cert, path, b)))
        elif isinstance(node, str):
            if key in SWAPS:
                alts = SWAPS[key] + (WIDE_TWINS.get(node, ()) if key == "format" else ())
                for alt in alts:
                    if alt != node:
                        out.append((f"{_name(path)} {node}->{alt}", _set(cert, path, alt)))
            elif key == "failing_clause":
                cond = path[-2]
                for alt in CLAUSE_TEXT[cond].values():
                    if alt != node:
                        out.append((f"{_name(path)} -> {alt[:6]}", _set(cert, path, alt)))
                out.append((f"{_name(path)} reworded", _set(cert, path, node + ".")))
            elif key in ("M_sigma", "H_sigma"):
                q = hex_value(node)
                for what, q2 in (("doubled", 2 * q), ("halved", q / 2),
                                 ("one ulp up", Fraction(float.fromhex(node) * (1 + 2 ** -52))),
                                 ("one ulp down", Fraction(float.fromhex(node) * (1 - 2 ** -53)))):
                    out.append((f"{_name(path)} {what}", _set(cert, path, float(q2).hex())))
                out.append((f"{_name(path)} as a decimal", _set(cert, path, str(float(q)))))
            elif key in ("cover", "tail_cover"):
                for what, text in _cover_mutants(G, node):
                    out.append((f"{_name(path)} {what}", _set(cert, path, text)))
            else:
                out.append((f"{_name(path)} changed", _set(cert, path, node + " ")))
        if key == "holds" and path == ("holds",) and node is not None:
            out.append(("holds -> null", _set(cert, path, None)))
    walk(cert, ())
    out += weaker(cert)
    return out


def weaker(cert):
    """Mutants that claim less: a decided condition made undecided (and the overall verdict with it),
    the metadata dropped."""
    out = []
    for k in ("1", "2", "3"):
        if cert["conditions"][k]["holds"] is None:
            continue
        m = copy.deepcopy(cert)
        m["conditions"][k] = {"verdict": "undecided", "holds": None, "method": "symbolic", "witness": None,
                              "failing_clause": None, "counterexample": None}
        states = [m["conditions"][j]["holds"] for j in ("1", "2", "3")]
        m["holds"] = False if False in states else None if None in states else True
        out.append((f"Condition {k} weakened to undecided", m))
    if "seconds" in cert:
        m = copy.deepcopy(cert)
        del m["seconds"]
        out.append(("seconds (metadata) dropped", m))
    return out
