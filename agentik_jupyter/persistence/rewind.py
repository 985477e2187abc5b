"""A session's turns, and taking turns back: working memory drops them, the audit log keeps them.

Rewinding deletes the turns' rows from working memory (what the model is sent, the seed's
`compact(dropFromOrderIdx)`), and appends to each rewound turn an error record with code
"rewound" saying what the rewind did, so the transcript shows it as rewound after a resume.
The audit log is append-only: every message of a rewound turn stays there.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

REWOUND_CODE = "rewound"


@dataclass(frozen=True)
class TurnRow:
    """One turn of a session: its number (1 = the first question), id, question, whether it was rewound,
    and the id of its question's message (how a transcript's turn finds its row)."""

    number: int
    turn_id: str
    question: str
    rewound: bool
    message_id: str = ""


def list_turns(conn: sqlite3.Connection, conversation_id: str) -> list[TurnRow]:
    """Every turn that asked a question, oldest first, numbered from 1 (rewound ones keep their numbers)."""
    rows = conn.execute(
        "SELECT turn_id, payload_json FROM message WHERE conversation_id = ? AND role = 'user' ORDER BY seq",
        (conversation_id,),
    ).fetchall()
    rewound = {
        turn_id
        for (turn_id, payload) in conn.execute(
            "SELECT turn_id, payload_json FROM message WHERE conversation_id = ? AND role = 'error'",
            (conversation_id,),
        )
        if json.loads(payload).get("code") == REWOUND_CODE
    }
    out = []
    for number, (turn_id, payload) in enumerate(rows, start=1):
        message = json.loads(payload)
        question = str(message.get("content", ""))
        out.append(TurnRow(number, turn_id, question, turn_id in rewound, str(message.get("id", ""))))
    return out


def drop_working(conn: sqlite3.Connection, conversation_id: str, turn_ids: list[str]) -> int:
    """Delete the turns' working-memory rows; how many went."""
    marks = ",".join("?" * len(turn_ids))
    return conn.execute(
        f"DELETE FROM working_memory WHERE conversation_id = ? AND turn_id IN ({marks})",
        (conversation_id, *turn_ids),
    ).rowcount
