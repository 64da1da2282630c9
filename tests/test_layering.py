"""Import layering of src/duetbench (docs/architecture.md, "Packages and layers").

Every import statement of every module counts, including imports inside functions
(an import that runs late still ties the two modules together). The rules:

- analysis/ and adaptive/ compute: they never import rendering (report/), the
  command line (commands/, cli), execution (schedule/), the results store or argparse;
- report/ renders: it never imports commands/ or cli;
- a command module (commands/<command>.py) imports no other command module: the steps
  several commands share live in workflow/, their shared flags in the private helpers
  of commands/ (``commands/_*.py``); the pytest plugin imports no command module at all;
- the base layer (errors, schema, options, records) imports only itself;
- argparse is imported only by cli.py, commands/ and the standalone entry points of
  processes duet starts (sync's command line, the microbenchmark worker);
- no import cycle among first-party modules, with a package's __init__ counted as
  the module that re-exports what it imports;
- only the process package (proctools/) reads what ``/proc`` says about a process
  (``/proc/<pid>/...``, ``/proc/self/...``) or lists ``/proc``: nothing above it
  reimplements it (code that runs without duetbench cannot import it);
- code that runs without duetbench (:data:`STANDALONE`) imports only the standard
  library, and with the modules a benchmark's interpreter loads from the package
  (:data:`BENCHMARK_SIDE`) it parses as Python 3.8.

Each rule is checked on the real tree and, so the check itself cannot rot, on a
small tree that breaks it.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from tests.helpers import docstring_ids

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
_BASE = ("errors", "schema", "options", "records", "units", "_version", "text", "files")
BASE = tuple(f"{PKG}.{m}" for m in _BASE)
#: The layer of every top-level module or package (docs/architecture.md, "Packages and
#: layers"): a module imports only modules of its own layer or below. `duetbench` is the
#: package's __init__ (the public `load`).
LAYERS: dict[str, int] = {
    **dict.fromkeys(_BASE, 0),
    **dict.fromkeys(
        ("config", "plan", "store", "atomic", "sync", "noise", "parse", "proctools"), 1
    ),
    **dict.fromkeys(("execute", "hosts", "analysis"), 2),
    **dict.fromkeys(
        (
            "adaptive",
            "micro",
            "process",
            "dataset",
            "verdicts",
            "schedule",
            "history",
            "host_report",
        ),
        3,
    ),
    **dict.fromkeys(("report", "dashboard", "ci"), 4),
    **dict.fromkeys(("workflow",), 5),
    **dict.fromkeys(("commands", "pytest_plugin", ""), 6),
    **dict.fromkeys(("cli", "__main__"), 7),
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


def from_target(here: str, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` in package ``here`` reads from, relative levels
    resolved."""
    if not node.level:
        return node.module or ""
    base = here.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


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
            target = from_target(here, node)
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


COMMANDS = f"{PKG}.commands"


def _command_module(name: str) -> bool:
    """A module of one `duet` command: ``duetbench.commands.<command>``, not a private
    helper (``_options``) nor the package itself."""
    head, _, last = name.rpartition(".")
    return head == COMMANDS and not last.startswith("_")


def command_imports(modules: Mapping[str, tuple[ast.Module, bool]]) -> list[str]:
    """Every import of a command module by another command module or by the pytest
    plugin, as 'importer:line imports target'."""
    found = []
    for name, targets in graph(modules).items():
        plugin = _under(name, f"{PKG}.pytest_plugin")
        if not (plugin or _command_module(name)):
            continue
        for target, line in targets:
            if target == name:
                continue
            if _command_module(target) or (plugin and _under(target, COMMANDS)):
                found.append(f"{name}:{line} imports {target}")
    return found


def private_imports(modules: Mapping[str, tuple[ast.Module, bool]]) -> list[str]:
    """Every import of another module's private name (``from .x import _helper``) as
    'importer:line imports target._name': what two modules share is public in one of
    them. A private module (``commands/_flags.py``) may be imported, and its public names."""
    found = []
    for name, (tree, is_pkg) in modules.items():
        here = name if is_pkg else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = from_target(here, node)
            if not _under(target, PKG):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{target}.{alias.name}" not in modules:
                    found.append(f"{name}:{node.lineno} imports {target}.{alias.name}")
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


