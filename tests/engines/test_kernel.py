"""Through a real kernel: the model asks for describe_dataframe on a DuckDB relation and a Dask frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("dask.dataframe")

from agentik_jupyter.testing import FakeLLMServer, Reply  # noqa: E402
from tests.kernel_support import NotebookKernel, kernel_env  # noqa: E402

SETUP = """
import duckdb, numpy as np, pandas as pd, dask.dataframe as dd
con = duckdb.connect()
rel = con.sql("SELECT range AS id, (range % 7)::VARCHAR AS \\"Trips over the past 24-hours (midnight to 11:59pm)\\", "
              "CASE WHEN range % 10 = 0 THEN NULL ELSE range * 0.5 END AS price FROM range(1000)")
ddf = dd.from_pandas(pd.DataFrame({"v": np.arange(100.0)}), npartitions=4)
"""


def tool_messages(server: FakeLLMServer) -> list[str]:
    return [str(m.get("content")) for m in server.last_request.messages if m.get("role") == "tool"]


def context_text(request: Any) -> str:
    """The context note travels with the question (the system prompt stays the same all session)."""
    return "\n".join(str(m.get("content")) for m in request.messages if m.get("role") == "user")


def test_the_model_gets_the_engine_summary(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        server.push(
            Reply.tool_calls(
                [
                    {"name": "describe_dataframe", "args": {"name": "rel"}},
                    {"name": "describe_dataframe", "args": {"name": "ddf"}},
                ]
            ),
            Reply.text("rel has 1,000 rows."),
        )
        kernel = NotebookKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "e.db")), tmp_path)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(SETUP)
            kernel.run("%%agent --wait\nwhat is in rel and ddf?")
            first = server.requests[0]
            rel_text, ddf_text = tool_messages(server)
        finally:
            kernel.close()
    # The turn's context lists the lazy frames from metadata.
    assert "rel: duckdb.DuckDBPyRelation 3 columns, lazy" in context_text(first)
    assert "ddf: dask.DataFrame 1 columns, 4 partitions" in context_text(first)
    assert "DuckDB relation 'rel': 3 columns" in rel_text and "rows: 1,000" in rel_text
    assert "  Trips over the past 24-hours (midnight to 11:59pm): VARCHAR; no nulls; ≈7 distinct" in rel_text
    assert "  price: DECIMAL" in rel_text and "100 nulls (10.0%)" in rel_text
    assert "Dask DataFrame 'ddf': 1 columns, 4 partitions" in ddf_text
    assert "  v: float64; no nulls; min 0, max 99; mean 49.5; ≈100 distinct" in ddf_text
