"""The demo MCP server, after leaving a mark: `python marking_server.py OUT [--spawn]`.

It writes `{"pid": <its pid>, "child": <pid or null>}` to OUT before serving, so a
test can tell whether (and when) the server was started; with `--spawn` it first
starts a long `sleep` child, a descendant that must not outlive the kernel either.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from demo_server import server  # noqa: E402

if __name__ == "__main__":
    out = Path(sys.argv[1])
    child = subprocess.Popen(["sleep", "300"]).pid if "--spawn" in sys.argv[2:] else None
    out.write_text(json.dumps({"pid": os.getpid(), "child": child}))
    server.run()