#: Code that runs without duetbench, in another interpreter (maybe Python 3.8, maybe in a
#: container): duet micro's worker and the helpers it loads by path, the pyperf shim.
#: Standard library only (docs/architecture.md, "Code that runs without duetbench");
#: paths relative to the package.
STANDALONE = (
    "micro/worker.py",
    "micro/calibration.py",
    "micro/discovery.py",
    "micro/handshake.py",
    "micro/apart.py",
    "micro/cpuswap.py",
    "micro/sampling.py",
    "sync/pyperf_shim/sitecustomize.py",
)
#: What a benchmark's interpreter loads from the package (on its path, maybe mounted into
#: a container), beside STANDALONE: the per-side driver (``python -m
#: duetbench.execute.driver``, with its measurements ``driver_cpu``) and the harness side of the handshake (``import
#: duetbench.sync``, ``python -m duetbench.sync``), with the package modules they pass
#: through. They import the standard library and each other only.
BENCHMARK_SIDE = (
    "__init__.py",
    "_version.py",
    "errors.py",
    "execute/__init__.py",
    "execute/driver.py",
    "execute/driver_cpu.py",
    "sync/__init__.py",
    "sync/__main__.py",
    "sync/cli.py",
    "sync/client.py",
    "sync/coordinator.py",
    "sync/protocol.py",
)
#: Packages a benchmark's interpreter passes through to reach BENCHMARK_SIDE modules: only
#: the imports that run when they load count (``duetbench.load()`` is never called there).
PASSED_THROUGH = ("__init__.py", "execute/__init__.py")
#: The oldest Python these must parse under.
OLDEST_PYTHON = (3, 8)
#: The pytest plugin as every pytest session where duetbench is installed loads it, and
#: as each side's pytest process runs it under ``--duet-*`` (next to the user's tests,
#: maybe in an environment without duetbench's dependencies): the standard library,
#: pytest and each other; the plugin's ``__init__`` with the imports that run when it
#: loads (the duet role imports the rest of duetbench later). ``fixture.py`` loads
#: ``micro/worker.py`` by path.
IN_PYTEST = (
    "pytest_plugin/__init__.py",
    "pytest_plugin/names.py",
    "pytest_plugin/side.py",
    "pytest_plugin/fixture.py",
    "pytest_plugin/compat.py",
    "pytest_plugin/design.py",  # a run's samples at its pace: pure arithmetic
)

#: The package that alone reads /proc about processes (docs/architecture.md).
PROCESS_PACKAGE = f"{PKG}.proctools"


def _reads_process_proc(node: ast.AST) -> bool:
    """A path into /proc about processes: ``f"/proc/{pid}..."``, ``"/proc/self/..."``,
    ``"/proc/123/..."`` or ``"/proc"`` itself (listing processes)."""
    if isinstance(node, ast.JoinedStr):
        parts = node.values
        return any(
            isinstance(a, ast.Constant)
            and str(a.value).endswith("/proc/")
            and isinstance(b, ast.FormattedValue)
            for a, b in zip(parts, parts[1:], strict=False)
        )
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value.rstrip("/")
        rest = text.removeprefix("/proc/")
        return text == "/proc" or (rest != text and (rest.startswith("self") or rest[:1].isdigit()))
    return False


def proc_readers(modules: Mapping[str, tuple[ast.Module, bool]]) -> list[str]:
    """Modules outside the process package that read /proc about processes, with the line."""
    found = []
    # code a benchmark's interpreter runs cannot import the package: its reads stay its own
    standalone = {module_name(SRC, SRC / rel, PKG) for rel in (*STANDALONE, *BENCHMARK_SIDE)}
    for name, (tree, _) in modules.items():
        if _under(name, PROCESS_PACKAGE) or name in standalone:
            continue
        docs = docstring_ids(tree)
        for node in ast.walk(tree):
            if id(node) not in docs and _reads_process_proc(node):
                found.append(f"{name}:{node.lineno} reads /proc (use {PROCESS_PACKAGE}.procfs)")
    return sorted(set(found))


def _is_module(root: Path, package: str, name: str) -> bool:
    """Whether ``name`` (dotted, under ``package``) is a module or package under ``root``."""
    if not _under(name, package):
        return False
    rel = Path(*name.split(".")[1:]) if name != package else Path()
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """The statements that run when the module loads (not those inside functions)."""
    out: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If | ast.Try | ast.With):
            todo += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            todo += [s for h in getattr(node, "handlers", []) for s in h.body]
    return out


def _imported(
    root: Path, package: str, name: str, tree: ast.Module, *, loading: bool = False
) -> list[tuple[str, int]]:
    """(module, line) of every import statement of module ``name`` (at any place; with
    ``loading`` only those that run when it loads): ``from p import x`` imports p.x
    when that is a module of the package, else p."""
    is_pkg = (
        (root / Path(*name.split(".")[1:]) / "__init__.py").is_file() if name != package else True
    )
    here = name if is_pkg else name.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in _module_level(tree) if loading else ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                target = ".".join(
                    base[: len(base) - (node.level - 1)] + ([node.module] if node.module else [])
                )
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if _is_module(root, package, sub) else target, node.lineno))
    return found


