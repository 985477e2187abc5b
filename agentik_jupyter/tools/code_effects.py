"""What a piece of Python may change, read from its AST before it runs (for rewind's checkpoints).

Three things: the names it binds, rebinds or deletes in the user's namespace; the names whose
objects it may change in place (a subscript or attribute assigned, `del x[...]`, a mutating
method of a list, dict, set or array, `inplace=True`, pandas' and numpy's setters such as
`.loc`); and what it does outside the kernel (files written, databases, the network, shell
commands, code built at run time with exec or eval), which no checkpoint can take back. It reads
only what the code names, with two helps: a name the code makes an alias of another (`a = b;
a.append(1)`) changes that other one too, and the names passed to a function (`clean(df)`) are
recorded in `passed`, so a checkpoint can count them as changed when the function is the user's own. An object reached another way (held
in a list, a global a function changes) is not seen.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# Methods that change their object in place (lists, dicts, sets, numpy arrays, pandas objects).
MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "clear",
        "sort",
        "reverse",
        "update",
        "setdefault",
        "popitem",
        "add",
        "discard",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
        "fill",
        "resize",
        "put",
        "itemset",
        "setflags",
        "set_axis",
        "rename_axis",
        "__setitem__",
        "__delitem__",
    }
)
# `df.to_csv(path)`, `fig.savefig(path)`, `Path(p).write_text(...)`: the first argument is where.
FILE_WRITERS = frozenset(
    {
        "to_csv",
        "to_parquet",
        "to_excel",
        "to_json",
        "to_pickle",
        "to_feather",
        "to_hdf",
        "to_stata",
        "to_orc",
        "to_html",
        "to_markdown",
        "to_latex",
        "to_xml",
        "to_netcdf",
        "to_zarr",
        "savefig",
        "savetxt",
        "save",
        "savez",
        "savez_compressed",
        "tofile",
        "dump",
        "write_text",
        "write_bytes",
        "write_csv",
        "write_parquet",
        "write_json",
        "write_ipc",
        "sink_parquet",
        "sink_csv",
        "unlink",
        "rmdir",
        "rmtree",
        "mkdir",
        "makedirs",
        "touch",
        "rename",
        "move",
        "copyfile",
        "copy2",
        "copytree",
        "chmod",
    }
)
DATABASE_CALLS = frozenset({"to_sql", "execute", "executemany", "executescript", "commit", "sql"})
NETWORK_MODULES = frozenset(
    {"requests", "httpx", "urllib", "urllib3", "socket", "http", "aiohttp", "smtplib", "ftplib", "boto3", "paramiko"}
)
SHELL_CALLS = frozenset({"system", "getoutput", "run", "Popen", "call", "check_call", "check_output"})
SHELL_MODULES = frozenset({"subprocess", "os"})
# Code built at run time: what it does can't be read before it runs.
DYNAMIC_CALLS = frozenset({"exec", "eval", "compile", "__import__"})
# Names the IPython transform brings in (`get_ipython().system(...)` for `!cmd`).
IPYTHON_SHELL = frozenset({"system", "getoutput", "run_line_magic", "run_cell_magic"})
# Writers that return the text instead when they are given no path.
_PATH_OPTIONAL = frozenset(
    {"to_csv", "to_json", "to_html", "to_markdown", "to_latex", "to_xml", "to_excel", "to_parquet", "to_pickle"}
)
_WRITE_MODES = set("wax+")


@dataclass
class Effects:
    """What `analyze` found: names bound, names changed in place, and effects outside the kernel."""

    bound: set[str] = field(default_factory=set)
    mutated: set[str] = field(default_factory=set)
    outside: list[str] = field(default_factory=list)
    passed: dict[str, set[str]] = field(default_factory=dict)  # function name -> the names given to it

    def note(self, text: str) -> None:
        if text not in self.outside:
            self.outside.append(text)


def root_name(node: ast.AST) -> str | None:
    """`df` for `df.loc[0, 'a']`, `df['x'].values`, `df.a.b`; None when the chain does not start at a name."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def _dotted(node: ast.AST) -> str:
    """`pd.DataFrame.to_csv` as text, for naming a call on the card."""
    try:
        return ast.unparse(node)
    except Exception:
        return "a call"


