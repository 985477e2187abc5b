"""Capture what one `run_code` execution prints and displays, and nothing else.

Swapping `sys.stdout` for a buffer across an `await` captures every other task's output
too (the user's cell, another turn). Instead, while any capture is active, sys.stdout,
sys.stderr and the shell's display publisher are routers: each write goes to the capture
of the context it was made in (a ContextVar set by the execution, so only its own task,
and tasks it starts while it runs), and everything else goes where it always went. The
routers are removed when the last capture ends, unless someone replaced them meanwhile.
"""

from __future__ import annotations

import contextvars
import io
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

_current: contextvars.ContextVar[Capture | None] = contextvars.ContextVar("agentik_run_code_capture", default=None)


class Capture:
    """The output of one execution: stdout, stderr and display() calls."""

    def __init__(self) -> None:
        from IPython.core.displaypub import CapturingDisplayPublisher

        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.publisher = CapturingDisplayPublisher()
        self.open = False

    @property
    def displays(self) -> list[dict[str, Any]]:
        found = (o.get("data") if isinstance(o, dict) else getattr(o, "data", None) for o in self.publisher.outputs)
        return [d for d in found if isinstance(d, dict)]


def _active() -> Capture | None:
    capture = _current.get()
    return capture if capture is not None and capture.open else None


class _StreamRouter:
    """Stands in for sys.stdout/sys.stderr: a capturing context's writes go to its buffer."""

    def __init__(self, target: Any, name: str) -> None:
        self._target = target
        self._name = name

    def write(self, text: str) -> int:
        capture = _active()
        if capture is None:
            return self._target.write(text)
        return getattr(capture, self._name).write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if _active() is None:
            self._target.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class _PublisherRouter:
    """Stands in for shell.display_pub: a capturing context's displays go to its publisher."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
        capture = _active()
        if capture is None:
            self._target.publish(data, metadata, *args, **kwargs)
        else:
            capture.publisher.publish(
                data, metadata, transient=kwargs.get("transient"), update=kwargs.get("update", False)
            )

    def clear_output(self, wait: bool = False) -> None:
        capture = _active()
        if capture is None:
            self._target.clear_output(wait)
        else:
            capture.publisher.outputs.clear()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class _Routers:
    """Installs the routers on the first active capture and removes them after the last."""

    def __init__(self) -> None:
        self.count = 0
        self.installed: tuple[Any, Any, Any, Any] | None = None  # stdout, stderr, publisher, shell

    def acquire(self, shell: InteractiveShell) -> None:
        if self.count == 0 or not self._in_place(shell):
            self._install(shell)
        self.count += 1

    def release(self) -> None:
        self.count -= 1
        if self.count > 0 or self.installed is None:
            return
        out, err, pub, shell = self.installed
        if isinstance(sys.stdout, _StreamRouter) and sys.stdout is out:
            sys.stdout = out._target
        if isinstance(sys.stderr, _StreamRouter) and sys.stderr is err:
            sys.stderr = err._target
        if shell.display_pub is pub:
            shell.display_pub = pub._target
        self.installed = None

    def _in_place(self, shell: InteractiveShell) -> bool:
        return (
            self.installed is not None
            and sys.stdout is self.installed[0]
            and sys.stderr is self.installed[1]
            and shell.display_pub is self.installed[2]
        )

    def _install(self, shell: InteractiveShell) -> None:
        out = sys.stdout if isinstance(sys.stdout, _StreamRouter) else _StreamRouter(sys.stdout, "stdout")
        err = sys.stderr if isinstance(sys.stderr, _StreamRouter) else _StreamRouter(sys.stderr, "stderr")
        pub = (
            shell.display_pub
            if isinstance(shell.display_pub, _PublisherRouter)
            else _PublisherRouter(shell.display_pub)
        )
        sys.stdout, sys.stderr, shell.display_pub = out, err, pub  # type: ignore[assignment]  # a stand-in
        self.installed = (out, err, pub, shell)


_routers = _Routers()


class capturing:
    """`with capturing(shell) as capture:` routes this context's output into `capture`."""

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.capture = Capture()
        self._token: contextvars.Token[Capture | None] | None = None

    def __enter__(self) -> Capture:
        _routers.acquire(self.shell)
        self.capture.open = True
        self._token = _current.set(self.capture)
        return self.capture

    def __exit__(self, *exc: object) -> None:
        self.capture.open = False  # tasks started inside keep the ContextVar: their later output goes out
        if self._token is not None:
            _current.reset(self._token)
        _routers.release()
