"""A fake installed distribution with entry points, for the plug-in tests (activations and implementations)."""
import textwrap


def fake_distribution(tmp_path, name, module_name, module_text, entry_points, group="condcheck.activations"):
    """A distribution that importlib.metadata finds on a path holding ``tmp_path``: the module
    ``module_name`` and NAME-0.1.dist-info with METADATA and entry_points.txt (``entry_points``: name -> value)."""
    (tmp_path / f"{module_name}.py").write_text(textwrap.dedent(module_text))
    info = tmp_path / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}\n")
    return tmp_path
