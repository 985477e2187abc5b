"""The code the demo model writes: plots, small computations, a fix, an edit, a new cell.

Every name that comes from the user's text reaches the code through `repr` (a column
called `it's` is `sales["it's"]`), and every piece of code is checked with `valid` before
the demo sends it, so what the demo asks the kernel to run always compiles.
"""

from __future__ import annotations

import ast
import difflib
import io
import keyword
import re
import tokenize

STOPWORDS = frozenset(
    "a an the this that these those each every one which what new first last my your its of in on for by to and".split()
)
_QUOTED_COLUMN = (
    re.compile(r"\bcolumns?\s+[`\"'](.+?)[`\"']", re.I | re.S),
    re.compile(r"[`\"'](.+?)[`\"']\s+columns?\b", re.I | re.S),
)
_WORD_COLUMN = (re.compile(r"\b(\w+)\s+columns?\b", re.I), re.compile(r"\bcolumns?\s+(\w+)", re.I))
_UNDEFINED = re.compile(r"NameError: name '(\w+)' is not defined")


def valid(code: str) -> bool:
    """Whether `code` compiles as a cell would (IPython's magics and `!` lines allowed)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        code = TransformerManager().transform_cell(code)
    except ImportError:
        pass
    try:
        compile(code, "<demo>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def column_in(question: str, frame: str | None = None) -> str | None:
    """The column the question names: `sales["a b"]`, `sales.units`, the `it's` column, column units."""
    if frame:
        subscript = re.search(rf"\b{re.escape(frame)}\[\s*(['\"])(.+?)\1\s*\]", question, re.S)
        if subscript:
            return subscript.group(2)
        attribute = re.search(rf"\b{re.escape(frame)}\.([A-Za-z_]\w*)\b", question)
        if attribute:
            return attribute.group(1)
    for pattern in _QUOTED_COLUMN:
        found = pattern.search(question)
        if found:
            return found.group(1)
    for pattern in _WORD_COLUMN:
        for found in pattern.finditer(question):
            word = found.group(1)
            if word.lower() not in STOPWORDS and word != frame:
                return word
    return None


def _target(frame: str, column: str | None) -> str:
    return frame if column is None else f"{frame}[{column!r}]"


def plot_code(frame: str, column: str | None) -> str:
    """A figure of a column (a histogram, or bar counts when it is not numeric) or of the frame."""
    target = _target(frame, column)
    lines = ["import matplotlib.pyplot as plt", "", f"data = {target}", "fig, ax = plt.subplots()"]
    if column is None:
        lines.append(f"data.plot(ax=ax, title={target!r})")
    else:
        lines += [
            'if data.dtype.kind in "biuf":',
            f'    data.plot(kind="hist", bins=20, ax=ax, title={target!r})',
            "else:",
            f'    data.value_counts().plot(kind="bar", ax=ax, title={target!r})',
        ]
    return "\n".join(lines)


def compute_code(frame: str, column: str | None, question: str) -> str:
    """A small computation the question asks for: missing values, a mean, a sum, counts."""
    low = question.lower()
    target = _target(frame, column)
    if any(w in low for w in ("missing", "null", "nan", "empty")):
        return f"{target}.isna().sum()"
    if any(w in low for w in ("mean", "average")):
        return f"{target}.mean(numeric_only=True)" if column is None else f"{target}.mean()"
    if any(w in low for w in ("sum", "total")):
        return f"{target}.sum(numeric_only=True)" if column is None else f"{target}.sum()"
    if "count" in low or "how many" in low:
        return f"len({target})" if column is None else f"{target}.value_counts()"
    return f"{target}.describe()"


def insert_code(frame: str | None, column: str | None, by: str | None) -> str:
    """A new cell for the user to run: a group-by when the question names one, else a summary."""
    if frame is None:
        return "# A new cell proposed by the demo model\nprint('Hello from the agent')"
    if by is not None and column is not None:
        return f"{frame}.groupby({by!r})[{column!r}].sum()"
    return f"{_target(frame, column)}.describe()"


def assigned_names(source: str) -> list[str]:
    """The names a cell assigns (its definitions), in order; none when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names:
            names.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name not in names:
            names.append(node.name)
    return names


def _renamed(source: str, old: str, new: str) -> str | None:
    """`source` with the name `old` replaced by `new` where it is a name (not in strings)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    lines = source.splitlines(keepends=True)
    for tok in reversed(tokens):
        if tok.type == tokenize.NAME and tok.string == old and tok.start[0] == tok.end[0]:
            row, col = tok.start[0] - 1, tok.start[1]
            lines[row] = lines[row][:col] + new + lines[row][col + len(old) :]
    return "".join(lines)


def commented_out(source: str, why: str) -> str:
    """The cell kept as comments (when nothing that compiles can be offered), with why on top."""
    body = "\n".join(f"# {line}" if line else "#" for line in source.splitlines())
    return f"# {why}\n{body}"


def fix_source(source: str, error: str, known: list[str]) -> tuple[str, str]:
    """The corrected cell and what was changed. A misspelt name becomes the closest known name;
    an unknown one is defined as a placeholder to fill in; other errors are marked, not guessed at."""
    missing = _UNDEFINED.search(error)
    if missing is not None:
        name = missing.group(1)
        candidates = [n for n in dict.fromkeys(known + assigned_names(source)) if n != name]
        close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
        if close:
            fixed = _renamed(source, name, close[0])
            if fixed is not None and fixed != source and valid(fixed):
                return fixed, f"`{name}` is not defined: it looks like a typo for `{close[0]}`, so I renamed it."
        if name.isidentifier() and not keyword.iskeyword(name):
            fixed = f"{name} = None  # TODO: give {name} its value (the demo model cannot guess it)\n{source}"
            if valid(fixed):
                return fixed, (
                    f"Nothing in the notebook defines `{name}`, so I added a placeholder for it "
                    "at the top of the cell: set its real value before you run it."
                )
    first = error.splitlines()[0] if error else "the error"
    marked = f"# TODO: {first} (the demo model only fixes misspelt or missing names)\n{source}"
    if valid(marked):
        return marked, f"I cannot fix `{first}` by script, so I marked the cell with a TODO."
    return commented_out(source, f"This cell does not compile ({first}); fix it and remove the '#'s."), (
        "The cell does not compile, so I turned it into comments for you to fix."
    )


def with_comment(source: str) -> str:
    """The cell with a comment on top that says what it defines (a harmless edit to show the diff)."""
    names = assigned_names(source)
    what = f"Defines {', '.join(names[:6])}." if names else "Run by the agent's quickstart."
    comment = f"# {what} (comment added by the agent)"
    return source if source.startswith(comment) else f"{comment}\n{source}"


__all__ = [
    "STOPWORDS",
    "assigned_names",
    "column_in",
    "commented_out",
    "compute_code",
    "fix_source",
    "insert_code",
    "plot_code",
    "valid",
    "with_comment",
]
