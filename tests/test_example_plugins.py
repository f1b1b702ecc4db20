"""The example plug-in implementations of examples/ compute what their docstrings and docs/plugins.md say."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from condcheck import activations as A
from condcheck import implementations as I
from condcheck.activations import get_activation
from condcheck.formats import get_format
from condcheck.rounded_activation import evaluate_points

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "numpy_tanh_sigmoid_float32.py"


@pytest.fixture
def example():
    spec = importlib.util.spec_from_file_location("numpy_tanh_sigmoid_float32", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with A.scoped_registry(plugins_loaded=True), I.scoped_implementations():
        module.register()
        yield module


# float32 values where exp(-x) overflows in float32 (x < -88.72...) and a few ordinary ones
POINTS = np.array([-3.0e38, -1000.0, -104.0, -89.0, -88.0, -1.0, 0.0, 0.5, 20.0, 3.0e38], dtype=np.float32).astype(np.float64)


def test_the_sigmoid_plugins_derivative_is_finite_where_float32_exp_overflows_and_zero_far_out(example):
    f32 = get_format("float32")
    _, _, d, do, _ = evaluate_points(get_activation("sigmoid"), f32, "numpy_sigmoid", POINTS)
    assert not do.any()
    assert np.array_equal(d[:3], np.zeros(3)) and d[3] > 0


def test_float32_upcasts_sigmoid_derivative_overflows_there_as_docs_plugins_says(example):
    f32 = get_format("float32")
    _, _, _, do, _ = evaluate_points(get_activation("sigmoid"), f32, "float32-upcast", POINTS)
    assert do[:4].all()


@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
def test_the_example_backward_is_computed_from_the_rounded_forward_output(example, act):
    x = POINTS.astype(np.float32)
    y = getattr(example, act)(x)
    d = getattr(example, f"{act}_derivative")(x)
    expected = (np.float32(1) - y * y) if act == "tanh" else y * (np.float32(1) - y)
    assert np.array_equal(d.view(np.uint32), expected.astype(np.float32).view(np.uint32))
