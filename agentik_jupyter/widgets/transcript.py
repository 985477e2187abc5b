"""A turn as static output: what a saved notebook shows without a kernel.

`transcript_bundle` builds a MIME bundle with `text/plain` (deterministic: no
timings, so nbval can compare it), `text/html` (Markdown rendered safely, tool
cards as <details>: what GitHub and nbviewer show) and
`application/vnd.agentik.transcript+json` for the JupyterLab renderer. `text/plain`
names the turn and keeps the first PLAIN_TEXT_LIMIT characters of each message. Every
answer is kept once, in the HTML: its JSON entry keeps the start and `in_html` (an answer
of at most PLAIN_TEXT_LIMIT characters stays whole), and the renderer draws it from the
bundle's HTML, the same markup the live view showed. A saved turn costs about its answer
plus markup (~1.4x), not the HTML and a JSON copy (~2.4x).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentik_jupyter.core.compaction import is_compaction
from agentik_jupyter.notebook.attachments import shown_text
from agentik_jupyter.persistence import INTERRUPTED_CODE, INTERRUPTED_MESSAGE
from agentik_jupyter.tools.modes import PLAN_TOOL, STEP_TOOL
from agentik_jupyter.types import ChatMessage, EndReason, ToolCall, ToolResult, Usage
from agentik_jupyter.widgets import look
from agentik_jupyter.widgets.cards import IMAGE_LIMIT, IMAGE_TYPES, card_html, result_text, truncate
from agentik_jupyter.widgets.markdown import escape, render_markdown
from agentik_jupyter.widgets.plan_card import SavedPlan, saved_plan_html, saved_plan_text
from agentik_jupyter.widgets.sanitize import sanitize_html
from agentik_jupyter.widgets.status import STOPPED, ending_text, is_failure, usage_text

TRANSCRIPT_MIME = "application/vnd.agentik.transcript+json"
TRANSCRIPT_VERSION = 1
RESULT_LIMIT = 4_000
PLAIN_RESULT_LIMIT = 120
PLAIN_TEXT_LIMIT = 200
REWOUND_MARK = "↶ Rewound"
"""A rewound turn's transcript says so in its footer (labextension/src/renderer.ts REWOUND), so a notebook
opened later, with no kernel that knows the turn, still tells it from the others."""


_PRE = re.compile(r"(<pre[\s>].*?</pre>)", re.S)


def one_line(markup: str) -> str:
    """Line breaks outside <pre> are only whitespace in HTML: as spaces, the saved notebook
    stores the answer's HTML as one string instead of one JSON string per line."""
    return "".join(part if part.startswith("<pre") else part.replace("\n", " ") for part in _PRE.split(markup))


def _display_payload(display: dict[str, Any] | None) -> dict[str, str] | None:
    if not display:
        return None
    kept: dict[str, str] = {}
    for mime in IMAGE_TYPES:
        data = display.get(mime)
        if isinstance(data, str) and len(data) <= IMAGE_LIMIT:
            kept[mime] = data
    markup = display.get("text/html")
    if isinstance(markup, str):
        kept["text/html"] = sanitize_html(markup)
    return kept or None


