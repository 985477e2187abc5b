"""An offline demo model: a FakeLLMServer with a small rule-based "brain".

It lets the quickstart run with no API key (and deterministically, for nbval):
it calls the notebook tools when the question asks for them and summarises
their results. It is not an LLM; it is a script that speaks the real wire format.
"""

from __future__ import annotations

import os
import re
from .fake_server import FakeLLMServer
from .replies import RecordedRequest, Reply

DEMO_MODEL = "agentik-demo"
_server: FakeLLMServer | None = None

_VARIABLE = re.compile(r"^- (\w+): (\w+)", re.M)
LONG_ANSWER = " ".join(
    f"Paragraph {i}: a long answer streams in word by word, so you can press Stop at any time." for i in range(1, 201)
)


def _system_text(request: RecordedRequest) -> str:
    body = request.body if isinstance(request.body, dict) else {}
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system if isinstance(b, dict))
    for message in request.messages:
        if message.get("role") == "system" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def _tool_results(request: RecordedRequest) -> list[tuple[str, str]]:
    """(tool name, result text) of the tool results that end the conversation, if any."""
    messages = request.messages
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call.get("id", "")] = call.get("function", {}).get("name", "")
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    names[block.get("id", "")] = block.get("name", "")
    results: list[tuple[str, str]] = []
    for message in reversed(messages):
        if message.get("role") == "tool":
            results.insert(0, (names.get(message.get("tool_call_id", ""), "tool"), str(message.get("content", ""))))
            continue
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    inner = block.get("content")
                    text = inner if isinstance(inner, str) else "".join(
                        b.get("text", "") for b in inner or [] if isinstance(b, dict)
                    )
                    results.append((names.get(block.get("tool_use_id", ""), "tool"), text))
        break
    return results


def _pick(variables: list[tuple[str, str]], text: str, kinds: tuple[str, ...]) -> str | None:
    for name, _ in variables:
        if re.search(rf"\b{re.escape(name)}\b", text):
            return name
    for name, kind in variables:
        if kind in kinds:
            return name
    return None


def _value(text: str) -> object:
    """`key=3` gives an int, `key=2.5` a float, anything else the string."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip("'\"")


def demo_responder(request: RecordedRequest) -> Reply:
    """Decide the next answer from the question, the variables and any tool results."""
    results = _tool_results(request)
    if results:
        name, text = results[-1]
        if text.startswith("Error") or "did not approve" in text:
            return Reply.text(f"The tool `{name}` did not run: {text.splitlines()[0]} I will answer without it.")
        lines = [line for line in text.splitlines() if line.strip()][:12]
        summary = "\n".join(f"    {line}" for line in lines)
        return Reply.text(f"Here is what `{name}` found:\n\n{summary}\n\nAsk a follow-up to dig deeper.")
    question = request.last_user_text()
    low = question.lower()
    variables = [(m.group(1), m.group(2)) for m in _VARIABLE.finditer(_system_text(request))]
    frames = ("DataFrame",)
    offered = {t.get("name") or t.get("function", {}).get("name") for t in (request.body.get("tools") or [])}
    wanted = re.search(r"\buse (\w+)", question)
    if wanted and wanted.group(1) in offered:
        args = {k: _value(v) for k, v in re.findall(r"(\w+)=(\S+)", question)}
        return Reply.tool_calls([{"name": wanted.group(1), "args": args}])
    fix = re.match(r"Fix the error in (?:cell (\S+)|the cell)", question)
    if fix is not None and fix.group(1) and "read_notebook" in offered:
        return Reply.tool_calls([{"name": "read_notebook", "args": {"cell_id": fix.group(1)}}])
    if fix is not None:
        return Reply.tool_calls([{"name": "get_cell_history", "args": {"last_n": 1}}])
    if "notebook" in low and "read_notebook" in offered:
        return Reply.tool_calls([{"name": "read_notebook", "args": {}}])
    if any(w in low for w in ("long", "essay", "story")):
        return Reply.text(LONG_ANSWER)
    if any(w in low for w in ("plot", "chart", "histogram")):
        frame = _pick(variables, question, frames)
        if frame is not None:
            column = re.search(r"column (\w+)", question)
            target = f"{frame}[{column.group(1)!r}]" if column else frame
            code = f"import matplotlib.pyplot as plt\n{target}.plot()\nplt.title('{target}')"
            return Reply.tool_calls([{"name": "run_code", "args": {"code": code}}], text="Let me plot it. ")
    if any(w in low for w in ("describe", "summar", "column", "dataframe", "look at")):
        frame = _pick(variables, question, frames)
        if frame is not None:
            return Reply.tool_calls([{"name": "describe_dataframe", "args": {"name": frame}}])
    if "variable" in low or "what data" in low:
        return Reply.tool_calls([{"name": "list_variables", "args": {}}])
    if "history" in low or "cells" in low:
        return Reply.tool_calls([{"name": "get_cell_history", "args": {"last_n": 3}}])
    return Reply.text(
        "Hello! I am the offline demo model, so my answers are scripted. "
        "Ask me to *describe* a DataFrame, list the *variables*, *plot* a column, "
        f"or write something *long* and press Stop. You asked: {question.strip()[:200]}"
    )


def start(*, chunk_delay: float = 0.01, provider: str = "openai-compatible") -> FakeLLMServer:
    """Start the demo model on 127.0.0.1 and point LLM_* at it (once per process)."""
    global _server
    if _server is None:
        _server = FakeLLMServer(chunk_delay=chunk_delay, responder=demo_responder).start()
    os.environ.update(_server.env(provider, model=DEMO_MODEL, api_key="demo-key-not-secret"))
    return _server


def running() -> FakeLLMServer | None:
    return _server
