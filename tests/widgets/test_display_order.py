"""A turn's displays skip ipykernel's stream flush only when no output waits, so order is kept.

In a real kernel: with nothing printed, `display_now` publishes without the flush (no wait on
the IOPub thread); after a print or a write to stderr it flushes first, so the frontend gets
the printed text before the display, as with IPython's own `display`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kernel_support import RawKernel, kernel_env

pytestmark = pytest.mark.timeout(120)

CELL = """
import sys
from agentik_jupyter.widgets.publish import display_now
pub = get_ipython().display_pub
flushes = []
method = type(pub)._flush_streams
type(pub)._flush_streams = lambda self: (flushes.append(1), method(self))[1]
try:
    display_now({"text/plain": "shown with nothing printed"}, raw=True)
    idle = len(flushes)
    print("printed first")
    display_now({"text/plain": "shown second"}, raw=True)
    sys.stderr.write("written third\\n")
    display_now({"text/plain": "shown fourth"}, raw=True)
finally:
    type(pub)._flush_streams = method
print("flushes", idle, len(flushes) - idle, "override left:", "_flush_streams" in vars(pub))
"""


def test_displays_keep_their_place_after_printed_output(tmp_path: Path) -> None:
    kernel = RawKernel(kernel_env(), tmp_path)
    try:
        ex = kernel.execute(CELL)
    finally:
        kernel.close()
    assert ex.ok, ex.text
    seen = []
    for m in ex.messages:
        if m["msg_type"] == "stream":
            seen += [line for line in m["content"]["text"].splitlines() if line]
        elif m["msg_type"] == "display_data":
            seen.append(m["content"]["data"]["text/plain"])
    assert seen == [
        "shown with nothing printed",
        "printed first",
        "shown second",
        "written third",
        "shown fourth",
        "flushes 0 2 override left: False",
    ]
