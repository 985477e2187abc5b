"""The session id rule (ids.py), once in Python and once in SQL: both must agree on every value a
crafted sessions file can hold, or a row hidden from the list could still be resumed (or back)."""

from __future__ import annotations

import sqlite3

import pytest

from agentik_jupyter.ids import InvalidSessionIdError, check_session_id, is_session_id, valid_id_sql

VALUES: list[object] = [
    "conv_0123456789abcdef",
    "a",
    "A-b_9",
    "x" * 64,
    "x" * 65,
    "",
    "a\nb",
    "a b",
    "a;b",
    "a.b",
    "a/b",
    "conv_é",
    "a\x00",
    "a\x00\nimport os",
    "\u202econv",
    "a]b",
    "a^b",
    "a*",
    "a?",
    "[a]",
    "a\\b",
    123,
    b"conv_x",
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_python_and_sql_agree(value: object) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id)")
    conn.execute("INSERT INTO t VALUES (?)", (value,))
    in_sql = conn.execute(f"SELECT count(*) FROM t WHERE {valid_id_sql('id')}").fetchone()[0] == 1
    assert in_sql == is_session_id(value)
    expected = (
        isinstance(value, str)
        and value.isascii()
        and 1 <= len(value) <= 64
        and all(c.isalnum() or c in "_-" for c in value)
    )
    assert is_session_id(value) == expected


def test_the_error_shows_the_value_escaped_and_clipped() -> None:
    hostile = "conv_evil\nopen('pwned', 'w').close()" + "x" * 100
    with pytest.raises(InvalidSessionIdError) as caught:
        check_session_id(hostile)
    message = str(caught.value)
    assert "\n" not in message and "\\n" in message and len(message) < 120
    assert check_session_id("conv_ok") == "conv_ok"
