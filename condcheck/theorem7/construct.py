"""``construct_theorem7``: the targets checked (``targets.validate_odd_targets``), then relu's own
construction (``relu``) or the generic one (``generic``), each verified exactly before it returns.
"""
from __future__ import annotations


from ..activations import get_activation
from ..constructors.errors import ConstructionError, TargetError
from ..errors import CondcheckError, UnknownNameError
from ..formats import get_format
from ..paper import box_bound, paper_constants
from ..targets import as_points, validate_odd_targets
from .activation import ActivationTable
from .assemble import Theorem7Network
from .generic import construct_generic_gated, construct_generic_one
from .relu import construct_relu_gated, construct_relu_one


def construct_theorem7(activation, fmt, points, values, gradient_table_or_callable, upstream=None,
                       implementation="exact", verify_result=True, generic=None) -> Theorem7Network:
    """One network with f(x) = values and D_(f,x)(y) = g*(x, y) for every listed y (any d).

    ``gradient_table_or_callable``: an array (N, K, d) aligned with ``upstream`` (d = 1: also (N, K), and
    (K,) for one point), or a callable ``g(x, y)`` (x a number for d = 1, a tuple otherwise).  ``upstream``
    defaults to every finite value of the format with |y| <= H_sigma (``paper.paper_constants``: Omega for
    relu, elu, gelu, swish; 2^(M-1) for sigmoid, 2^(M-2) for tanh).  ``generic``: use the
    activation-generic construction (the default for every activation but relu; relu has its own,
    shallower one, the default up to 64 points and d = 1).

    >>> import numpy as np
    >>> from condcheck import construct_theorem7
    >>> res = construct_theorem7("relu", "float6_e3m2fn", [[0.5]], [1.0], [[0.5, 0.0, -0.5]],
    ...                          upstream=[-1.0, 0.0, 1.0])
    >>> values, gradients = res.network.evaluate(np.array([[0.5]]), np.array([[-1.0, 0.0, 1.0]]))
    >>> values.tolist(), gradients.ravel().tolist()
    ([1.0], [0.5, 0.0, -0.5])
    """
    F = get_format(fmt)
    try:
        name = get_activation(activation).name
    except UnknownNameError as e:
        raise ConstructionError(str(e))
    if generic is None:
        # relu's own construction is shallower, but its value ladders grow as N^2 in width (34,074 neurons
        # at 32 float8_e4m3 points against 6,874 for the generic one; 205,734 on the 193-point box against
        # 41,504): up to 64 points (e.g. the 41-point float6_e3m2fn box) it keeps its smaller depth
        generic = name != "relu" or len(points) > 64
    if not F.enumerable or F.bits > 16:
        raise ConstructionError(f"the Theorem 7 constructor enumerates the format; {F.name} is too large")
    X = as_points(points)
    if not generic and (implementation != "exact" or X.shape[1] > 1):
        generic = True                # relu's own construction: d = 1, exact implementation
    act = ActivationTable(name, F, implementation) if generic else None     # refuses what Theorem 7 does not cover
    H = float(paper_constants(name, F)["H_sigma"])
    X, fv, Y, G = validate_odd_targets(F, name, X, values, gradient_table_or_callable, upstream, box_bound(name, F), H)
    if generic:
        try:
            if X.shape[0] == 1:
                return construct_generic_one(act, F, X, fv, Y, G, implementation, verify_result)
            return construct_generic_gated(act, F, X, fv, Y, G, implementation, verify_result)
        except (ConstructionError, TargetError):
            raise
        except CondcheckError as e:          # an error of theorem5's steps and gates that is not a construction's
            raise ConstructionError(str(e)) from e
    G = G[:, :, 0]
    if X.shape[0] > 1:
        return construct_relu_gated(F, X, fv, Y, G, implementation, verify_result)
    return construct_relu_one(F, X, fv, Y, G, implementation, verify_result)
