"""The Theorem 5 package's layout promises: one place for the tunables, every module documented."""
import importlib
import pkgutil

import condcheck.theorem5 as t5


def _modules():
    return [importlib.import_module(f"condcheck.theorem5.{m.name}") for m in pkgutil.iter_modules(t5.__path__)]


def _tunables():
    return [n for n in vars(t5.tuning) if n.isupper()]


def test_no_module_but_tuning_binds_a_tunable_so_setting_tuning_changes_every_use():
    assert len(_tunables()) >= 10
    for module in _modules():
        if module is not t5.tuning:
            bound = [n for n in _tunables() if n in vars(module)]
            assert bound == [], f"{module.__name__} binds {bound}: read them as tuning.NAME"


def test_every_module_of_the_package_says_what_it_holds_and_is_listed_in_the_package_docstring():
    for module in _modules():
        short = module.__name__.rsplit(".", 1)[1]
        assert module.__doc__ and module.__doc__.strip()
        assert f"``{short}``" in t5.__doc__
