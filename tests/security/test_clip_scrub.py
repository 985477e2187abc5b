"""Clipping must not rebuild a masked secret.

A bounded view cuts long values: a repr is cut to a head and a tail, a table cell to its first
characters. Cut before the scrubber ran, the pieces no longer match the whole secret, so each
went out as-is, and the head of one copy and the tail of another join to the whole token. Here
a real kernel holds a 97-character token (set in GITHUB_TOKEN) in the shapes that get cut, the
model inspects them, and no 12-character piece of the token is in the cells' outputs, the saved
notebook, the sessions file or any request the model received. The scrubber's own rules (pieces,
the streamed answer) are checked directly below.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentik_jupyter.security.scrub import forms, scrub
from agentik_jupyter.security.stream import StreamScrubber
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.tools.namespace import clip, short_repr
from tests.kernel_support import NotebookKernel, file_bytes, kernel_env

pytestmark = pytest.mark.timeout(180)

TOKEN = (
    "ghp_" + "Q7vK2mX9pL4nR8tW1yZ6bC3dF5gH0jS" + "aE2rT6uI9oP1lK4jH7gF3dS8aZ5xC0vB" + "nM4qW7eR2tY9uI6oP3aS8dF1gH5jK0"
)
"""97 characters, set as GITHUB_TOKEN: every 12-character piece of it is recognisable."""
ENV = {"GITHUB_TOKEN": TOKEN}
MASK = "[hidden: GITHUB_TOKEN]"
PIECE = 12


def pieces(secret: str = TOKEN) -> list[str]:
    return [secret[i : i + PIECE] for i in range(len(secret) - PIECE + 1)]


def assert_no_piece(where: str, text: str) -> None:
    for piece in pieces():
        at = text.find(piece)
        assert at < 0, f"a piece of the token ({piece!r}) is in {where}: …{text[max(0, at - 60) : at + 80]}…"


def test_the_token_is_97_characters() -> None:
    assert len(TOKEN) == 97 and len(set(pieces())) == len(pieces())


def test_a_prefix_a_suffix_and_a_middle_piece_are_masked() -> None:
    text = f"head {TOKEN[:24]} tail {TOKEN[-30:]} middle {TOKEN[40:52]}."
    masked = scrub(text, ENV)
    assert_no_piece("the scrubbed text", masked)
    assert masked == f"head {MASK} tail {MASK} middle {MASK}."


def test_pieces_shorter_than_twelve_characters_and_other_text_stay() -> None:
    text = f"short {TOKEN[:11]} and {TOKEN[50:61]}; words like implementation_details stay"
    assert scrub(text, ENV) == text


def test_a_clipped_repr_of_copies_does_not_rebuild_the_token() -> None:
    head_and_tail = repr([TOKEN] * 3)[:80] + "… [cut] …" + repr([TOKEN] * 3)[-40:]
    masked = scrub(head_and_tail, ENV)
    assert_no_piece("the scrubbed clip", masked)
    assert masked.count(MASK) == 2


@pytest.mark.parametrize("size", [1, 3, 7, 12, 50])
def test_a_streamed_answer_with_pieces_ends_equal_to_the_saved_masked_answer(size: int) -> None:
    answer = (
        f"The token starts {TOKEN[:24]}, ends {TOKEN[-20:]}, and whole: {TOKEN}. "
        f"A short bit {TOKEN[:8]} stays; so do long_identifier_names and https://example.org/a/b."
    )
    scrubber = StreamScrubber(ENV)
    shown = ""
    for start in range(0, len(answer), size):
        shown += scrubber.push(answer[start : start + size])
        assert_no_piece("the streamed text so far", shown)
    shown += scrubber.finish()
    assert shown == scrub(answer, ENV)
    assert shown.count(MASK) == 3 and scrubber.held == 0


def test_the_stream_lets_ordinary_words_through_at_once() -> None:
    scrubber = StreamScrubber(ENV)
    assert scrubber.push("Plain words, nothing secret here. ") == "Plain words, nothing secret here. "
    assert scrubber.push("The start " + TOKEN[:10]) == "The start "
    assert scrubber.push(TOKEN[10:30] + " then") + scrubber.finish() == MASK + " then"


def test_the_streamed_and_the_whole_text_agree_for_any_mix_and_any_chunking() -> None:
    env = {**ENV, "LLM_API_KEY": "sk-agentik-LEAKCHECK-1234567890", "DB_PASS": "hunter2-but-longer"}
    secrets = [TOKEN, env["LLM_API_KEY"], env["DB_PASS"]]
    filler = ["the", "value", " ", "\n", "'", "[hidden: X]", "ghp_", "sk-", "=", "/", "1234567890", "implementation"]
    for seed in range(300):
        rng = random.Random(seed)
        parts: list[str] = []
        for _ in range(rng.randrange(1, 20)):
            kind = rng.random()
            if kind < 0.35:
                secret = rng.choice(secrets)
                a = rng.randrange(len(secret))
                parts.append(secret[a : rng.randrange(a, len(secret) + 1)])
            elif kind < 0.45:
                parts.append(rng.choice(sorted(forms(rng.choice(secrets)))))
            else:
                parts.append(rng.choice(filler))
        text = "".join(parts)
        whole = scrub(text, env)
        for secret in secrets:
            assert not any(secret[i : i + PIECE] in whole for i in range(len(secret) - PIECE + 1)), (seed, whole)
        scrubber, shown, pos = StreamScrubber(env), "", 0
        while pos < len(text):
            size = rng.randrange(1, 15)
            shown += scrubber.push(text[pos : pos + size])
            pos += size
        assert shown + scrubber.finish() == whole, seed


def test_clip_and_short_repr_scrub_before_they_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    for text in (short_repr([TOKEN] * 3, 150), short_repr({"t": TOKEN * 3}, 150), clip("x" * 500 + TOKEN * 40, 300)):
        assert MASK in text
        assert_no_piece("the clipped text", text)


SETUP = """
import os
import pandas as pd
token = os.environ["GITHUB_TOKEN"]
holder = {"token": token, "items": [token] * 3, "prefix": token[:24]}
many = [token[i:] + "-" + str(i) for i in range(30)]
prefix_only = token[:24]
long_text = "x" * 2500 + token + "y" * 100
tokens = pd.DataFrame({"user": ["ann", "bob", "cy"], "token": [token, token[:40], token[30:]]})
del token
"""


@pytest.fixture(scope="module")
def inspected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NotebookKernel, FakeLLMServer, Path]]:
    tmp = tmp_path_factory.mktemp("clip")
    db = tmp / "clip.agentik.db"
    with FakeLLMServer() as server:
        kernel = NotebookKernel(kernel_env(server, AGENTIK_DB_PATH=str(db), GITHUB_TOKEN=TOKEN), tmp)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(SETUP)
            calls = [
                {"name": "inspect_variable", "args": {"name": n}}
                for n in ("holder", "many", "prefix_only", "long_text")
            ]
            calls.append({"name": "describe_dataframe", "args": {"name": "tokens"}})
            server.push(Reply.tool_calls(calls), Reply.text("Looked at them."))
            kernel.run("%%agent --wait\nWhat do my variables hold?")
            yield kernel, server, db
        finally:
            kernel.close()


def test_the_model_saw_the_variables_with_the_token_masked(
    inspected: tuple[NotebookKernel, FakeLLMServer, Path],
) -> None:
    _, server, _ = inspected
    results = [m for m in server.requests[-1].messages if m.get("role") == "tool"]
    assert len(results) == 5, results
    text = json.dumps(results)
    assert "holder: dict" in text and "pandas DataFrame 'tokens'" in text
    assert text.count(MASK) >= 6, "the tools read the token and the model was told it is hidden"


def test_no_request_holds_a_piece_of_the_token(inspected: tuple[NotebookKernel, FakeLLMServer, Path]) -> None:
    _, server, _ = inspected
    for request in server.requests:
        assert_no_piece("a request the model received", json.dumps(request.body))


def test_no_output_or_saved_notebook_holds_a_piece_of_the_token(
    inspected: tuple[NotebookKernel, FakeLLMServer, Path],
) -> None:
    kernel, _, _ = inspected
    assert_no_piece("the agent cell's outputs (tool cards, transcript)", json.dumps(kernel.nb.cells[-1].outputs))
    assert_no_piece("the saved notebook with its widget state", kernel.saved())


def test_the_sessions_file_holds_no_piece_of_the_token(inspected: tuple[NotebookKernel, FakeLLMServer, Path]) -> None:
    _, _, db = inspected
    data = file_bytes(db).decode("utf-8", "replace")
    assert MASK in data
    assert_no_piece("the sessions file", data)