def _first_literal(call: ast.Call, keywords: tuple[str, ...] = ()) -> str | None:
    values = [*call.args[:1], *(k.value for k in call.keywords if k.arg in keywords)]
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value
        if isinstance(value, ast.JoinedStr):
            return _dotted(value)
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.effects = Effects()
        self.depth = 0  # inside a function or class body: its bindings are local (except `global`)
        self.aliases: dict[str, set[str]] = {}  # `a = b` at the top: a -> {b}

    # ---- bindings ----

    def bind_target(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if self.depth == 0:
                self.effects.bound.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.bind_target(element)
        elif isinstance(target, ast.Starred):
            self.bind_target(target.value)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            name = root_name(target)
            if name is not None:
                self.effects.mutated.add(name)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.bind_target(target)
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Name) and self.depth == 0:
                self.aliases.setdefault(target.id, set()).add(node.value.id)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None or not isinstance(node.target, ast.Name):
            self.bind_target(node.target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.bind_target(node.target)
        if isinstance(node.target, ast.Name) and self.depth == 0:
            self.effects.mutated.add(node.target.id)  # `items += [1]` and `arr *= 2` change the object itself
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self.bind_target(target)
        self.generic_visit(node)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.bind_target(node.target)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            if item.optional_vars is not None:
                self.bind_target(item.optional_vars)
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.bind_target(node.target)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name and self.depth == 0:
            self.effects.bound.add(node.name)
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                self.effects.note("binds the names of `from … import *`")
            elif self.depth == 0:
                self.effects.bound.add(alias.asname or alias.name.split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_Global(self, node: ast.Global) -> None:
        self.effects.bound.update(node.names)

    def _scope(self, node: ast.AST, name: str | None) -> None:
        if name is not None and self.depth == 0:
            self.effects.bound.add(name)
        for decorator in getattr(node, "decorator_list", []):
            self.visit(decorator)
        self.depth += 1
        for child in ast.iter_child_nodes(node):
            if child not in getattr(node, "decorator_list", []):
                self.visit(child)
        self.depth -= 1

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._scope(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scope(node, node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._scope(node, None)

    def _comprehension(self, node: ast.AST) -> None:
        self._scope(node, None)  # its targets do not leak (a walrus inside still binds: Python 3.8+)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name and self.depth == 0:
            self.effects.bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name and self.depth == 0:
            self.effects.bound.add(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest and self.depth == 0:
            self.effects.bound.add(node.rest)
        self.generic_visit(node)

    # ---- calls ----

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        inplace = any(
            k.arg == "inplace" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
            for k in node.keywords
        )
        if isinstance(func, ast.Attribute):
            owner = root_name(func.value)
            if owner is not None and (func.attr in MUTATING_METHODS or inplace):
                self.effects.mutated.add(owner)
            self._outside(node, func.attr, owner)
        elif isinstance(func, ast.Name):
            self._outside(node, func.id, None)
            names = {a.id for a in node.args if isinstance(a, ast.Name)}
            names |= {k.value.id for k in node.keywords if isinstance(k.value, ast.Name)}
            if names:
                self.effects.passed.setdefault(func.id, set()).update(names)
        self.generic_visit(node)

    def _outside(self, call: ast.Call, name: str, owner: str | None) -> None:
        if name == "open":
            mode = (
                call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
            )
            if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and not (_WRITE_MODES & set(mode.value)):
                return
            if mode is None:
                return  # open(path) reads
            where = _first_literal(call, ("file",))
            self.effects.note(f"writes to {where}" if where else f"writes a file ({_dotted(call.func)}(…))")
        elif name in FILE_WRITERS:
            if (
                name in _PATH_OPTIONAL
                and not call.args
                and not any(k.arg in ("path_or_buf", "path", "excel_writer", "buf") for k in call.keywords)
            ):
                return  # `df.to_csv()` returns the text
            if name == "save" and owner not in ("np", "numpy", "joblib", "torch"):
                if owner is None:
                    return
            where = _first_literal(call, ("path", "path_or_buf", "fname", "file", "excel_writer"))
            self.effects.note(f"writes to {where}" if where else f"writes files ({_dotted(call.func)}(…))")
        elif name in DATABASE_CALLS and owner is not None:
            self.effects.note(f"changes a database ({_dotted(call.func)}(…))")
        elif owner in NETWORK_MODULES or name in ("urlopen", "urlretrieve"):
            self.effects.note(f"uses the network ({_dotted(call.func)}(…))")
        elif (owner in SHELL_MODULES and name in SHELL_CALLS) or (owner == "get_ipython" and name in IPYTHON_SHELL):
            self.effects.note(f"runs shell commands or magics ({_dotted(call.func)}(…))")
        elif name in DYNAMIC_CALLS and owner is None:
            self.effects.note(f"runs code built at run time ({name}(…)), which can't be read before it runs")
        elif name == "set_next_input":
            self.effects.note("adds a cell to the notebook (set_next_input), which rewind does not remove")
        elif name == "chdir":
            self.effects.note(f"changes the working directory ({_dotted(call.func)}(…))")


def analyze(source: str) -> Effects:
    """The effects of `source` (already through IPython's transform); a syntax error finds none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return Effects()
    visitor = _Visitor()
    visitor.visit(tree)
    effects = visitor.effects
    todo = [name for name in effects.mutated if name in visitor.aliases]
    while todo:  # `a = b; a['x'] = 0` changes b too (and what b aliases)
        for origin in visitor.aliases.get(todo.pop(), ()):
            if origin not in effects.mutated:
                effects.mutated.add(origin)
                todo.append(origin)
    return effects
