"""The package's one-way layers, read from its imports: no cycle, no import upward.

A lower layer never imports a higher one, and packages on one layer don't import each other,
so a reader can take the house in from the bottom. Imports inside functions count as well: a
lazy import is for load time only, never a way around this check. Imports under
`if TYPE_CHECKING:` are annotations only and don't count. CONTRIBUTING.md draws the same map.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "agentik_jupyter"

# Bottom to top. Names on one line are one layer: they may not import each other, with the
# exception of the foundation, whose few modules lean on one another (errors masks with security).
LAYERS: list[tuple[str, ...]] = [
    ("_version", "types", "ids", "errors", "security"),
    ("providers", "persistence", "engines"),
    ("tools",),
    ("core", "mcp"),
    ("notebook",),
    ("widgets",),
    ("kernel", "server"),
    ("testing", "__init__"),
]
FOUNDATION = LAYERS[0]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.ImportFrom | ast.Import]:
    """Every import in the module, however nested, leaving out `if TYPE_CHECKING:` blocks."""
    found: list[ast.ImportFrom | ast.Import] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[tuple[str, int]]]:
    """module -> {(imported internal module, line)}; `from pkg import name` names the submodule if it is one."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for name, path in modules.items():
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                assert node.level == 0, f"{name}:{node.lineno} uses a relative import; write it absolute"
                base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name and target.split(".")[0] == PACKAGE.name:
                    graph[name].add((target, node.lineno))
    return graph


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _layer(top: str) -> int:
    for index, names in enumerate(LAYERS):
        if top.removesuffix(".py") in names:
            return index
    raise AssertionError(f"{top!r} is in no layer: add it to LAYERS and to CONTRIBUTING.md's map")


def test_every_package_has_a_layer() -> None:
    for path in PACKAGE.iterdir():
        if path.name.startswith((".", "__pycache__")) or path.name == "labextension":
            continue
        if path.is_dir() or path.suffix == ".py":
            _layer(path.stem if path.suffix == ".py" else path.name)


def test_no_import_goes_up_or_sideways() -> None:
    wrong = []
    for module, targets in import_graph().items():
        here = _layer(_top(module))
        for target, line in sorted(targets):
            if _top(target) == _top(module):
                continue
            there = _layer(_top(target))
            if there > here or (there == here and LAYERS[here] != FOUNDATION):
                wrong.append(f"{module}:{line} imports {target} ({LAYERS[there]} is not below {LAYERS[here]})")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle() -> None:
    graph = {module: {target for target, _ in targets} for module, targets in import_graph().items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles (a cycle means the file structure is wrong):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def _lazy_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports of our own modules inside functions (module-level `if`/`try` blocks are the top)."""
    top: set[int] = set()
    for statement in tree.body:
        nodes = ast.walk(statement) if isinstance(statement, (ast.If, ast.Try)) else [statement]
        top.update(id(node) for node in nodes)
    return [
        node
        for node in _imports(tree)
        if id(node) not in top
        and ((node.module or "") if isinstance(node, ast.ImportFrom) else node.names[0].name).startswith(PACKAGE.name)
    ]


def test_a_lazy_import_says_it_is_for_load_time() -> None:
    """An import inside a function is for load time only, and a comment just above it says so."""
    silent = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in _lazy_imports(ast.parse(source)):
            above = lines[max(0, node.lineno - 4) : node.lineno]
            if not any("load time" in line for line in above):
                silent.append(f"{_module_name(path)}:{node.lineno}")
    assert not silent, "imports inside functions without a '# load time: …' comment (hoist them):\n" + "\n".join(silent)


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert _cycles(graph) == expected
