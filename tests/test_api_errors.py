"""Errors of the public functions are CondcheckError subclasses with the command line's one-line messages."""
import numpy as np
import pytest
from click.testing import CliRunner

from condcheck.activations import register_activation
from condcheck.check import check_activation
from condcheck.cli import main
from condcheck.errors import ArgumentError, CondcheckError, PluginError
from condcheck.netfile import load_network
from condcheck.recheck import recheck_certificate
from condcheck import write_report
from condcheck.theorem5 import construct_theorem5
from condcheck.theorem7 import construct_theorem7
from condcheck.verify import verify

CASES = {
    "check: not a name": (lambda: check_activation(5, "float8_e4m3"), "activation must be a name"),
    "check: beyond float64's exponents": (lambda: check_activation("gelu", "b60_15"), "at most 11"),
    "check: unknown method": (lambda: check_activation("gelu", "float8_e4m3", method="fast"), "unknown method"),
    "check: exhaustive on float64": (lambda: check_activation("gelu", "float64", method="exhaustive"), "32 bits"),
    "theorem5: text points": (lambda: construct_theorem5("relu", "float8_e4m3", "abc", [1], [1], [[1]]), "points"),
    "theorem5: no points": (lambda: construct_theorem5("relu", "float8_e4m3", [], [], [], []), "non-empty"),
    "theorem5: text values": (lambda: construct_theorem5("relu", "float8_e4m3", [[1.0]], ["x"], [1], [[1]]), "values"),
    "theorem5: a NaN point": (lambda: construct_theorem5("relu", "float8_e4m3", [[np.nan]], [1.0], [1.0], [[1.0]]),
                              "not finite"),
    "theorem7: text points": (lambda: construct_theorem7("relu", "float6_e3m2fn", "abc", [1], [[1]]), "points"),
    "verify: not a network": (lambda: verify("x", "y"), "needs a Network"),
    "load_network: not a path": (lambda: load_network(None), "path"),
    "load_network: a folder": (lambda: load_network("/proc"), "not a file"),
    "register: an imaginary expression": (lambda: register_activation("api_err_1", "sqrt(-1)*x"), "imaginary"),
    "register: a syntax error": (lambda: register_activation("api_err_2", "x+*2"), "could not parse"),
    "register: callables that are not": (lambda: register_activation("api_err_3", function=1, derivative=2),
                                         "callables"),
    "write_report: an output under /proc": (lambda: write_report("gelu", "float8_e4m3", out="/proc/x", figures=False),
                                            "cannot be used as an output folder"),
    "recheck: not a certificate": (lambda: recheck_certificate([]), "JSON object"),
}


@pytest.mark.parametrize("name", CASES)
def test_public_functions_raise_one_line_condcheck_errors(name):
    call, words = CASES[name]
    with pytest.raises(CondcheckError) as e:
        call()
    assert words in str(e.value) and "\n" not in str(e.value)
    assert "np.float64" not in str(e.value)


def test_a_plug_in_that_fails_validation_raises_a_plugin_error_not_a_syntax_error():
    with pytest.raises(PluginError) as e:
        register_activation("api_err_4", "exp(")
    assert not isinstance(e.value, SyntaxError)
    assert e.value.__cause__ is None and e.value.__suppress_context__       # no chained sympy traceback


def test_argument_errors_are_condcheck_errors():
    assert issubclass(ArgumentError, CondcheckError) and issubclass(PluginError, CondcheckError)


@pytest.mark.parametrize("args, call", [
    (["check", "gelu", "b60_15"], lambda: check_activation("gelu", "b60_15")),
    (["check", "gelux", "float8_e4m3"], lambda: check_activation("gelux", "float8_e4m3")),
    (["verify", "/nonexistent/net.json"], lambda: load_network("/nonexistent/net.json")),
])
def test_the_command_line_prints_the_functions_message(args, call):
    r = CliRunner().invoke(main, args)
    with pytest.raises(CondcheckError) as e:
        call()
    assert r.exit_code == 2 and r.output.strip() == f"error: {e.value}"
