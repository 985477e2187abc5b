"""A model that spells out the key across stream chunks: the key reaches no live view.

The stored copies of an answer were scrubbed, but the deltas shown while it streams were
not, and a key split over two deltas is in neither delta alone. Here the fake provider
streams an answer (and reasoning) with the key cut at chunk boundaries; a real kernel runs
the turn, and every iopub message it sent (widget state updates included) is searched for
the key. The final text is the masked text. The chat route's SSE events are checked in
test_server_secrets.py.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.security.stream import StreamScrubber
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import RawKernel, kernel_env, transcript

from .test_key_never_leaves import KEY, MASK, assert_clean

pytestmark = pytest.mark.timeout(120)

ENV = {"LLM_API_KEY": KEY, "WAREHOUSE_PASSWORD": "hunter2-but-longer"}
B64 = base64.b64encode(KEY.encode()).decode()
ANSWER = f"Your key is {KEY}. In base64: {B64}. Once more, quoted: '{KEY}'. That is all."
REASONING = f"The user wants {KEY} repeated."
CHUNKS = -(-len(ANSWER) // 7)
"""Seven-character chunks: every copy of the key is cut over several deltas."""


def masked(text: str) -> str:
    return scrub(text, ENV)


def test_the_answer_really_splits_the_key_across_chunks() -> None:
    pieces = Reply.text(ANSWER, chunks=CHUNKS).pieces()
    assert all(KEY not in p and B64[:12] not in p for p in pieces)
    assert KEY in "".join(pieces)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11, 31, 64, 1000])
def test_stream_scrubber_shows_nothing_secret_and_ends_with_the_masked_text(size: int) -> None:
    text = ANSWER + " pw hunter2-but-longer, " + REASONING
    scrubber = StreamScrubber(ENV)
    shown: list[str] = []
    for start in range(0, len(text), size):
        shown.append(scrubber.push(text[start : start + size]))
        assert_clean("the text shown so far", "".join(shown))
        assert "hunter2-but-longer" not in "".join(shown)
    shown.append(scrubber.finish())
    assert "".join(shown) == masked(text)
    assert scrubber.held == 0


def test_stream_scrubber_holds_back_only_what_could_start_a_secret() -> None:
    scrubber = StreamScrubber(ENV)
    assert scrubber.push("plain words without anything ") == "plain words without anything "
    shown = scrubber.push("then " + KEY[:10])
    assert shown == "then " and scrubber.held == 10
    assert scrubber.push(KEY[10:]) + scrubber.finish() == MASK


def test_stream_scrubber_without_secrets_passes_text_through() -> None:
    scrubber = StreamScrubber({})
    assert scrubber.push(KEY[:5]) == KEY[:5] and scrubber.finish() == ""


@pytest.fixture(scope="module")
def streamed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RawKernel, FakeLLMServer, dict]]:
    tmp: Path = tmp_path_factory.mktemp("streamed")
    # Paced like a model (~20 chunks a second): the live view, which updates a few times a second
    # and is replaced by the transcript at the end, shows the answer while it streams.
    with FakeLLMServer(chunk_delay=0.05) as server:
        kernel = RawKernel(kernel_env(server, api_key=KEY, AGENTIK_DB_PATH=str(tmp / "s.agentik.db")), tmp)
        try:
            kernel.text("%load_ext agentik_jupyter")
            server.push(Reply.text(ANSWER, chunks=CHUNKS, reasoning=REASONING))
            execution = kernel.execute("%%agent --wait\nWhat is my key?")
            assert execution.ok, execution.text
            kernel.drain(0.5)
            yield kernel, server, transcript(execution.outputs)
        finally:
            kernel.close()


def test_no_iopub_message_of_the_streamed_turn_holds_the_key(streamed: tuple[RawKernel, FakeLLMServer, dict]) -> None:
    kernel, server, _ = streamed
    assert server.requests, "the turn reached the provider"
    comm_updates = [m for m in kernel.iopub if m["msg_type"] == "comm_msg"]
    assert len(comm_updates) > 5, "the answer streamed into the widgets"
    assert_clean("an iopub message (widget state, output)", json.dumps([m["content"] for m in kernel.iopub]))
    assert any(MASK in json.dumps(m["content"]) for m in comm_updates), "the live view showed the mask"


def test_the_final_text_is_the_masked_text(streamed: tuple[RawKernel, FakeLLMServer, dict]) -> None:
    _, _, bundle = streamed
    entries = bundle["application/vnd.agentik.transcript+json"]["entries"]
    answers = [e["content"] for e in entries if e["role"] == "assistant"]
    assert answers == [scrub(ANSWER, {"LLM_API_KEY": KEY})]
    assert_clean("the transcript", json.dumps(bundle))
