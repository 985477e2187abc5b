"""Open and close a comm target of ours in this kernel: the control, turns and other targets share it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentik_jupyter.core import mainloop


def register_target(shell: Any, target: str, opened: Callable[[Any, Any, dict[str, Any]], None]) -> bool:
    """Open `target`, handled by `opened(shell, comm, msg)` (False outside a kernel with comms)."""
    if getattr(shell, "kernel", None) is None:
        return False
    try:
        from comm import get_comm_manager
    except ImportError:
        return False
    mainloop.capture()
    get_comm_manager().register_target(target, lambda comm, msg: opened(shell, comm, msg))
    return True


def unregister_target(shell: Any, target: str) -> None:
    """Close `target` if it is open; outside a kernel with comms there is nothing to close."""
    if getattr(shell, "kernel", None) is None:
        return
    try:
        from comm import get_comm_manager
    except ImportError:
        return
    try:
        get_comm_manager().unregister_target(target, None)  # type: ignore[arg-type]
    except KeyError:
        pass
