"""The house's structure: every module of condcheck/, conditions/ and reports/ imports on its own, and no
import statement anywhere (top level or inside a function) closes a cycle between modules."""
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("condcheck", "conditions", "reports")


def _modules() -> dict:
    """module name -> path, for every .py file of the packages."""
    out = {}
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = p
    return out


def _imports(name: str, path: Path, modules: dict) -> set:
    """The modules of the packages that ``name`` imports anywhere in its file, each import resolved to
    the most specific module (``from . import kit`` is the module kit, ``from .kit import Kit`` too)."""
    out = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target:
                    out.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}" if base else alias.name
                if sub in modules:
                    out.add(sub)
                elif base in modules:
                    out.add(base)
    out.discard(name)
    return out


def _cycles(graph: dict) -> list:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_cycle_finder_finds_a_cycle_and_only_the_modules_on_it():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_closes_a_cycle_between_modules():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "condcheck.formats" in graph["condcheck.rounding"]          # the graph is read
    assert _cycles(graph) == []


# The children form a tree along the packages: a process that has imported package P forks one child
# per module P.M.  Importing P.M in a fresh interpreter first imports P, so each child starts from exactly
# the state a fresh ``import P.M`` passes through, and a package's own imports are paid once, not once per
# module.  The root first imports the third-party libraries named in its first argument (none of them
# imports this project, so what each child imports of ours it imports on its own).  Libraries that no
# module imports at its top level (torch, matplotlib, dask) are not preloaded: they cost seconds.
_ZYGOTE = r"""
import importlib, os, sys, traceback
for library in filter(None, sys.argv[1].split(",")):
    importlib.import_module(library)
names = sys.argv[2:]
children = {}
for name in names:
    parent = name.rpartition(".")[0]
    children.setdefault(parent if parent in names else "", []).append(name)
sys.stdout.flush()

def visit(package):
    for name in children.get(package, []):
        pid = os.fork()
        if pid == 0:
            try:
                importlib.import_module(name)
            except BaseException:
                traceback.print_exc()
                sys.stderr.flush()
                os.write(1, (name + "\n").encode())
                os._exit(1)
            visit(name)
            os._exit(0)
        os.waitpid(pid, 0)

visit("")
"""


_PRELOADED = "numpy,scipy.sparse,scipy.special,sympy,mpmath,ml_dtypes,click"


def test_every_module_imports_on_its_own_in_a_fresh_process():
    names = sorted(n for n in _modules() if not n.endswith("__main__"))     # (__main__ runs the CLI)
    out = subprocess.run([sys.executable, "-c", _ZYGOTE, _PRELOADED, *names], capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == [], out.stderr[-3000:]


def test_a_module_that_needs_another_imported_first_fails_in_its_own_process(tmp_path):
    """The tree of processes still imports each module from its package's state only: a module that
    reads a sibling it never imports fails, even when the sibling was imported (in another child) before."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("X = 1\n")
    (pkg / "b.py").write_text("import pkg\nY = pkg.a.X\n")
    out = subprocess.run([sys.executable, "-c", _ZYGOTE, "", "pkg", "pkg.a", "pkg.b"], capture_output=True,
                         text=True, cwd=tmp_path, timeout=600)
    assert out.stdout.split() == ["pkg.b"], out.stderr[-3000:]


def _room(name: str) -> str:
    """The room a module stands in, as ``farm-studio look`` draws the house: a module of condcheck/ at its
    top level is its own room; a subpackage of condcheck/ (interpreters, theorem5, ...) and each top-level
    package beside it (conditions, reports) is one room."""
    parts = name.split(".")
    if parts[0] != "condcheck":
        return parts[0]
    return ".".join(parts[:2])


def test_no_import_runs_back_up_between_rooms_so_the_packages_stack_in_layers():
    modules = _modules()
    rooms = {}
    for name, path in modules.items():
        rooms.setdefault(_room(name), set()).update(_room(m) for m in _imports(name, path, modules))
    for room, used in rooms.items():
        used.discard(room)
    assert "condcheck.interpreters" in rooms["condcheck.network"]          # the graph is read
    assert _cycles(rooms) == []


def test_the_conditions_side_and_the_networks_side_of_the_house_do_not_import_each_other():
    """docs/architecture.md's picture: the conditions (decided, certified, re-checked) and the networks
    (evaluated, verified) stand side by side, each on the layers below both."""
    conditions_side = {"conditions", "condcheck.recheck", "condcheck.check", "condcheck.certificate",
                       "condcheck.matrix"}
    networks_side = {"condcheck.interpreters", "condcheck.ieee", "condcheck.network", "condcheck.netfile",
                     "condcheck.verify"}
    modules = _modules()
    crossing = []
    for name, path in modules.items():
        for used in _imports(name, path, modules):
            for a, b in ((conditions_side, networks_side), (networks_side, conditions_side)):
                if _room(name) in a and _room(used) in b:
                    crossing.append(f"{name} -> {used}")
    assert crossing == []
