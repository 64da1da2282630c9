"""Import layering of src/duetbench (docs/architecture.md, "Packages and layers").

Every import statement of every module counts, including imports inside functions
(an import that runs late still ties the two modules together). The rules:

- analysis/ and adaptive/ compute: they never import rendering (report/), the
  command line (commands/, cli), execution (schedule/), the results store or argparse;
- report/ renders: it never imports commands/ or cli;
- the base layer (errors, schema, options, records) imports only itself;
- argparse is imported only by cli.py, commands/ and the standalone entry points of
  processes duet starts (sync's command line, the microbenchmark worker);
- no import cycle among first-party modules, with a package's __init__ counted as
  the module that re-exports what it imports.

Each rule is checked on the real tree and, so the check itself cannot rot, on a
small tree that breaks it.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

import duetbench

SRC = Path(duetbench.__file__).parent
PKG = "duetbench"

#: (importer prefix, forbidden prefixes). A prefix "duetbench.x" matches the module
#: duetbench.x and everything under it; "argparse" is the standard library module.
FORBIDDEN: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (importer, forbidden)
    for importer, forbidden in (
        (
            f"{PKG}.analysis",
            (
                f"{PKG}.report",
                f"{PKG}.commands",
                f"{PKG}.cli",
                f"{PKG}.schedule",
                f"{PKG}.store",
                "argparse",
            ),
        ),
        (
            f"{PKG}.adaptive",
            (
                f"{PKG}.report",
                f"{PKG}.commands",
                f"{PKG}.cli",
                f"{PKG}.schedule",
                f"{PKG}.store",
                "argparse",
            ),
        ),
        (f"{PKG}.report", (f"{PKG}.commands", f"{PKG}.cli")),
    )
)
#: The base layer: pure Python, importing only each other.
BASE = tuple(
    f"{PKG}.{m}" for m in ("errors", "schema", "options", "records", "_version", "text", "files")
)
#: The layer of every top-level module or package (docs/architecture.md, "Packages and
#: layers"): a module imports only modules of its own layer or below. `duetbench` is the
#: package's __init__ (the public `load`).
LAYERS: dict[str, int] = {
    **dict.fromkeys(("errors", "schema", "options", "records", "_version", "text", "files"), 0),
    **dict.fromkeys(("config", "plan", "store", "atomic", "sync", "noise", "parse"), 1),
    **dict.fromkeys(("execute", "hosts", "analysis"), 2),
    **dict.fromkeys(
        ("adaptive", "micro", "process", "dataset", "schedule", "history", "host_report"), 3
    ),
    **dict.fromkeys(("report", "dashboard", "ci"), 4),
    **dict.fromkeys(("commands", "pytest_plugin", ""), 5),
    **dict.fromkeys(("cli", "__main__"), 6),
}
#: Where argparse may be imported.
ARGPARSE_ALLOWED = (
    f"{PKG}.cli",
    f"{PKG}.commands",
    f"{PKG}.sync.cli",
    f"{PKG}.sync.__main__",
    f"{PKG}.micro.worker",
)


def module_name(root: Path, path: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def read_tree(root: Path, package: str) -> dict[str, tuple[ast.Module, bool]]:
    """Module name -> (syntax tree, is a package __init__), for every .py under root."""
    return {
        module_name(root, p, package): (
            ast.parse(p.read_text(encoding="utf-8"), str(p)),
            p.name == "__init__.py",
        )
        for p in sorted(root.rglob("*.py"))
        # the pyperf shim runs inside the benchmarked interpreter and imports only pyperf
        if "pyperf_shim" not in p.parts
    }


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def imports(
    name: str, tree: ast.Module, is_package: bool, known: Iterable[str]
) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement anywhere in the module.

    `from p import x` imports the module p.x when there is one, else p (whose
    __init__ provides x); `import a.b` imports a.b. Relative imports are resolved.
    """
    known = set(known)
    here = name if is_package else name.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in known else target, node.lineno))
    return found


def graph(modules: Mapping[str, tuple[ast.Module, bool]]) -> dict[str, list[tuple[str, int]]]:
    return {name: imports(name, tree, is_pkg, modules) for name, (tree, is_pkg) in modules.items()}


def layer(module: str) -> int:
    top = module.removeprefix(PKG).removeprefix(".").partition(".")[0]
    assert top in LAYERS, (
        f"{module}: a new top-level module; give it a layer in LAYERS and in "
        "docs/architecture.md ('Packages and layers')"
    )
    return LAYERS[top]


def violations(modules: Mapping[str, tuple[ast.Module, bool]]) -> list[str]:
    """Every import that breaks a layering rule, as 'importer:line imports target'."""
    found = []
    for name, targets in graph(modules).items():
        for target, line in targets:
            why = [
                f"{importer} must not import {target}"
                for importer, forbidden in FORBIDDEN
                if _under(name, importer) and any(_under(target, f) for f in forbidden)
            ]
            base = any(_under(name, b) for b in BASE)
            if base and _under(target, PKG) and not any(_under(target, b) for b in BASE):
                why.append("the base layer imports only itself")
            if _under(target, "argparse") and not any(_under(name, a) for a in ARGPARSE_ALLOWED):
                why.append("argparse outside the command line")
            if _under(target, PKG):
                mine, theirs = layer(name), layer(target)
                if theirs > mine:
                    why.append(f"layer {mine} imports layer {theirs}")
            if why:
                found.append(f"{name}:{line} imports {target} ({'; '.join(why)})")
    return found