def transcript_entries(messages: Sequence[ChatMessage], question: str | None = None) -> list[dict[str, Any]]:
    """Messages -> JSON entries (tool calls paired with their results, in call order); a propose_plan
    call is followed by its plan's card (role "plan"), ticked by the plan_step calls that succeeded."""
    entries: list[dict[str, Any]] = []
    plans: dict[str, SavedPlan] = {}
    running: SavedPlan | None = None
    if question is not None:
        entries.append({"role": "user", "content": question})
    tools: dict[str, dict[str, Any]] = {}
    for m in messages:
        if m.role == "user":
            if question is None:  # what the user asked, not what was attached for the model
                entries.append({"role": "user", "content": shown_text(m.content)})
        elif m.role == "assistant":
            if m.error is not None:
                # a compaction is news, not a failure; a Stop is the user's doing (shown as STOPPED)
                code = (
                    "notice" if is_compaction(m.error) else INTERRUPTED_CODE if m.error == INTERRUPTED_MESSAGE else None
                )
                entries.append({"role": "error", "message": m.error, "code": code})
            elif m.notice is not None:
                entries.append({"role": "notice", "message": m.notice})
            elif m.content:
                entries.append({"role": "assistant", "content": m.content})
            for call in m.tool_calls or []:
                tools[call.id] = {
                    "role": "tool",
                    "id": call.id,
                    "name": call.name,
                    "args": call.args,
                    "result": None,
                    "error": None,
                    "duration_ms": None,
                    "truncated": 0,
                    "display": None,
                }
                entries.append(tools[call.id])
        elif m.role == "tool" and m.tool_result is not None:
            r = m.tool_result
            entry = tools.get(r.tool_call_id)
            if entry is None:
                entry = {"role": "tool", "id": r.tool_call_id, "name": r.name, "args": {}}
                entries.append(entry)
            text, cut = truncate(result_text(r), RESULT_LIMIT) if r.error is None else (None, 0)
            entry.update(
                result=text,
                error=r.error,
                duration_ms=r.duration_ms,
                truncated=cut,
                display=_display_payload(r.display),
            )
            if r.name == PLAN_TOOL:
                plans[r.tool_call_id] = SavedPlan.of(entry.get("args") or {}, r)
                running = plans[r.tool_call_id] if plans[r.tool_call_id].decision == "approved" else running
            elif r.name == STEP_TOOL and r.error is None and running is not None:
                running.tick(entry.get("args") or {})
    return [shown for e in entries for shown in _with_plan(e, plans)]


def _with_plan(entry: dict[str, Any], plans: dict[str, SavedPlan]) -> list[dict[str, Any]]:
    """A propose_plan call's card followed by its plan's card, as the live turn showed them (one still
    waiting for the user: as proposed)."""
    if entry["role"] != "tool" or entry["name"] != PLAN_TOOL:
        return [entry]
    plan = plans.get(entry["id"]) or SavedPlan.of(entry.get("args") or {}, None)
    return [entry, plan.entry(entry["id"])]


def failed_tools(entries: list[dict[str, Any]]) -> int:
    """Tool calls of these entries that failed (a call the user denied did not fail)."""
    return sum(1 for e in entries if e["role"] == "tool" and is_failure(e.get("error")))


def _entry_call(entry: dict[str, Any]) -> tuple[ToolCall, ToolResult | None]:
    call = ToolCall(id=entry["id"], name=entry["name"], args=entry.get("args") or {})
    if entry.get("result") is None and entry.get("error") is None:
        return call, None
    result = ToolResult(
        tool_call_id=call.id,
        name=call.name,
        result=entry.get("result"),
        error=entry.get("error"),
        display=entry.get("display"),
        duration_ms=entry.get("duration_ms"),
    )
    return call, result


