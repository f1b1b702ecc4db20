"""The ``"torch"`` implementation: sigma~ and sigma~' as PyTorch CPU computes them (an observed table up
to 16 bits; :func:`torch_points` at given points of float32).

For a format of at most 16 bits, every finite value z of the format is fed to PyTorch at once:

* sigma~(z) is the forward op (:data:`TORCH_OPS`: ``gelu`` is ``F.gelu(approximate='none')``,
  ``gelu_tanh`` is ``F.gelu(approximate='tanh')``, ``swish`` is ``F.silu``, ...; a plug-in may bring
  its own ``torch_function``);
* sigma~'(z) is ``torch.autograd.grad`` of that op at z with upstream 1.

Where torch computes the op in the format's own dtype (float16 and bfloat16 on CPU) the table is
taken in that dtype ("native"): torch's result is already a value of the format.  Otherwise (every
float8 dtype: torch 2.13 has float8_e4m3fn/e5m2/e4m3fnuz/e5m2fnuz tensors but no CPU kernels for
gelu, relu, sigmoid, add, ...; formats torch has no dtype for: float8_e4m3, float8_e3m4, float6,
float4, custom bM_E) the input goes through float32 ("through float32"), torch computes op and
gradient in float32, and condcheck rounds the result to the format exactly (RN_F, ties to even) --
what a user gets who upcasts, runs torch, and casts back.  Inf or NaN from torch counts as overflow.
Which of the two was used is in :func:`table_info` and in the evidence of every verdict.

PyTorch is optional (``pip install 'condcheck[torch]'``); this module imports it lazily and says so
clearly when it is missing.
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache

import numpy as np

from .activations import Activation, get_activation
from .errors import CondcheckError
from .formats import Format, get_format
from .rounding import round_array

#: condcheck built-in name -> (description, function of a tensor)
TORCH_OPS = {
    "relu": ("torch.nn.functional.relu", lambda F, t: F.relu(t)),
    "elu": ("torch.nn.functional.elu(alpha=1)", lambda F, t: F.elu(t, alpha=1.0)),
    "gelu": ("torch.nn.functional.gelu(approximate='none')", lambda F, t: F.gelu(t, approximate="none")),
    "gelu_tanh": ("torch.nn.functional.gelu(approximate='tanh')", lambda F, t: F.gelu(t, approximate="tanh")),
    "swish": ("torch.nn.functional.silu", lambda F, t: F.silu(t)),
    "sigmoid": ("torch.sigmoid", lambda F, t: F.sigmoid(t)),
    "tanh": ("torch.tanh", lambda F, t: F.tanh(t)),
    "leaky_relu": ("torch.nn.functional.leaky_relu(negative_slope=0.01)", lambda F, t: F.leaky_relu(t, 0.01)),
    "selu": ("torch.nn.functional.selu", lambda F, t: F.selu(t)),
    "softplus": ("torch.nn.functional.softplus (beta=1, threshold=20: x itself above 20)", lambda F, t: F.softplus(t)),
    "mish": ("torch.nn.functional.mish", lambda F, t: F.mish(t)),
    "sin": ("torch.sin", lambda F, t: t.sin()),
}

#: condcheck format name -> torch dtype attribute name (those torch has)
TORCH_DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
                "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
                "float8_e4m3fnuz": "float8_e4m3fnuz", "float8_e5m2fnuz": "float8_e5m2fnuz"}


def require_torch():
    try:
        import torch
    except ImportError:
        raise CondcheckError("the torch implementation needs PyTorch: pip install 'condcheck[torch]' "
                             "(torch==2.13.0, CPU)") from None
    return torch


def torch_dtype(fmt):
    """The torch dtype of a format, or None when torch has none."""
    torch = require_torch()
    name = TORCH_DTYPES.get(get_format(fmt).name)
    return getattr(torch, name, None) if name else None


def torch_op(act: Activation):
    """(description, function of a tensor) of the activation in torch; a CondcheckError if there is none."""
    torch = require_torch()
    F = torch.nn.functional
    if act.torch_function is not None:
        fn = act.torch_function
        return f"user torch_function {getattr(fn, '__name__', 'function')}", fn
    if act.name in TORCH_OPS:
        desc, f = TORCH_OPS[act.name]
        return desc, (lambda t: f(F, t))
    raise CondcheckError(f"activation {act.name!r} has no PyTorch op; register it with torch_function=... to use the "
                         f"torch implementation (built-in ops: {', '.join(TORCH_OPS)})")


PAD = 4096


def _run(fn, x):
    """(sigma, sigma') of fn at tensor x (autograd, upstream 1), both in x's dtype.

    The tensor is padded with zeros to a multiple of :data:`PAD` elements so that torch's vectorized
    loops cover every value (a scalar tail of a CPU kernel can round differently, see
    :func:`scalar_path_differences`)."""
    torch = require_torch()
    n = x.numel()
    pad = (-n) % PAD
    x = torch.cat([x.detach(), torch.zeros(pad, dtype=x.dtype)]).requires_grad_(True)
    y = fn(x)
    if y.shape != x.shape or y.dtype != x.dtype:
        raise CondcheckError(f"the torch op maps a {x.dtype} tensor of shape {tuple(x.shape)} to a {y.dtype} tensor "
                             f"of shape {tuple(y.shape)}; an activation must act elementwise and keep the dtype")
    (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), allow_unused=False)
    return y.detach()[:n], g.detach()[:n]


def scalar_path_differences(activation, fmt) -> dict:
    """Where PyTorch's op, applied to ONE element at a time (its scalar code path), differs from the
    table (taken in bulk, vectorized).  {"sigma": [z, ...], "dsigma": [z, ...]} of values of the format.

    On torch 2.13 CPU this is not empty for some (op, dtype): e.g. float16 gelu differs at 217 of
    63,487 values.  The "torch" implementation's table is the bulk result; a network whose
    pre-activation lands in a scalar tail of torch's loop may see the other value there."""
    torch = require_torch()
    act, F = get_activation(activation), get_format(fmt)
    _, fn = torch_op(act)
    s, _, d, _, info = _compute(act, F)
    native = info["mode"].startswith("native")
    dt = torch_dtype(F) if native else torch.float32
    pts = F.values()
    out = {"sigma": [], "dsigma": []}
    for i, z in enumerate(pts.tolist()):
        x = torch.tensor([z], dtype=torch.float64).to(dt).requires_grad_(True)
        y = fn(x)
        (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y))
        yv, gv = y.detach().double().item(), g.double().item()
        if not native:
            yv = float(round_array(np.array([yv]), F)[0][0])
            gv = float(round_array(np.array([gv]), F)[0][0])
        for key, v, ref in (("sigma", yv, s[i]), ("dsigma", gv, d[i])):
            if not (v == ref or (not np.isfinite(ref) and not np.isfinite(v))):
                out[key].append(z)
    return out


