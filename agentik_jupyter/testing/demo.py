"""An offline demo model: a FakeLLMServer with a small rule-based "brain".

It lets the quickstart run with no API key (and deterministically, for nbval). It is not
an LLM but a script that speaks the real wire format: it reads the user's question (never
the text the agent adds for the model), plans the tool calls a model would make for it
(read the notebook before an edit, read the failed cell before proposing its fix), and
answers from the results, saying so honestly when a tool failed or was denied. The code it
writes is checked to compile (demo_code.py); what it understands is in `MENU`.
"""

from __future__ import annotations

import dataclasses
import os
import re

from agentik_jupyter.core.compaction import SUMMARY_HEADING
from agentik_jupyter.core.transport import KEY_IN_KERNEL, key_location, provider_configured
from agentik_jupyter.errors import ConfigurationError
from agentik_jupyter.testing.demo_code import (
    STOPWORDS,
    column_in,
    compute_code,
    fix_source,
    insert_code,
    plot_code,
    valid,
    with_comment,
)
from agentik_jupyter.testing.demo_images import received
from agentik_jupyter.testing.demo_notebook import (
    cell_source,
    delete_target,
    deletion_sentence,
    edit_target,
    fix_details,
    notebook_summary,
    outcome_sentence,
)
from agentik_jupyter.testing.demo_reading import Asked, Step, read_request
from agentik_jupyter.testing.fake_server import FakeLLMServer
from agentik_jupyter.testing.replies import RecordedRequest, Reply

DEMO_MODEL = "agentik-demo"
DEMO_KEY = "demo-key-not-secret"
_server: FakeLLMServer | None = None

LONG_ANSWER = " ".join(
    f"Paragraph {i}: a long answer streams in word by word, so you can press Stop at any time." for i in range(1, 201)
)
MENU = (
    "I am the offline demo model: a script that speaks the real wire format, not an LLM, so I "
    "understand a few kinds of question. Try:\n\n"
    "- *Which variables do I have?* (`list_variables`)\n"
    "- *Describe the sales DataFrame.* (`describe_dataframe`), *Inspect rng.* (`inspect_variable`)\n"
    "- *How many prices are missing in sales?* and *Plot the units column of sales.* "
    "(`run_code`: you approve the code first)\n"
    "- *Insert a cell that sums the units column by region.* (`insert_cell`)\n"
    "- *Add a comment to the cell that makes sales.* (`read_notebook`, then `edit_cell`: a diff on the cell)\n"
    "- *Read my notebook.* (`read_notebook`), *Which cells did I run last?* (`get_cell_history`)\n"
    "- `@sales` in a question attaches its description; after an error, `%agent fix` proposes the fix\n"
    "- *Write a long essay* and press **Stop**; ask about *sessions* or *export* for the commands"
)
MAX_STEPS = 4
BUILTIN = frozenset(
    (
        "list_variables inspect_variable describe_dataframe get_cell_history run_code insert_cell "
        "read_notebook edit_cell delete_cell run_cells"
    ).split()
)
_WORDS = {
    "delete": ("delete", "remove"),
    "plot": ("plot", "chart", "histogram", "graph", "visuali", "draw"),
    "edit": ("edit", "change", "rewrite", "comment", "document", "tidy"),
    "insert": ("insert", "new cell", "add a cell", "write a cell", "give me code", "write code"),
    "compute": (
        "how many",
        "missing",
        "compute",
        "calculate",
        "average",
        "mean",
        "total",
        "count",
        "run code",
        "run some code",
    ),
    "describe": ("describe", "summar", "profile", "dataframe", "look at"),
    "history": ("history", "cells i ran", "did i run", "run last", "ran last"),
}


def _has(low: str, kind: str) -> bool:
    return any(w in low for w in _WORDS[kind])


def _named(asked: Asked, text: str) -> str | None:
    """The variable the text names (a frame first), if any."""
    named = [name for name, _ in asked.variables if re.search(rf"(?<![\w.]){re.escape(name)}\b", text)]
    frames = [n for n in named if n in asked.frames()]
    return next(iter(frames or named), None)


def _frame(asked: Asked, text: str) -> str | None:
    named = _named(asked, text)
    if named in asked.frames():
        return named
    return asked.frames()[0] if asked.frames() else None


def _quote(text: str, lines: int | None = 12) -> str:
    """The result's lines as a code block; cut after `lines` with a note that says so."""
    every = [line for line in text.splitlines() if line.strip()]
    kept = every if lines is None else every[:lines]
    note = f"\n\n(The first {len(kept)} of its {len(every)} lines; the tool card above has them all.)"
    return "\n".join(f"    {line}" for line in kept) + (note if len(kept) < len(every) else "")


