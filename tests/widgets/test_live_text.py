"""Append-only streaming (a frontend with our extension): each piece of the answer crosses once.

The messages a StreamBuffer publishes are replayed here the way labextension/src/livetext.ts
applies them (state: `value` + `tail`; a custom message: keep the first `k` UTF-16 units of what
is shown, add `a`, the first `s` units are `value`), so
the test checks what the frontend would show, not what the kernel believes it sent.
"""

from __future__ import annotations

from typing import Any

from agentik_jupyter.widgets.markdown import render_markdown
from agentik_jupyter.widgets.stream import MAX_LIVE, StreamBuffer
from tests.widgets.test_stream import answer
from tests.widgets_support import CommLog, FakeClock, comm_log  # noqa: F401


def utf16(text: str) -> bytes:
    return text.encode("utf-16-le")


def text16(data: bytes) -> str:
    return data.decode("utf-16-le")


def shown(log: CommLog) -> dict[str, str]:
    """What a frontend shows for each LiveText, from the messages it received."""
    models: dict[str, dict[str, str]] = {}
    for kind, comm_id, _, data in log.messages:
        if kind == "comm_open" and data.get("state", {}).get("_model_name") == "LiveTextModel":
            state = data["state"]
            models[comm_id] = {
                "value": state.get("value", ""),
                "tail": state.get("tail", ""),
            }  # (lean: a default is left out)
        elif kind == "comm_msg" and comm_id in models:
            model = models[comm_id]
            if data.get("method") == "update":
                model.update({k: v for k, v in data["state"].items() if k in model})
            elif data.get("method") == "custom":
                content: dict[str, Any] = data["content"]
                whole = utf16(model["value"] + model["tail"])
                whole = whole[: 2 * content["k"]] + utf16(content["a"])
                model["value"] = text16(whole[: 2 * content["s"]])
                model["tail"] = text16(whole[2 * content["s"] :])
    return {cid: m["value"] + m["tail"] for cid, m in models.items()}


def paced(
    text: str, log: CommLog, *, append_only: bool, exact: bool = True, chunk: int = 4, seconds: float = 0.004
) -> tuple[StreamBuffer, list[str]]:
    """`text` at 250 chunks a second; what the frontend showed after each update."""
    clock = FakeClock()
    log.reset()
    buffer = StreamBuffer(clock=clock, append_only=append_only)
    seen: list[str] = []
    for i in range(0, len(text), chunk):
        clock.advance(seconds)
        before = len(log.messages)
        buffer.append(text[i : i + chunk])
        if append_only and len(log.messages) != before:
            seen.append("".join(shown(log).values()))
    buffer.finish(exact)
    return buffer, seen


def test_a_paced_answer_crosses_about_once(comm_log: CommLog) -> None:
    text = answer(4_000, seed=5)
    _, _ = paced(text, comm_log, append_only=False)
    html_widgets = comm_log.total_bytes
    buffer, seen = paced(text, comm_log, append_only=True)
    appended = comm_log.total_bytes
    html_size = len(render_markdown(text))
    assert appended < 1.6 * html_size, (appended / html_size, html_widgets / html_size)
    assert appended < html_widgets / 2
    (frontend,) = shown(comm_log).values()
    assert frontend == render_markdown(text)
    assert len(seen) >= 12  # (it streamed: the text grew on screen, ~4 times a second for 4 s)
    assert seen[0] and len(seen[0]) < len(seen[-1]) / 5
    # (the buffer's estimate counts a message's whole framing; the log its data, not its comm_id)
    assert buffer.sent_bytes <= appended + 50 * len(comm_log.messages)


def test_the_frontend_shows_the_finished_blocks_as_they_finish(comm_log: CommLog) -> None:
    text = "First paragraph, *short*.\n\n- one\n- two\n\n" + "word " * 200 + "\n\nLast."
    _, seen = paced(text, comm_log, append_only=True, exact=False)
    assert any(s.startswith("<p>First paragraph, <em>short</em>.</p>") and "<li>two</li>" in s for s in seen)
    (frontend,) = shown(comm_log).values()
    # (a view the transcript replaces still ends on the whole text: only its end was missing)
    assert frontend == render_markdown(text)


def test_a_seal_and_the_tail_after_it_cross_in_one_message(comm_log: CommLog) -> None:
    """Sealing a part is not a message of its own: its HTML goes with the next tail's, as one
    update (each message costs ~110 bytes of framing; a paced answer seals a few times)."""
    text = answer(4_000, seed=5)
    clock = FakeClock()
    comm_log.reset()
    buffer = StreamBuffer(clock=clock, append_only=True)
    most = 0
    for i in range(0, len(text), 4):
        clock.advance(0.004)
        before = len(comm_log.messages)
        buffer.append(text[i : i + 4])
        most = max(
            most,
            sum(
                1
                for kind, _, _, data in comm_log.messages[before:]
                if kind == "comm_msg" and data.get("method") == "custom"
            ),
        )
    sealed = buffer._sealed
    buffer.finish(False)
    assert sealed > 0  # (the answer was sealed on the way)
    assert most == 1, most
    (frontend,) = shown(comm_log).values()
    assert frontend == render_markdown(text)


def test_a_long_code_block_is_cut_and_bytes_stay_linear(comm_log: CommLog) -> None:
    code = "\n".join(f"value_{i} = {i} * 2" for i in range(1_200))
    text = f"Intro.\n\n```python\n{code}\n```\n\nAfter."
    buffer, _ = paced(text, comm_log, append_only=True, chunk=8, seconds=0.004)
    assert len(buffer.widgets) == 1
    assert comm_log.total_bytes < 3 * len(render_markdown(text)), comm_log.total_bytes / len(text)
    adds = [
        len(data["content"]["a"])
        for kind, _, _, data in comm_log.messages
        if kind == "comm_msg" and data.get("method") == "custom"
    ]
    assert max(adds) < 2 * MAX_LIVE
    (frontend,) = shown(comm_log).values()
    assert frontend == render_markdown(text)


def test_without_the_extension_the_html_parts_stream_as_before(comm_log: CommLog) -> None:
    text = answer(4_000, seed=5)
    buffer, _ = paced(text, comm_log, append_only=False)
    assert not shown(comm_log)
    assert [w.value for w in buffer.widgets] == [render_markdown(text)]
