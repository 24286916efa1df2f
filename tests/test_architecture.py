"""The package's shape, read from its sources with `ast` (nothing is imported): no import cycle
between packages (at any level: the rooms of `rbcosim`, the folders of a room, the modules of a
folder), no module-level import of another package's private name, and no function over 80
lines. Each check is first run on a small tree written here, where it must find the fault."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_FUNCTION_LINES = 80
#: The C extension built from librbcosim: private by name only, imported by every kernel module.
EXTENSION = "rbcosim._core"
#: Functions over MAX_FUNCTION_LINES when this check was written; each is its room's to split.
KNOWN_LONG = {
    "rbcosim.cli.check_cmd:run",
    "rbcosim.cli.export_fmu_cmd:add_parser",
    "rbcosim.cli.serve_cmd:add_parser",
    "rbcosim.flex.io.matrices_io:validate_structure",
    "rbcosim.flex.modelling.model:FlexModel.from_beam",
    "rbcosim.flex.modelling.model:FlexModel.from_matrices",
    "rbcosim.fmu_export.table:build_table",
    "rbcosim.scenario.flex_config:_beam",
    "rbcosim.scenario.flex_config:_matrices",
    "rbcosim.service.core:Service._on_create_session",
    "rbcosim.service.stepping:StepRequests._release",
    "rbcosim.service.wire:as_array",
}


def modules(src: Path) -> dict[str, tuple[ast.Module, bool]]:
    """Dotted module name -> (its syntax tree, is a package's __init__) of every file under src."""
    out = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (ast.parse(path.read_text("utf-8")),
                                                          package)
    return out


def imports(tree: ast.Module, known: set[str]):
    """(target module, imported name or None, at module level) of each import in `tree`,
    outside `if TYPE_CHECKING:` blocks; `from p import m` of a module m targets p.m."""
    def walk(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            level = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda))
            if isinstance(child, ast.ImportFrom) and child.module and not child.level:
                for alias in child.names:
                    full = f"{child.module}.{alias.name}"
                    yield (full, None, level) if full in known else (child.module, alias.name,
                                                                     level)
            elif isinstance(child, ast.Import):
                yield from ((alias.name, None, level) for alias in child.names)
            yield from walk(child, level)
    yield from walk(tree, True)


def package_cycles(src: Path) -> list[list[str]]:
    """Cycles among the direct children (subpackages, modules) of any package under src, from
    all their descendants' imports (module level and in functions)."""
    found = modules(src)
    known = set(found)
    edges = collections.defaultdict(set)
    for name, (tree, _) in found.items():
        for target, _, _ in imports(tree, known):
            parts, other = name.split("."), target.split(".")
            common = next((i for i, (a, b) in enumerate(zip(parts, other)) if a != b), None)
            if common and common < len(parts) and common < len(other):
                child_a, child_b = ".".join(parts[:common + 1]), ".".join(other[:common + 1])
                if child_b in known:
                    edges[child_a].add(child_b)
    return strongly_connected(edges)


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Components of more than one node (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def private_imports(src: Path) -> list[str]:
    """`module: from other import _name` at module level where `other` is in another package
    than `module` (the C extension excepted)."""
    found = modules(src)
    out = []
    for name, (tree, package) in found.items():
        home = name if package else name.rpartition(".")[0]
        for target, imported, top in imports(tree, set(found)):
            private = imported if imported is not None else target.rpartition(".")[2]
            if (top and private.startswith("_") and not private.startswith("__")
                    and f"{target}.{imported}" != EXTENSION and target != EXTENSION
                    and target.rpartition(".")[0] != home and target != home):
                out.append(f"{name}: from {target} import {private}")
    return out


def long_functions(src: Path) -> dict[str, int]:
    """'module:Class.function' -> lines (def to last line) of each function over the limit."""
    out = {}

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                lines = child.end_lineno - child.lineno + 1
                if not isinstance(child, ast.ClassDef) and lines > MAX_FUNCTION_LINES:
                    out[f"{prefix}{child.name}"] = lines
                walk(child, f"{prefix}{child.name}.")

    for name, (tree, _) in modules(src).items():
        walk(tree, f"{name}:")
    return out


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def test_the_checks_find_a_cycle_a_private_import_and_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    src = write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a/__init__.py": "",
        "pkg/a/one.py": "from pkg.b.two import _helper\n",
        "pkg/b/__init__.py": "",
        "pkg/b/two.py": f"def _helper():\n    from pkg.a import one\n{body}\n",
        "pkg/b/three.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                          "    from pkg.a.one import x\n",
    })
    assert package_cycles(src) == [["pkg.a", "pkg.b"]]
    assert private_imports(src) == ["pkg.a.one: from pkg.b.two import _helper"]
    assert long_functions(src) == {"pkg.b.two:_helper": MAX_FUNCTION_LINES + 2}
    (src / "pkg/b/two.py").write_text("def _helper():\n    pass\n")
    assert package_cycles(src) == [] and long_functions(src) == {}


def test_no_import_cycle_between_packages():
    assert package_cycles(SRC) == []


def test_no_module_level_import_of_another_packages_private_name():
    assert private_imports(SRC) == []


def test_no_new_function_over_80_lines():
    assert sorted(set(long_functions(SRC)) - KNOWN_LONG) == []


def test_no_function_over_80_lines():
    assert long_functions(SRC) == {}