def _call(name: str, args: dict[str, object], text: str | None = None) -> Reply:
    return Reply.tool_calls([{"name": name, "args": args}], text=text)


def _after_failure(step: Step) -> Reply:
    """Say what happened, plainly: a denial is the user's choice, an error is a failure."""
    first = step.result.removeprefix("Error: ").splitlines()[0] if step.result else "no result"
    if step.denied:
        return Reply.text(
            f"You did not approve `{step.name}`, so I did not run it. "
            "Tell me if you want something else, or run the code yourself."
        )
    if step.name == "run_code":
        return Reply.text(
            f"The code failed: {first}\n\nSo I have no result to show. Check the names "
            "in your question (the column, the variable) and ask again."
        )
    return Reply.text(
        f"`{step.name}` failed: {first}\n\nI have no result from it, so I cannot answer "
        "that part; ask again with what the error names."
    )


def _summary(step: Step) -> Reply:
    body = _quote(step.result)
    if step.name == "run_code":
        figure = " The figure is in the tool card above." if step.images or "Figure" in step.result else ""
        return Reply.text(f"I ran the code.{figure} What it returned:\n\n{body}\n\nAsk a follow-up to dig deeper.")
    if step.name == "insert_cell":
        return Reply.text("I proposed a new cell below this one: read it, then run it yourself when you are ready.")
    if step.name == "read_notebook":
        return Reply.text(f"{notebook_summary(step.result)}\n\nAsk about any cell to dig deeper.")
    if step.name == "describe_dataframe":  # (bounded by the tool: its profile and first rows, whole)
        body = _quote(step.result, None)
    return Reply.text(f"Here is what `{step.name}` found:\n\n{body}\n\nAsk a follow-up to dig deeper.")


def _fix(asked: Asked) -> Reply:
    """Read the failed cell, then propose its corrected source with edit_cell (or insert_cell
    when the frontend does not say which cell failed); then say what became of the proposal."""
    cell_id, source, error = fix_details(asked.attached, asked.question)
    known = [name for name, _ in asked.variables]
    last = asked.last()
    if last is not None and last.name in ("edit_cell", "insert_cell"):
        return Reply.text(outcome_sentence(last, fix=True))
    if cell_id and "read_notebook" in asked.offered and "edit_cell" in asked.offered:
        if last is None:
            return _call("read_notebook", {"cell_id": cell_id}, "Let me read the cell that failed. ")
        if last.name == "read_notebook" and not last.failed:
            current = cell_source(last.result, cell_id)
            if current is not None:
                fixed, why = fix_source(current, error, known)
                return _call("edit_cell", {"cell_id": cell_id, "new_source": fixed}, f"{why} ")
    fixed, why = fix_source(source, error, known)
    if "insert_cell" in asked.offered:
        return _call("insert_cell", {"source": fixed}, f"{why} ")
    return Reply.text(f"{why}\n\n```python\n{fixed}\n```")


def _edit(asked: Asked) -> Reply:
    """Read the notebook, then the cell to change, then propose the change as a diff on it."""
    reads = [s for s in asked.steps if s.name == "read_notebook" and not s.failed]
    last = asked.last()
    if last is not None and last.name == "edit_cell":
        return Reply.text(outcome_sentence(last, fix=False))
    if not reads:
        return _call("read_notebook", {}, "Let me read the notebook first. ")
    target = edit_target(reads[0].result, asked.question, [n for n, _ in asked.variables])
    if target is None:
        return Reply.text("I found no code cell to change in the notebook.")
    if len(reads) == 1:
        return _call("read_notebook", {"cell_id": target}, f"Cell `{target}` it is; reading it in full. ")
    current = cell_source(reads[-1].result, target)
    if current is None:
        return Reply.text(f"I could not read cell `{target}` in full.")
    return _call(
        "edit_cell",
        {"cell_id": target, "new_source": with_comment(current)},
        "I propose a comment on top of the cell that says what it defines. ",
    )


def _delete(asked: Asked) -> Reply:
    """Read the notebook, then propose deleting the cell the question names (the user accepts or
    rejects it on the cell); a question that names no one cell deletes nothing."""
    reads = [s for s in asked.steps if s.name == "read_notebook" and not s.failed]
    last = asked.last()
    if last is not None and last.name == "delete_cell":
        return Reply.text(deletion_sentence(last))
    if not reads:
        return _call("read_notebook", {}, "Let me read the notebook first. ")
    target, which = delete_target(reads[-1].result, asked.question)
    if target is None:
        return Reply.text(f"I deleted nothing: {which}.")
    return _call("delete_cell", {"cell_id": target}, f"I propose deleting {which} (`{target}`). ")


