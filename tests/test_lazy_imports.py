"""What is imported, and computed, only when it is used: the heavy libraries, numba, scipy.special, the
built-ins' derivatives."""
import pickle
import subprocess
import sys

import sympy

import condcheck.activations as acts


def _modules_after(code: str) -> set:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


HEAVY = ("sympy", "numba", "scipy", "matplotlib", "torch", "dask")


def _loaded(mods, names) -> list:
    return sorted(n for n in names if n in mods)


def test_importing_condcheck_loads_no_heavy_library_and_no_checker():
    mods = _modules_after("import condcheck")
    assert _loaded(mods, HEAVY + ("conditions", "condcheck.check")) == []


def test_importing_the_formats_loads_no_heavy_library_and_no_checker():
    mods = _modules_after("import condcheck.formats")
    assert "condcheck.formats" in mods
    assert _loaded(mods, HEAVY + ("conditions",)) == []


def test_an_exhaustive_check_of_a_float8_format_and_its_certificate_do_not_import_ml_dtypes():
    # ml_dtypes' import is most of a CLI call's start-up; the formats' fields and bit patterns need it not
    mods = _modules_after("from condcheck.check import check_activation\n"
                          "c = check_activation('gelu', 'float8_e4m3').to_certificate()\n"
                          "assert c['holds'] is True and c['conditions']['1']['method'] == 'exhaustive'")
    assert "condcheck.check" in mods and "ml_dtypes" not in mods


def test_the_dtype_of_a_format_imports_ml_dtypes_at_its_first_use():
    mods = _modules_after("from condcheck.formats import get_format\n"
                          "assert get_format('float8_e4m3').dtype.name == 'float8_e4m3'")
    assert "ml_dtypes" in mods


def test_a_name_of_condcheck_imports_its_module_at_its_first_use():
    mods = _modules_after("import condcheck\nassert 'condcheck.formats' not in __import__('sys').modules\n"
                          "assert condcheck.get_format('float8_e4m3').bits == 8")
    assert "condcheck.formats" in mods and "sympy" not in mods


def test_condcheck_verify_is_the_function_after_its_module_is_imported():
    out = subprocess.run([sys.executable, "-c", "import condcheck.verify, condcheck\n"
                          "from condcheck import verify\nprint(callable(verify), callable(condcheck.verify))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_importing_the_constructor_loads_neither_numba_nor_scipy_special():
    mods = _modules_after("import condcheck.theorem5, condcheck.targets")
    assert "condcheck.theorem5" in mods
    assert "numba" not in mods and "scipy.special" not in mods


def test_a_kernel_loads_numba_at_its_first_use():
    mods = _modules_after("import numpy as np\nfrom condcheck import kernels\nfrom condcheck.formats import get_format\n"
                          "I = np.array([[0, 1]]); print(kernels.best_separators(I, np.array([0.0, 1.0])))")
    assert "numba" in mods


def test_every_built_in_derivative_is_sympy_diff_of_its_expression():
    for name in acts.BUILTIN_ACTIVATIONS:
        act = acts.get_activation(name)
        assert act.derivative == sympy.diff(act.expr, acts.x)


def test_a_derivative_is_computed_at_its_first_use_only():
    act = acts.lazy_activation("lazy_test", acts.x ** 3, "x^3")
    assert not act.derivative_known
    assert act.derivative == 3 * acts.x ** 2
    assert act.derivative_known


def test_an_activation_pickled_before_its_derivative_is_computed_computes_it_after():
    act = pickle.loads(pickle.dumps(acts.lazy_activation("lazy_test2", sympy.sin(acts.x), "sin")))
    assert act.derivative == sympy.cos(acts.x)
