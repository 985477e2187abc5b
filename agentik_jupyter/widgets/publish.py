"""Displaying a turn's output without a needless wait on the kernel's IOPub thread.

Before each display ipykernel flushes stdout and stderr, so earlier prints come first;
each flush hands a task to the IOPub thread and blocks until it ran, whether or not
anything was printed (about 0.4 ms each, two per display, two displays a turn). When
neither stream holds unsent output there is nothing to keep in order, and the display
goes out without the round trip; otherwise ipykernel's flush runs as before.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _pending(stream: Any) -> bool:
    """Whether `stream` may hold output not yet sent (True for any stream we cannot tell about)."""
    flags = [getattr(stream, name, None) for name in ("_flush_pending", "_subprocess_flush_pending")]
    return not all(flag is False for flag in flags)


@contextmanager
def without_idle_flush() -> Iterator[None]:
    """Within this block, a display skips ipykernel's stream flush when nothing is waiting in them."""
    from IPython import get_ipython

    shell = get_ipython()
    publisher = getattr(shell, "display_pub", None)
    if publisher is None or not hasattr(publisher, "_flush_streams") or _pending(sys.stdout) or _pending(sys.stderr):
        yield
        return
    publisher._flush_streams = _nothing  # shadows the method on this instance, for this call only
    try:
        yield
    finally:
        del publisher._flush_streams


def _nothing() -> None:
    return None


def display_now(obj: Any, **kwargs: Any) -> Any:
    """`IPython.display.display(obj, **kwargs)`, without the idle flush."""
    from IPython.display import display

    with without_idle_flush():
        return display(obj, **kwargs)


def update_now(handle: Any, bundle: dict[str, Any]) -> None:
    """Replace what the display `handle` shows with `bundle`, without the idle flush."""
    with without_idle_flush():
        handle.update(bundle, raw=True)


def kernel_publisher() -> Any:
    """The kernel's display publisher (None in a terminal IPython, which has no IOPub)."""
    from IPython import get_ipython

    publisher = getattr(get_ipython(), "display_pub", None)
    if getattr(publisher, "session", None) is None or getattr(publisher, "pub_socket", None) is None:
        return None
    return publisher


def can_stream() -> bool:
    """Whether `publish_stream` reaches a frontend as a stream output (a kernel runs this)."""
    return kernel_publisher() is not None


def publish_stream(text: str, name: str = "stdout") -> None:
    """Send `text` as a stream message (`name`: stdout or stderr) of the running cell, at once.

    `sys.stdout` would hold it for its IOPub thread's next flush (up to 0.2 s) and mix it with
    the user's prints; this goes out as a display does: the display publisher's session,
    socket and parent (the cell whose context calls it), through its hooks."""
    publisher = kernel_publisher()
    if publisher is None:
        (sys.stderr if name == "stderr" else sys.stdout).write(text)  # (no kernel: a terminal IPython)
        return
    session = publisher.session
    msg = session.msg("stream", {"name": name, "text": text}, parent=publisher.parent_header)
    for hook in getattr(publisher, "_hooks", ()):
        msg = hook(msg)
        if msg is None:
            return
    session.send(publisher.pub_socket, msg, ident=f"stream.{name}".encode())


def clear_outputs_at_next() -> None:
    """Clear the running cell's outputs when its next output comes (no flicker in between)."""
    from IPython.display import clear_output

    with without_idle_flush():
        clear_output(wait=True)