def _deleting(asked: Asked) -> bool:
    low = asked.question.lower()
    return _has(low, "delete") and "cell" in low and {"read_notebook", "delete_cell"} <= asked.offered


def _mentioned(asked: Asked) -> Reply:
    """An @mention attached the data: answer from it, no tool call needed."""
    mentioned = set(re.findall(r"@(\w+)", asked.question.lower()))
    words = {w for w in re.findall(r"[A-Za-z_]\w+", asked.question.lower()) if len(w) > 2} - mentioned
    lines = [line for line in asked.attached.splitlines()[1:] if line.strip()]
    relevant = [
        line for line in lines if words & set(re.findall(r"[A-Za-z_]\w+", line.lower())) and not line.startswith("###")
    ]
    body = "\n".join(f"    {line.strip()}" for line in (relevant or lines)[:8])
    return Reply.text(
        f"From the description your @mention attached (no tool call needed):\n\n{body}\n\n"
        "Ask me to plot it if you want to see the spread."
    )


def _user_tool(asked: Asked) -> Reply | None:
    """`use TOOL key=value` (exactly these arguments), or a question whose words name one of the
    user's own tools (`region_share`: "What share ... the north region ...?")."""
    wanted = re.search(r"\buse (\w+)", asked.question)
    if wanted and wanted.group(1) in asked.offered:
        args = {k: _value(v) for k, v in re.findall(r"(\w+)=(\S+)", asked.question)}
        return _call(wanted.group(1), args)
    words = set(re.findall(r"[a-z0-9]+", asked.question.lower()))
    for name, schema in asked.tools.items():
        parts = [p for p in name.lower().split("_") if p]
        if name in BUILTIN or len(parts) < 2 or not set(parts) <= words:
            continue
        args = {}
        for param, spec in (schema.get("properties") or {}).items():
            value = _argument(asked.question, param, spec if isinstance(spec, dict) else {})
            if value is not None:
                args[param] = value
        return _call(name, args, f"Your tool `{name}` answers that. ")
    return None


def _argument(question: str, param: str, spec: dict[str, object]) -> object:
    """A value for `param` from the question: a number for a numeric parameter, else the word
    next to the parameter's name ("the north region", "region north")."""
    if spec.get("type") in ("integer", "number"):
        number = re.search(r"-?\d+(?:\.\d+)?", question)
        return _value(number.group(0)) if number else None
    for pattern in (rf"\b(\w+)\s+{re.escape(param)}\b", rf"\b{re.escape(param)}\s*[=:]?\s*['\"]?(\w+)"):
        for found in re.finditer(pattern, question, re.I):
            if found.group(1).lower() not in STOPWORDS:
                return found.group(1)
    return None


