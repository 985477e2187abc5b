"""The environment the example notebooks are executed in, by nbval and by the refresh script.

The notebooks start the offline demo model themselves when LLM_API_KEY is unset, so
their outputs are deterministic; the sessions file goes to a throwaway path.
"""

from __future__ import annotations

import os
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def notebook_env(db_path: Path, notebook: Path) -> dict[str, str]:
    """Also JPY_SESSION_NAME, as Jupyter Server sets it, so read_notebook finds the file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "AGENTIK_", "JPY_"))}
    env.update(
        {
            "AGENTIK_WAIT": "1",
            "AGENTIK_APPROVE": "auto",
            "AGENTIK_DB_PATH": str(db_path),
            "JPY_SESSION_NAME": str(notebook),
        }
    )
    return env
