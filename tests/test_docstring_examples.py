"""The examples in the docstrings of the public API run and print what they show (doctest)."""
from __future__ import annotations

import doctest

import pytest

import condcheck

#: every function of the top-level API whose docstring carries an example
DOCUMENTED = ["check_activation", "load_network", "verify", "construct_theorem5", "construct_theorem7",
              "write_report", "to_torch", "register_implementation"]


@pytest.mark.parametrize("name", DOCUMENTED)
def test_the_docstring_example_of_a_public_function_runs_and_prints_what_it_shows(name):
    if name == "to_torch":
        pytest.importorskip("torch")
    function = getattr(condcheck, name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = doctest.DocTestFinder().find(function, name, globs={})
    from condcheck.implementations import scoped_implementations
    with scoped_implementations():                 # what an example registers leaves no trace
        for test in tests:
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name}'s docstring has no example"
    assert result.failed == 0


def test_the_top_level_api_exports_the_main_jobs():
    for name in ("check_activation", "construct_theorem5", "construct_theorem7", "verify", "write_report",
                 "to_torch", "load_network", "save_network"):
        assert name in condcheck.__all__ and callable(getattr(condcheck, name))