def _value(text: str) -> object:
    """`key=3` gives an int, `key=2.5` a float, anything else the string."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip("'\"")


def _first_step(asked: Asked) -> Reply:
    question, low = asked.question, asked.question.lower()
    offered = asked.offered
    frame = _frame(asked, question)
    column = column_in(question, frame)
    if _has(low, "plot") and frame is not None and "run_code" in offered:
        return _call("run_code", {"code": plot_code(frame, column)}, "Let me plot it (you approve the code first). ")
    if _deleting(asked):
        return _delete(asked)
    if _has(low, "edit") and "cell" in low and "read_notebook" in offered and "edit_cell" in offered:
        return _edit(asked)
    if _has(low, "insert") and "insert_cell" in offered:
        by = re.search(r"\bby (\w+)", question)
        code = insert_code(frame, column, by.group(1) if by else None)
        return _call("insert_cell", {"source": code}, "I will put that in a new cell for you to run. ")
    if asked.attached.startswith("Attached by @mention") and not _has(low, "compute"):
        return _mentioned(asked)
    if _has(low, "compute") and frame is not None and "run_code" in offered:
        code = compute_code(frame, column, question)
        return _call("run_code", {"code": code}, "Let me compute that (you approve the code first). ")
    if "notebook" in low and "read_notebook" in offered and not any(w in low for w in ("export", "session")):
        return _call("read_notebook", {})
    if any(w in low for w in ("long", "essay", "story")):
        return Reply.text(LONG_ANSWER)
    if _has(low, "describe") and frame is not None:
        return _call("describe_dataframe", {"name": _named(asked, question) or frame})
    named = _named(asked, question)
    if named is not None and any(w in low for w in ("inspect", "what is", "show me", "look")):
        return _call("inspect_variable", {"name": named})
    if "variable" in low or "what data" in low:
        return _call("list_variables", {})
    if _has(low, "history"):
        return _call("get_cell_history", {"last_n": 3})
    if "export" in low:
        return Reply.text(
            "Run `%agent export` in a cell of its own: it writes the code I ran in this session, "
            "the edits you accepted and the cells I inserted, in order, as a new notebook beside "
            "this one, so the analysis re-runs without me."
        )
    if "session" in low or "resume" in low:
        return Reply.text(
            "`%agent sessions` lists this notebook's sessions, `%agent resume ID` continues one and "
            "`%agent new` starts a fresh one; they are saved beside the notebook and survive a "
            "kernel restart. The chat panel (`%agent panel`) shows the current one."
        )
    return Reply.text(MENU)


def _with_images(asked: Asked, reply: Reply) -> Reply:
    """The first answer to a question with images says they arrived (the demo cannot see them): alone
    when the question asks nothing else it understands, else before what it does."""
    if not asked.images:
        return reply
    said = received(asked.images)
    if reply.content == MENU and not reply.calls:
        return Reply.text(f"{said}\n\nAsk me about your data to see what I can do: *Which variables do I have?*")
    return dataclasses.replace(reply, content=f"{said}\n\n{reply.content}")


def compaction_summary(request_text: str) -> str:
    """The demo's summary for a compaction: an earlier summary's points, then the questions asked
    and the first line of each answer (their numbers included), as bullet points."""
    lines = []
    for part in request_text.split("\n\n"):
        if part.startswith("- "):  # the points of an earlier summary, carried over
            lines.extend(part.splitlines())
        elif part.startswith("User: "):
            lines.append("- Asked: " + part.removeprefix("User: ").splitlines()[0][:200])
        elif part.startswith("Assistant: "):
            lines.append("  - Found: " + part.removeprefix("Assistant: ").splitlines()[0][:160])
    return "\n".join(lines) or "- Nothing to summarise."


def demo_responder(request: RecordedRequest) -> Reply:
    """Decide the next answer from the user's question, the variables and the steps taken since."""
    text = request.last_user_text()
    if text.startswith(SUMMARY_HEADING):  # a compaction: summarise the transcript it carries
        return Reply.text(compaction_summary(text))
    asked = read_request(request)
    if "Attached by %agent fix" in asked.attached or asked.question.startswith(
        ("Fix the failed cell", "Fix the error in")
    ):
        last = asked.last()
        if last is not None and last.failed and last.name not in ("read_notebook",):
            return _after_failure(last)
        return _fix(asked)
    explicit = _user_tool(asked)
    last = asked.last()
    if last is None:
        return _with_images(asked, explicit or _first_step(asked))
    if last.failed or last.denied:
        return _after_failure(last)
    low = asked.question.lower()
    if _deleting(asked) and last.name in ("read_notebook", "delete_cell") and len(asked.steps) < MAX_STEPS:
        return _delete(asked)
    if (
        _has(low, "edit")
        and "cell" in low
        and last.name in ("read_notebook", "edit_cell")
        and len(asked.steps) < MAX_STEPS
    ):
        return _edit(asked)
    return _summary(last)


def _in_use() -> bool:
    """LLM_* point at the demo model already (a second `start()` in the same kernel)."""
    return os.environ.get("LLM_MODEL") == DEMO_MODEL and os.environ.get("LLM_API_KEY") == DEMO_KEY


def start(*, chunk_delay: float = 0.01, provider: str = "openai-compatible") -> FakeLLMServer:
    """Start the demo model on 127.0.0.1 and point LLM_* at it (once per process).

    Refuses (ConfigurationError) when a provider is configured, in this kernel or in the Jupyter
    server that holds its key: the demo never replaces the user's own model."""
    global _server
    if not _in_use() and provider_configured():
        in_kernel = key_location() == KEY_IN_KERNEL
        where = "this kernel" if in_kernel else "the Jupyter server"
        instead = "unset LLM_API_KEY in this kernel (%env LLM_API_KEY=)" if in_kernel else "start Jupyter without it"
        raise ConfigurationError(
            f"A provider is configured ({os.environ.get('LLM_MODEL') or 'LLM_* set'}, its key in {where}), "
            f"so the demo model was not started: it would replace your model. Ask away with %%agent. "
            f"For the demo instead, {instead}."
        )
    if _server is None:
        _server = FakeLLMServer(chunk_delay=chunk_delay, responder=demo_responder).start()
    os.environ.update(_server.env(provider, model=DEMO_MODEL, api_key=DEMO_KEY))
    return _server


def running() -> FakeLLMServer | None:
    return _server


__all__ = ["DEMO_MODEL", "LONG_ANSWER", "MENU", "demo_responder", "running", "start", "valid"]