def cycles(modules: Mapping[str, tuple[ast.Module, bool]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan),
    and modules that import themselves."""
    edges = {
        name: sorted({t for t, _ in targets if t in modules and t != name})
        for name, targets in graph(modules).items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


# -- the real tree -------------------------------------------------------------------


def test_every_package_imports_only_what_its_layer_may() -> None:
    assert violations(read_tree(SRC, PKG)) == []


def test_no_import_cycle_among_first_party_modules() -> None:
    assert cycles(read_tree(SRC, PKG)) == []


def test_the_check_sees_every_package() -> None:
    names = read_tree(SRC, PKG)
    for package in ("analysis", "adaptive", "report", "commands", "store", "schedule"):
        assert any(_under(n, f"{PKG}.{package}") for n in names), package


# -- the rules catch what they should (a small tree breaking each) -------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, tuple[ast.Module, bool]]:
    root = tmp_path / "pkg"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return read_tree(root, PKG)


CLEAN = {
    "__init__.py": "",
    "errors.py": "",
    "schema.py": "from . import errors\n",
    "analysis/__init__.py": "from .compare import compare_rows\n",
    "analysis/compare.py": "from duetbench.schema import X\n",
    "report/__init__.py": "",
    "report/tables.py": "from duetbench.analysis import compare_rows\n",
    "commands/__init__.py": "",
    "commands/compare.py": "import argparse\nfrom ..report import tables\n",
    "cli.py": "import argparse\nfrom duetbench.commands import compare\n",
}


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    modules = _tree(tmp_path, CLEAN)
    assert violations(modules) == [] and cycles(modules) == []


@pytest.mark.parametrize(
    ("rel", "line"),
    [
        ("analysis/compare.py", "from duetbench.report import tables"),
        ("analysis/compare.py", "from ..commands import compare"),
        ("analysis/compare.py", "import duetbench.cli"),
        ("analysis/compare.py", "from duetbench import store"),
        ("analysis/compare.py", "def f():\n    from duetbench.schedule import inline"),
        ("analysis/compare.py", "def f():\n    import argparse"),
        ("adaptive/rules.py", "from duetbench.report.tables import Table"),
        ("report/tables.py", "def f():\n    from duetbench.commands.compare import run"),
        ("report/tables.py", "from .. import cli"),
        ("schema.py", "from duetbench.analysis import compare"),
        ("report/tables.py", "import argparse"),
        ("schema.py", "def f():\n    from duetbench.report import tables"),
        ("config/__init__.py", "from duetbench.analysis import compare_rows"),
        ("store.py", "from duetbench.schedule import inline"),
    ],
)
def test_a_forbidden_import_is_found(tmp_path: Path, rel: str, line: str) -> None:
    files = dict(CLEAN)
    files.setdefault("adaptive/__init__.py", "")
    files.setdefault("store.py", "")
    files.setdefault("schedule/__init__.py", "")
    files.setdefault("schedule/inline.py", "")
    files[rel] = files.get(rel, "") + line + "\n"
    found = violations(_tree(tmp_path, files))
    assert len(found) == 1, found
    assert found[0].startswith(module_name(tmp_path / "pkg", tmp_path / "pkg" / rel, PKG))


def test_imports_within_a_layer_and_downwards_are_allowed(tmp_path: Path) -> None:
    files = dict(CLEAN)
    files["errors.py"] = "from duetbench.schema import X\n"
    files["config/__init__.py"] = "from duetbench.plan import make_plan\n"
    files["plan.py"] = "from duetbench import config, errors\n"
    files["cli.py"] += "from duetbench.report import tables\n"
    assert violations(_tree(tmp_path, files)) == []


def test_a_new_top_level_module_needs_a_layer(tmp_path: Path) -> None:
    files = dict(CLEAN)
    files["gadget.py"] = "from duetbench import errors\n"
    with pytest.raises(AssertionError, match="gadget: a new top-level module"):
        violations(_tree(tmp_path, files))


def test_an_import_cycle_is_found_also_through_a_function_and_a_package_init(
    tmp_path: Path,
) -> None:
    files = dict(CLEAN)
    # report.tables -> analysis (its __init__ re-exports compare) -> analysis.compare
    # -> report.tables, the last one inside a function
    files["analysis/compare.py"] += "def f():\n    from duetbench.report.tables import T\n"
    assert cycles(_tree(tmp_path, files)) == [
        [f"{PKG}.analysis", f"{PKG}.analysis.compare", f"{PKG}.report.tables"]
    ]
