"""`%agent policy` lists and revokes "Always" (per conversation); `%agent delete` takes a prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentik_jupyter.testing import FakeLLMServer
from tests.kernel_support import AGENT_EXPR, NotebookKernel, kernel_env

pytestmark = pytest.mark.timeout(120)


def test_always_is_listed_revoked_and_does_not_survive_a_new_conversation(tmp_path: Path) -> None:
    db_path = tmp_path / "policy.agentik.db"
    gate = f"{AGENT_EXPR}.gate"
    with FakeLLMServer() as server:
        kernel = NotebookKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run("%%agent --wait\nHello.")
            assert "none" in kernel.text("%agent policy")
            kernel.run(f"{gate}.always.add('run_code')")  # what the card's "Always" button records
            assert "run_code" in kernel.text("%agent policy")
            assert "always allowed in this session" in kernel.text("%agent tools")
            assert "asks again" in kernel.text("%agent policy --reset")
            assert "none" in kernel.text("%agent policy")
            kernel.run(f"{gate}.always.add('run_code')")
            kernel.text("%agent new")
            kernel.run("%%agent --wait\nA new conversation.")
            assert "none" in kernel.text("%agent policy")

            ids = kernel.text(f"print(*[c.id for c in {AGENT_EXPR}.db.db.list_conversations()])").split()
            assert len(ids) == 2
            target = ids[-1]
            prefix = next(
                target[:n]
                for n in range(1, len(target))
                if not any(other.startswith(target[:n]) for other in ids if other != target)
            )
            assert f"Deleted session {target}." in kernel.text(f"%agent delete {prefix}")
        finally:
            kernel.close()