def _to_f64(t):
    torch = require_torch()
    return t.to(torch.float64).numpy().astype(np.float64)


def _cpu_capability(torch) -> str:
    """The vector unit torch's CPU kernels use (AVX2, AVX512, ...): their results can depend on it."""
    return torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else "unknown"


@lru_cache(maxsize=None)
def _compute(act: Activation, fmt: Format):
    torch = require_torch()
    if fmt.bits > 16 or not fmt.enumerable:
        raise CondcheckError(f"the torch implementation is an observed table for formats of at most 16 bits; "
                             f"{fmt.name} has {fmt.bits}")
    desc, fn = torch_op(act)
    pts = fmt.values()
    dt = torch_dtype(fmt)
    # torch's kernels depend on the CPU's vector unit: gelu's native bfloat16 table has z_d = -13.8125 on an
    # AVX2 machine and -6.15625 on an earlier one (docs/plugins.md), so the table states where it was taken
    cap = _cpu_capability(torch)
    info = {"torch": torch.__version__, "op": desc, "derivative": "torch.autograd.grad with upstream 1",
            "cpu_capability": cap}
    if dt is not None:
        x = torch.tensor(pts, dtype=torch.float64).to(dt)
        if np.array_equal(_to_f64(x), pts):
            try:
                y, g = _run(fn, x)
            except (RuntimeError, NotImplementedError) as e:
                info["native_error"] = str(e).splitlines()[0][:120]
            else:
                s, d = _to_f64(y), _to_f64(g)
                so, do = ~np.isfinite(s), ~np.isfinite(d)
                s[so] = np.where(np.isnan(s[so]), np.inf, s[so])
                d[do] = np.where(np.isnan(d[do]), np.inf, d[do])
                # torch's result is a value of its dtype, which is the format: check it, do not assume it
                for arr, over in ((s, so), (d, do)):
                    r, ro = round_array(np.where(over, 0.0, arr), fmt)
                    if not np.array_equal(r[~over], arr[~over]):
                        raise CondcheckError(f"torch returned values that are not in {fmt.name}")
                info["mode"] = f"native {dt} (op and autograd in the format's own dtype; CPU capability {cap})"
                return s, so, d, do, info
    p32 = pts.astype(np.float32)
    if not np.array_equal(p32.astype(np.float64), pts):
        raise CondcheckError(f"the values of {fmt.name} are not all float32 numbers; the torch implementation "
                             f"computes through float32")
    x = torch.tensor(p32, dtype=torch.float32)
    y, g = _run(fn, x)
    s, so = round_array(_to_f64(y), fmt)
    d, do = round_array(_to_f64(g), fmt)
    info["mode"] = ("through float32 (torch has no " + (f"CPU kernel for this op in {dt}" if dt is not None else
                    f"dtype for {fmt.name}") + f"); rounded to the format by condcheck (RN_F); CPU capability {cap}")
    return s, so, d, do, info


