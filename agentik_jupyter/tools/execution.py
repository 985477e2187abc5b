"""Run model-written Python in the kernel's namespace, on the kernel's own thread.

`shell.run_cell` is avoided on purpose: it would bump the execution count and
write into the output of whichever cell is current. Instead the code is
transformed (so `%magics` work), parsed so a final expression yields a value,
compiled with IPython's compiler (tracebacks show the source lines) and run
with its own stdout, stderr and `display()` captured (output_capture.py: only
this execution's, not other tasks' that print while it awaits). It runs on the
event loop's thread because user code and matplotlib expect the main thread;
top-level `await` is supported. A KeyboardInterrupt (the kernel's Interrupt)
in the code propagates: it stops the turn, it is not an error for the model. The
orchestrator runs every tool inside `interruptible()`, so the Interrupt lands in
this code even while a `%%agent --wait` cell holds ipykernel's own handler.
"""

from __future__ import annotations

import ast
import html
import inspect
import sys
import traceback
from typing import TYPE_CHECKING, Any

from agentik_jupyter.errors import CodeExecutionError
from agentik_jupyter.tools.namespace import clip, short_repr, type_name
from agentik_jupyter.tools.output_capture import Capture, capturing
from agentik_jupyter.tools.vision import describe_figure, figure_png, images_for_model
from agentik_jupyter.types import ToolOutput

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

MAX_STREAM_CHARS = 8_000
MAX_RESULT_CHARS = 4_000
MAX_TRACEBACK_FRAMES = 8
MAX_TRACEBACK_CHARS = 4_000


async def run_in_shell(shell: InteractiveShell, code: str) -> ToolOutput:
    """Run `code` in `shell.user_ns`; return captured output, the final value and new figures."""
    source = shell.transform_cell(code)
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        raise CodeExecutionError(_syntax_message(exc)) from None
    final: ast.expr | None = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        final = tree.body.pop().value
    filename = shell.compile.cache(source, 0, raw_code=code)
    flags = shell.compile.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    body = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    expr = compile(ast.Expression(final), filename, "eval", flags=flags, dont_inherit=True) if final else None

    figures_before = _open_figures()
    value: Any = None
    error: BaseException | None = None
    try:
        with capturing(shell) as capture:
            try:
                await _run(body, shell)
                if expr is not None:
                    value = await _run(expr, shell)
            except (Exception, SystemExit) as exc:
                error = exc
    finally:
        figures = _take_new_figures(figures_before)
    if error is not None:
        raise CodeExecutionError(_error_message(error, capture)) from None
    return _output(shell, value, capture, figures)


async def _run(code: Any, shell: InteractiveShell) -> Any:
    """Evaluate a compiled block; await it when it was compiled with top-level `await`."""
    result = eval(code, shell.user_global_ns, shell.user_ns)
    if code.co_flags & inspect.CO_COROUTINE:
        result = await result
    return result


def _syntax_message(exc: SyntaxError) -> str:
    where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
    text = f"\n    {exc.text.rstrip()}" if exc.text else ""
    return f"SyntaxError: {exc.msg} ({where}){text}"


def _error_message(error: BaseException, capture: Capture) -> str:
    """`Type: message`, then a traceback cut to the user's frames, then what was printed."""
    te = traceback.TracebackException.from_exception(error, compact=True)
    stack = [f for f in te.stack if f.filename != __file__]
    te.stack = traceback.StackSummary.from_list(stack[-MAX_TRACEBACK_FRAMES:])
    summary = "".join(te.format_exception_only()).strip()
    tb = clip("".join(te.format()).rstrip(), MAX_TRACEBACK_CHARS)
    parts = [f"the code raised {summary}", tb]
    out, err = capture.stdout.getvalue(), capture.stderr.getvalue()
    if out:
        parts.append("stdout before the error:\n" + clip(out, MAX_STREAM_CHARS // 2))
    if err:
        parts.append("stderr before the error:\n" + clip(err, MAX_STREAM_CHARS // 2))
    return "\n\n".join(parts)


# ---- figures ----


def _pyplot() -> Any | None:
    return sys.modules.get("matplotlib.pyplot")


def _open_figures() -> set[int]:
    plt = _pyplot()
    return set(plt.get_fignums()) if plt is not None else set()


def _take_new_figures(before: set[int]) -> list[tuple[str, str]]:
    """PNG (base64) and a one-line description of each figure the code opened; then close them."""
    plt = _pyplot()
    if plt is None:
        return []
    taken: list[tuple[str, str]] = []
    for num in plt.get_fignums():
        if num in before:
            continue
        fig = _figure(num)
        if fig is None:
            continue
        try:
            taken.append((figure_png(fig), describe_figure(fig, f"Figure {num}")))
        finally:
            plt.close(fig)
    return taken


def _figure(num: int) -> Any | None:
    from matplotlib._pylab_helpers import Gcf

    manager = Gcf.get_fig_manager(num)
    return manager.canvas.figure if manager is not None else None


# ---- the answer ----


def _output(shell: InteractiveShell, value: Any, capture: Capture, figures: list[tuple[str, str]]) -> ToolOutput:
    """Bounded text for the model; a MIME bundle (HTML, first PNG) for the card."""
    out, err = capture.stdout.getvalue(), capture.stderr.getvalue()
    text: list[str] = []
    rich: list[str] = []
    if out:
        text.append("stdout:\n" + clip(out.rstrip(), MAX_STREAM_CHARS))
        rich.append(f"<pre>{html.escape(clip(out, MAX_STREAM_CHARS))}</pre>")
    if err:
        text.append("stderr:\n" + clip(err.rstrip(), MAX_STREAM_CHARS // 2))
        rich.append(f'<pre style="color:#b00">{html.escape(clip(err, MAX_STREAM_CHARS // 2))}</pre>')
    images = [png for png, _ in figures]
    for data in capture.displays:
        text.append("displayed: " + clip(str(data.get("text/plain", "<rich output>")), 500))
        if "image/png" in data:
            images.append(str(data["image/png"]))
        elif "text/html" in data:
            rich.append(str(data["text/html"]))
    if value is not None:
        plain, rich_value = _format_value(shell, value)
        text.append(f"result ({type_name(value)}):\n" + plain)
        rich.append(rich_value)
    text.extend(description for _, description in figures)
    if not text:
        text.append("(ran without output; the code returned no value)")
    rich.extend(f'<img src="data:image/png;base64,{png}"/>' for png in images)
    display: dict[str, Any] = {"text/plain": "\n\n".join(text), "text/html": "\n".join(rich)}
    if images:
        display["image/png"] = images[0]
    return ToolOutput(text="\n\n".join(text), display=display, images=images_for_model(images))


def _format_value(shell: InteractiveShell, value: Any) -> tuple[str, str]:
    """The value as the user would see it (IPython's formatters bound long sequences), clipped."""
    formatter = shell.display_formatter
    try:
        data, _ = formatter.format(value) if formatter is not None else ({}, {})
    except Exception:
        data = {}
    plain = clip(str(data.get("text/plain") or short_repr(value, MAX_RESULT_CHARS)), MAX_RESULT_CHARS)
    if "text/html" in data:
        return plain, str(data["text/html"])
    if "image/png" in data:
        return plain, f'<img src="data:image/png;base64,{data["image/png"]}"/>'
    return plain, f"<pre>{html.escape(plain)}</pre>"