def standalone_problems(root: Path, package: str) -> list[str]:
    """Every break of the rules of :data:`STANDALONE` and :data:`BENCHMARK_SIDE` under
    ``root``: a syntax Python 3.8 cannot parse; a standalone file importing anything but
    the standard library; a benchmark-side module importing anything but the standard
    library and the benchmark-side modules. Imports inside functions count."""
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    side = {module_name(root, root / rel, package) for rel in BENCHMARK_SIDE}
    found = []
    for rel in (*STANDALONE, *BENCHMARK_SIDE):
        path = root / rel
        try:
            tree = ast.parse(
                path.read_text(encoding="utf-8"), str(path), feature_version=OLDEST_PYTHON
            )
        except SyntaxError as exc:
            found.append(f"{rel}:{exc.lineno}: not Python {OLDEST_PYTHON[0]}.{OLDEST_PYTHON[1]}")
            continue
        allowed = side if rel in BENCHMARK_SIDE else set()
        name = module_name(root, path, package)
        for target, line in _imported(root, package, name, tree, loading=rel in PASSED_THROUGH):
            if target.partition(".")[0] in stdlib or target in allowed:
                continue
            what = "the standard library" + (" nor a benchmark-side module" if allowed else "")
            found.append(f"{rel}:{line} imports {target} (not {what})")
    return sorted(set(found))


def in_pytest_problems(root: Path, package: str) -> list[str]:
    """Every import of an :data:`IN_PYTEST` module that is not the standard library,
    pytest or another IN_PYTEST module (imports inside functions count, but for the
    plugin's ``__init__``: only what runs when it loads)."""
    stdlib = set(sys.stdlib_module_names) | {"__future__", "pytest", "_pytest"}
    allowed = {module_name(root, root / rel, package) for rel in IN_PYTEST}
    allowed |= {module_name(root, root / rel, package) for rel in PASSED_THROUGH}
    found = []
    for rel in IN_PYTEST:
        path = root / rel
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        name = module_name(root, path, package)
        loading = rel.endswith("__init__.py")
        for target, line in _imported(root, package, name, tree, loading=loading):
            if target.partition(".")[0] not in stdlib and target not in allowed:
                found.append(f"{rel}:{line} imports {target} (not stdlib, pytest or the plugin)")
    return sorted(set(found))


# -- the real tree -------------------------------------------------------------------


def test_code_that_runs_without_duetbench_keeps_to_the_standard_library_and_python_3_8() -> None:
    assert standalone_problems(SRC, PKG) == []


def test_the_pytest_plugin_loads_only_the_standard_library_and_pytest() -> None:
    assert in_pytest_problems(SRC, PKG) == []