@contextmanager
def _one_thread(torch):
    """One intra-op thread: torch splits a tensor between threads at points that need not be multiples of
    the vector width, and a split's scalar tail can round differently (:func:`scalar_path_differences`)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def torch_points(activation, fmt, pts: np.ndarray):
    """(sigma, sigma overflow, sigma', sigma' overflow) at float64 points of a format of more than 16 bits
    (float32, or one whose values are all float32 numbers): torch's float32 op and autograd (upstream 1),
    on one intra-op thread, the tensor padded to a multiple of :data:`PAD` so that every element goes
    through the vectorized loop; rounded to the format exactly unless it is float32.  Inf or NaN counts as
    overflow (+-inf in the arrays).  No table: the chunked exhaustive checks call this chunk by chunk."""
    torch = require_torch()
    act, F = get_activation(activation), get_format(fmt)
    if F.bits <= 16:
        raise CondcheckError(f"the torch implementation of {F.name} is its observed table (torch_table_arrays)")
    _, fn = torch_op(act)
    pts = np.asarray(pts, dtype=np.float64)
    p32 = pts.astype(np.float32)
    if not np.array_equal(p32.astype(np.float64), pts):
        raise CondcheckError(f"the torch implementation computes in float32; these values of {F.name} are not all "
                             f"float32 numbers")
    with _one_thread(torch):
        y, g = _run(fn, torch.from_numpy(p32))
    out = []
    for a in (_to_f64(y), _to_f64(g)):
        if F.name == "float32":
            over = ~np.isfinite(a)
            a = np.where(over, np.where(np.isnan(a), np.inf, a), a)
        else:
            a, over = round_array(np.where(np.isnan(a), np.inf, a), F)
        out += [a, over]
    return tuple(out)


def points_info(activation, fmt) -> dict:
    """How :func:`torch_points` computes (torch version, op, CPU capability, mode)."""
    torch = require_torch()
    act, F = get_activation(activation), get_format(fmt)
    desc, _ = torch_op(act)
    cap = _cpu_capability(torch)
    mode = ("native float32" if F.name == "float32" else "through float32, rounded to the format by condcheck (RN_F)")
    return {"torch": torch.__version__, "op": desc, "derivative": "torch.autograd.grad with upstream 1",
            "mode": f"{mode}; one intra-op thread, every element through the vectorized loop (CPU capability {cap})"}


def torch_table_arrays(activation, fmt):
    """(sigma, sigma overflow, sigma', sigma' overflow) on ``fmt.values()`` (float64, +-inf on overflow)."""
    s, so, d, do, _ = _compute(get_activation(activation), get_format(fmt))
    return s.copy(), so.copy(), d.copy(), do.copy()


def table_info(activation, fmt) -> dict:
    """How the observed table was taken: torch version, op, mode (native dtype or through float32)."""
    return dict(_compute(get_activation(activation), get_format(fmt))[4])


def evidence_note(activation, fmt) -> str:
    if get_format(fmt).bits > 16:
        i = points_info(activation, fmt)
        return f"torch {i['torch']} CPU: sigma~ = {i['op']}, sigma~' = {i['derivative']}, {i['mode']}"
    i = table_info(activation, fmt)
    return f"torch {i['torch']} observed table: sigma~ = {i['op']}, sigma~' = {i['derivative']}, {i['mode']}"
