"""No import cycle anywhere in ecomrlve/: no module imports, directly or through others, a
module that imports it. Imports inside functions and in `TYPE_CHECKING` blocks count too: a
type-only loop is still two modules that can't be read (or moved) one without the other.

The layer contracts of pyproject.toml (`lint-imports`, run by `make test`) forbid upward imports
and cycles between sibling modules; this also catches a package's `__init__` in a cycle with
one of its own modules, which is no sibling cycle.
"""

from __future__ import annotations

import grimp


def import_cycles(package: str) -> list[tuple[str, ...]]:
    """For every import `a -> b` that closes a loop, the loop `(a, b, ..., a)`; sorted."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    loops = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                loops.append((importer, *back))
    return loops


def test_no_import_cycle_in_ecomrlve() -> None:
    assert import_cycles("ecomrlve") == []


def test_function_imports_and_type_checking_imports_count(tmp_path, monkeypatch) -> None:
    """The check itself, on a small package: a loop closed by an import inside a function is
    found, also through the package's `__init__`, and so is one closed only under
    `TYPE_CHECKING`."""
    package = tmp_path / "layers_probe"
    package.mkdir()
    files = {
        "__init__.py": "from layers_probe import top\n",
        "top.py": "def f():\n    import layers_probe\n",  # __init__ -> top -> __init__
        "a.py": "import layers_probe.b\n",
        "b.py": "def g():\n    from layers_probe import a\n",  # a -> b -> a
        "c.py": "from layers_probe import d\n",
        "d.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from layers_probe import c\n"  # c -> d -> c, for type checkers only
        ),
    }
    for name, text in files.items():
        (package / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    loops = import_cycles("layers_probe")
    assert loops == [
        ("layers_probe", "layers_probe.top", "layers_probe"),
        ("layers_probe.a", "layers_probe.b", "layers_probe.a"),
        ("layers_probe.b", "layers_probe.a", "layers_probe.b"),
        ("layers_probe.c", "layers_probe.d", "layers_probe.c"),
        ("layers_probe.d", "layers_probe.c", "layers_probe.d"),
        ("layers_probe.top", "layers_probe", "layers_probe.top"),
    ]


def test_only_the_cli_parses_command_lines() -> None:
    """`ecomrlve/cli/` parses command lines; no module below it imports a parser (the layer
    contract checks typer and click; argparse is the standard library's, so it is read here)."""
    import ast
    from pathlib import Path

    import ecomrlve

    root = Path(ecomrlve.__file__).parent
    parsers = {"argparse", "typer", "click"}
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(name.split(".")[0] in parsers for name in names):
                offenders.append(str(path.relative_to(root)))
    assert offenders == []


def test_no_package_attribute_hides_a_subpackage() -> None:
    """`ecomrlve.env.judge` is the judging package, never a function of the same name that
    `ecomrlve/env/__init__.py` re-exports (a dotted path like `monkeypatch.setattr(
    "ecomrlve.env.judge.verifier.X", ...)` would then resolve into the function)."""
    import importlib
    import pkgutil

    import ecomrlve

    hidden = []
    for info in pkgutil.walk_packages(ecomrlve.__path__, "ecomrlve."):
        if not info.ispkg:
            continue
        module = importlib.import_module(info.name)
        parent, _, name = info.name.rpartition(".")
        if getattr(importlib.import_module(parent), name, module) is not module:
            hidden.append(info.name)
    assert hidden == []