def test_the_pytest_check_sees_an_import_of_duetbench(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    for rel in (*IN_PYTEST, *PASSED_THROUGH):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text((SRC / rel).read_text(encoding="utf-8"))
    (root / "options.py").write_text("")
    side = root / "pytest_plugin" / "side.py"
    side.write_text(side.read_text() + "\ndef f():\n    from .. import options\n")
    assert in_pytest_problems(root, PKG) == [
        f"pytest_plugin/side.py:{len(side.read_text().splitlines())} imports {PKG}.options "
        "(not stdlib, pytest or the plugin)"
    ]


def test_the_architecture_page_lists_the_code_that_runs_without_duetbench() -> None:
    page = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Code that runs without duetbench", 1)[1].split("\n## ", 1)[0]
    for rel in (*STANDALONE, *BENCHMARK_SIDE, *IN_PYTEST):
        assert f"`{rel}`" in section, rel


def test_only_the_process_package_reads_proc_about_processes() -> None:
    assert proc_readers(read_tree(SRC, PKG)) == []


def test_every_package_imports_only_what_its_layer_may() -> None:
    assert violations(read_tree(SRC, PKG)) == []


def test_no_command_imports_another_and_the_plugin_imports_none() -> None:
    modules = read_tree(SRC, PKG)
    assert any(_command_module(n) for n in modules)
    assert command_imports(modules) == []


def test_no_import_cycle_among_first_party_modules() -> None:
    assert cycles(read_tree(SRC, PKG)) == []


def test_no_module_imports_another_modules_private_names() -> None:
    assert private_imports(read_tree(SRC, PKG)) == []


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


@pytest.mark.parametrize(
    ("rel", "line", "found"),
    [
        ("commands/run.py", "from .compare import run", "commands.run:1 imports duetbench.commands.compare"),
        ("commands/run.py", "def f():\n    from duetbench.commands import compare",
         "commands.run:2 imports duetbench.commands.compare"),
        ("pytest_plugin/duet.py", "from ..commands._options import x",
         "pytest_plugin.duet:1 imports duetbench.commands._options"),
        ("pytest_plugin/duet.py", "def f():\n    from duetbench.commands import compare",
         "pytest_plugin.duet:2 imports duetbench.commands.compare"),
    ],
)  # fmt: skip
def test_a_command_importing_another_is_found(
    tmp_path: Path, rel: str, line: str, found: str
) -> None:
    files = dict(CLEAN)
    files["commands/_options.py"] = "import argparse\n"
    files["commands/run.py"] = "from ._options import add_threshold\n"  # a helper: allowed
    files["pytest_plugin/__init__.py"] = ""
    files["workflow/__init__.py"] = ""
    files["pytest_plugin/duet.py"] = "from ..workflow import verdicts\n"
    assert command_imports(_tree(tmp_path, files)) == []
    files[rel] = line + "\n"
    assert command_imports(_tree(tmp_path, files)) == [f"{PKG}.{found}"]


def test_a_private_name_imported_from_another_module_is_found(tmp_path: Path) -> None:
    files = dict(CLEAN)
    files["commands/_flags.py"] = "def add_repo_flag():\n    pass\n"
    files["commands/compare.py"] = "from . import _flags\nfrom ._flags import add_repo_flag\n"
    assert private_imports(_tree(tmp_path, files)) == []
    files["report/tables.py"] = "from duetbench.analysis.compare import _helper\n"
    assert private_imports(_tree(tmp_path, files)) == [
        "duetbench.report.tables:1 imports duetbench.analysis.compare._helper"
    ]


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


@pytest.mark.parametrize(
    "line",
    [
        'open(f"/proc/{pid}/stat")',
        'Path("/proc/self/cmdline").read_bytes()',
        'os.listdir("/proc")',
        'Path("/proc") / str(pid) / "stat"',
        'Path(f"/proc/{pid}/task/{tid}/children")',
    ],
)
def test_a_proc_reader_outside_the_process_package_is_found(tmp_path: Path, line: str) -> None:
    files = dict(CLEAN)
    files["execute/hang.py"] = (
        f'"""Reads ``/proc/<pid>/stat`` (a docstring is fine)."""\nx = {line}\n'
    )
    files["proctools/procfs.py"] = 'x = open(f"/proc/{pid}/stat")\n'
    found = proc_readers(_tree(tmp_path, files))
    assert found == [f"{PKG}.execute.hang:2 reads /proc (use {PROCESS_PACKAGE}.procfs)"]
    files["execute/hang.py"] = 'x = Path("/proc/cpuinfo").read_text()  # a host fact\n'
    assert proc_readers(_tree(tmp_path, files)) == []


def _standalone_tree(tmp_path: Path, **changed: str) -> Path:
    """A copy of the real standalone and benchmark-side files, with ``changed`` ones
    (key: the path with / and . as _) replaced."""
    root = tmp_path / "pkg"
    for rel in (*STANDALONE, *BENCHMARK_SIDE):
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        key = rel.replace("/", "_").replace(".", "_")
        dest.write_text(changed.get(key, (SRC / rel).read_text(encoding="utf-8")))
    for rel in ("options.py", "records.py", "execute/base.py"):  # modules off the lists
        (root / rel).write_text("")
    return root


@pytest.mark.parametrize(
    ("key", "text", "says"),
    [
        ("micro_apart_py", "import numpy\n", "micro/apart.py:1 imports numpy"),
        (
            "micro_cpuswap_py",
            "def f():\n    from duetbench import errors\n",
            "imports duetbench.errors",
        ),
        (
            "micro_discovery_py",
            "from . import calibration\n",
            "imports duetbench.micro.calibration",
        ),
        (
            "execute_driver_py",
            "def f():\n    from .base import Executor\n",
            "imports duetbench.execute.base",
        ),
        ("micro_handshake_py", "match x:\n    case 1:\n        pass\n", "not Python 3.8"),
        ("sync_client_py", "import pandas\n", "sync/client.py:1 imports pandas"),
        ("sync_protocol_py", "from ..records import RunRecord\n", "imports duetbench.records"),
        ("sync_cli_py", "from duetbench import options\n", "imports duetbench.options"),
    ],
)
def test_a_standalone_file_that_breaks_its_rule_is_found(
    tmp_path: Path, key: str, text: str, says: str
) -> None:
    assert standalone_problems(_standalone_tree(tmp_path), PKG) == []
    found = standalone_problems(_standalone_tree(tmp_path, **{key: text}), PKG)
    assert len(found) == 1 and says in found[0], found


def test_the_driver_may_import_the_handshake_it_runs(tmp_path: Path) -> None:
    late = "def f():\n    from duetbench import sync\n    from ..sync import protocol\n"
    assert standalone_problems(_standalone_tree(tmp_path, execute_driver_py=late), PKG) == []


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