def _head(text: str, where: str) -> str:
    """The first PLAIN_TEXT_LIMIT characters (to a word's end), and how many more the rich
    outputs (`where`) hold; a text not much longer stays whole."""
    if len(text) <= PLAIN_TEXT_LIMIT * 3 // 2:
        return text
    space = text.rfind(" ", PLAIN_TEXT_LIMIT // 2, PLAIN_TEXT_LIMIT)
    shown = text[: space if space > 0 else PLAIN_TEXT_LIMIT]
    return f"{shown}… [{len(text) - len(shown):,} more characters in the {where}]"


def _plain(
    entries: list[dict[str, Any]], status: str | None, usage: Usage | None, failed: int, rewound: bool = False
) -> str:
    lines: list[str] = []
    for e in entries:
        if e["role"] == "user":
            lines.append(f"You: {_head(e['content'], 'HTML and JSON outputs')}")
        elif e["role"] == "assistant":
            lines.append(f"Agent: {_head(e['content'], 'HTML output')}")
        elif e["role"] == "error" and e.get("code") == INTERRUPTED_CODE:
            lines.append(STOPPED)
        elif e["role"] == "error":
            lines.append(e["message"] if e.get("code") == "notice" else f"Error: {e['message']}")
        elif e["role"] == "notice":
            lines.append(f"Note: {e['message']}")
        elif e["role"] == "plan":
            lines.append(saved_plan_text(SavedPlan.from_entry(e)))
        else:
            call, result = _entry_call(e)
            outcome = (
                "(no result)"
                if result is None
                else (f"error: {result.error}" if result.error is not None else str(result.result or ""))
            )
            short, cut = truncate(outcome, PLAIN_RESULT_LIMIT)
            lines.append(f"[tool] {call.name} -> {short}{'…' if cut else ''}")
    parts = (ending_text(status, failed), REWOUND_MARK if rewound else "", usage_text(usage))
    footer = " · ".join(p for p in parts if p)
    if footer:
        lines.append(f"[{footer}]")
    return "\n".join(lines)


def _html(entries: list[dict[str, Any]], payload: dict[str, Any], rendered: Mapping[str, str] | None = None) -> str:
    out = [f'<div class="agentik-transcript" style="border-left:3px solid {look.BRAND};padding-left:8px">']
    if payload.get("title"):
        out.append(f'<div style="font-weight:bold">{escape(payload["title"])}</div>')
    for i, e in enumerate(entries):
        if e["role"] == "user":
            who = f"You · {escape(e['mode'])}" if e.get("mode") else "You"
            out.append(
                f'<div class="agentik-user"><b>{who}:</b> <span style="white-space:pre-wrap">'
                f"{escape(e['content'])}</span></div>"
            )
        elif e["role"] == "assistant":
            out.append(_answer_html(e["content"], i if _in_html(e) else None, rendered))
        elif e["role"] == "error" and e.get("code") == INTERRUPTED_CODE:
            out.append(f'<div class="agentik-stopped">{STOPPED}</div>')
        elif e["role"] == "error" and e.get("code") == "notice":
            out.append(f'<div class="agentik-notice" style="opacity:0.75">{escape(e["message"])}</div>')
        elif e["role"] == "error":
            out.append(f'<div class="agentik-error" style="{look.ERROR_TEXT}">⚠ {escape(e["message"])}</div>')
        elif e["role"] == "notice":
            out.append(f'<div class="agentik-notice"><em>{escape(e["message"])}</em></div>')
        elif e["role"] == "plan":
            out.append(saved_plan_html(SavedPlan.from_entry(e)))
        else:
            out.append(card_html(*_entry_call(e), sanitised=True))  # (its display was sanitised for the entry)
    parts = [ending_text(payload.get("status"), payload.get("failed_tools", 0))]
    if payload.get("rewound"):
        parts.append(REWOUND_MARK)
    if payload.get("elapsed_s") is not None:
        parts.append(f"{payload['elapsed_s']:.1f} s")
    usage = payload.get("usage")
    parts.append(usage_text(Usage(**usage)) if usage else "")
    footer = " · ".join(p for p in parts if p)
    if footer:
        out.append(f'<div class="agentik-status" style="color:{look.MUTED};font-size:90%">{escape(footer)}</div>')
    out.append("</div>")
    return "".join(out)


def _in_html(entry: dict[str, Any]) -> bool:
    """An answer the JSON copy does not repeat: longer than its start."""
    return entry["role"] == "assistant" and len(entry["content"]) > PLAIN_TEXT_LIMIT


def _answer_html(answer: str, index: int | None, rendered: Mapping[str, str] | None = None) -> str:
    """An answer's element in the text/html; `data-agentik-entry="i"` (an answer kept only
    there, `in_html`) is where the lab renderer finds it. `rendered`: HTML already rendered from
    Markdown texts (a live view's), taken for an answer that is exactly one of them."""
    where = f' data-agentik-entry="{index}"' if index is not None else ""
    html = rendered.get(answer) if rendered else None
    return f'<div class="agentik-assistant"{where}>{one_line(render_markdown(answer) if html is None else html)}</div>'


def _json_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries for the JSON copy: an answer keeps its start and points at the HTML."""
    return [
        {"role": "assistant", "content": e["content"][: PLAIN_TEXT_LIMIT - 1] + "…", "in_html": True}
        if _in_html(e)
        else e
        for e in entries
    ]


def holds_answer(bundle: dict[str, Any], answer: str) -> bool:
    """Whether a saved transcript keeps `answer` whole: in its JSON, or as the HTML the
    renderer draws (for checks: the bench's and the tests' "the final text is exact")."""
    payload = bundle[TRANSCRIPT_MIME]
    markup = "".join(bundle.get("text/html") or "")
    for i, e in enumerate(payload["entries"]):
        if e["role"] != "assistant":
            continue
        if e["content"] == answer and not e.get("in_html"):
            return True
        if e.get("in_html") and _answer_html(answer, i) in markup:
            return True
    return False


def transcript_bundle(
    messages: Sequence[ChatMessage],
    *,
    question: str | None = None,
    status: EndReason | None = None,
    usage: Usage | None = None,
    error: str | None = None,
    title: str | None = None,
    elapsed_s: float | None = None,
    mode: str | None = None,
    rewound: bool = False,
    rendered: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The MIME bundle of one turn (or a whole conversation when `question` is None); `mode`: the
    turn's mode as its header said it (Ask, Auto, Plan; Agent, the default, is not said);
    `rewound`: the turn was taken back since (its cell's transcript is shown again, marked).
    `rendered`: answers' HTML by their Markdown text, rendered already (a live view's last render).

    `application/vnd.agentik.transcript+json` payload, version 1::

        {"version": 1,
         "title": str | null,
         "status": "complete" | "max_iterations" | "interrupted" | "error" | null,
         "usage": {"input_tokens"?: int, "output_tokens"?: int, "cached_tokens"?: int, "cache_write_tokens"?: int} | null,
         "elapsed_s": float | null,
         "rewound": true,            # only when the turn was rewound: the footer adds "↶ Rewound"
         "failed_tools": int,        # only when > 0: tool calls that failed (not those the user denied);
                                     # the footer then reads "⚠ Finished with n failed tool call(s)"
         "entries": [
           {"role": "user", "content": str, "mode"?: str},   # mode: the turn's, when not Agent
           {"role": "assistant", "content": str},        # an answer of at most PLAIN_TEXT_LIMIT
                                                         # characters: Markdown; render it escaped
           {"role": "assistant", "content": str, "in_html": true},
                                  # a longer answer: `content` is its start (PLAIN_TEXT_LIMIT
                                  # characters with the "…"); the whole answer, rendered, is the
                                  # bundle's text/html element data-agentik-entry="<index>" (kept
                                  # once). Older notebooks have whole answers without `in_html`.
           {"role": "tool", "id": str, "name": str, "args": {...},
            "result": str | null,                          # text the model saw, cut to 4000 chars
            "truncated": int,                              # characters cut from result
            "error": str | null, "duration_ms": float | null,
            "display": {"text/html": str (sanitised), "image/png": base64, ...} | null},
           {"role": "plan", "id": str, "steps": [str], "status": ["done" | "failed" | null],
            "notes": [str], "decision": "approved" | "denied" | "timeout" | "cancelled" | null,
            "mode": "agent" | "auto" | null, "edited": bool, "reason": str | null},
                                  # after a propose_plan call's tool entry, its plan's card: the steps
                                  # as run, each ticked by the plan_step calls that succeeded;
                                  # decision null: no answer yet
           {"role": "error", "message": str, "code": str | null} |   # code "notice": news (a compaction);
                                                                   # "interrupted": a Stop, shown as "■ Stopped"
           {"role": "notice", "message": str}]}

    Entries are in conversation order; a tool entry with neither result nor error
    never finished. Every string is untrusted text except `display["text/html"]`,
    which has been passed through an allow-list sanitiser.
    """
    entries = transcript_entries(messages, question)
    if mode and mode != "Agent" and entries and entries[0]["role"] == "user":
        entries[0] = {**entries[0], "mode": mode}
    if status == "interrupted":  # its footer says "■ Stopped": the mark the store keeps is not repeated
        entries = [e for e in entries if not (e["role"] == "error" and e.get("code") == INTERRUPTED_CODE)]
    if error is not None and not any(e["role"] == "error" and e["message"] == error for e in entries):
        entries.append({"role": "error", "message": error, "code": None})
    payload: dict[str, Any] = {
        "version": TRANSCRIPT_VERSION,
        "title": title,
        "status": status,
        "usage": usage.model_dump(exclude_none=True) if usage is not None else None,
        "elapsed_s": round(elapsed_s, 3) if elapsed_s is not None else None,
        "entries": entries,
    }
    failed = failed_tools(entries)
    if failed:
        payload["failed_tools"] = failed
    if rewound:
        payload["rewound"] = True
    markup = _html(entries, payload, rendered)
    return {
        "text/plain": _plain(entries, status, usage, failed, rewound),
        "text/html": markup,
        TRANSCRIPT_MIME: {**payload, "entries": _json_entries(entries)},
    }
