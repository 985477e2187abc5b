"""Asking the JupyterLab extension about the live notebook: the one request/answer path.

Read its cells, insert a proposed cell (notebook/cells.py), propose an edit, re-run cells.
The kernel opens a comm to `agentik.notebook` per request; the extension answers by
opening `agentik.notebook.reply` with the same `request_id`. The answer travels on a comm
the frontend opens, not on the kernel's: every other client connected to the kernel (a
console, a second browser) closes a comm whose target it does not know, and a close must
not hide the extension's answer.
A proposal is answered twice: `shown` at once (the diff is on the cell), then `result`
when the user decides. No `shown`/`result` within REPLY_TIMEOUT_S means no extension
(VS Code, nbclient, a console), and the callers fall back to the saved file. Once a page with the
extension has spoken to this kernel (it asked over `agentik.control` when it connected, answered
the hello or a request), a page is waited for up to PAGE_WAIT_S instead, also when it speaks while
a request waits (it connected just then) and when a console closes the request meanwhile: on a
loaded machine a page can take seconds to answer, and a fallback then puts the agent's cell where
no page shows it.

One answer per request, whatever the number of pages (two tabs, collaborators): every page
with the extension sees the comm. The request names the page that asked (`page`: the client
session id of the execute_request or comm message that started the turn, kept in PAGE); that
page answers, the others answer `standby` with their own id. When no page is named, or the
named one stays silent (closed, reloaded) for FALLBACK_S, the kernel asks again, naming a page
that said standby (a focused one first). The first complete answer wins and fixes the page
whose decision counts; any other answer is ignored, never taken for the decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from agentik_jupyter.errors import NoFrontend

REQUEST_TARGET = "agentik.notebook"
REPLY_TARGET = "agentik.notebook.reply"
REPLY_TIMEOUT_S = 3.0  # the extension answers in milliseconds; this only bounds a frontend without it
CLOSED_GRACE_S = 1.0  # a client without the extension closed our comm: wait this long for the answer
PAGE_WAIT_S = 15.0  # a page with the extension spoke here: its answer may be seconds late on a loaded machine
NO_FRONTEND_MEMORY_S = 60.0  # after no answer, go straight to the fallback for this long
FALLBACK_S = 3.0  # the named page is silent this long while others stood by: name one of them
FOCUS_WAIT_S = 0.25  # no page named: how long an unfocused page's standby waits for a focused one's

PAGE: ContextVar[str | None] = ContextVar("agentik_asking_page", default=None)
"""The page (client session id) whose turn this is: requests of the turn name it."""


def page_of(msg: dict[str, Any] | None) -> str | None:
    """The client session id a Jupyter message came from (each page's kernel connection has its own)."""
    session = ((msg or {}).get("header") or {}).get("session")
    return session if isinstance(session, str) and session else None


def asking_page(shell: Any = None) -> str | None:
    """The page that sent the request the kernel is handling now (a cell's run, a widget click)."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    try:
        return page_of(kernel.get_parent("shell")) if kernel is not None else None
    except Exception:
        return None


@contextlib.contextmanager
def asked_from(page: str | None) -> Iterator[None]:
    """Requests made inside the block (and tasks created there) name `page`."""
    token = PAGE.set(page)
    try:
        yield
    finally:
        PAGE.reset(token)


CLOSED: dict[str, Any] = {"phase": "closed"}  # a client without the extension closed a request comm


class _Pending:
    """The replies to one request, handed over from whichever thread the comm callback runs on."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def put(self, reply: dict[str, Any]) -> None:
        self.loop.call_soon_threadsafe(self.replies.put_nowait, reply)

    def closed_later(self) -> None:
        """A close is taken as "no extension here" only after a grace: the answer may still come."""
        self.loop.call_soon_threadsafe(self.loop.call_later, CLOSED_GRACE_S, self.replies.put_nowait, CLOSED)


class _Request:
    """One request's comms (one per page it named) and the pages that stood by."""

    def __init__(self, action: str, data: dict[str, Any], pending: _Pending, create_comm: Callable[..., Any]) -> None:
        self.action, self.data, self.pending, self.create_comm = action, data, pending, create_comm
        self.request_id = uuid.uuid4().hex
        self.comms: list[Any] = []
        self.standby: dict[str, bool] = {}  # page -> focused
        self.named: list[str | None] = []

    def send(self, page: str | None) -> None:
        self.named.append(page)
        comm = self.create_comm(
            target_name=REQUEST_TARGET,
            data={"action": self.action, "request_id": self.request_id, "page": page, **self.data},
        )
        comm.on_close(lambda _msg: self.pending.closed_later())
        self.comms.append(comm)

    def next_page(self) -> str | None:
        """A page that stood by and was not named yet, focused ones first."""
        left = [(not focused, page) for page, focused in self.standby.items() if page not in self.named]
        return min(left)[1] if left else None

    def close(self, outcome: dict[str, Any] | None) -> None:
        """Close the comms, telling every page how the request ended (the pages that stood by follow it)."""
        said = {k: outcome[k] for k in ("status", "cell_id") if outcome and k in outcome}
        for comm in self.comms:
            comm.close(data={"outcome": said} if said else None)


class FrontendNotebook:
    """The conversation with the extension; one instance per kernel process."""

    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}
        self._registered = False
        self._missing_until = 0.0
        self._page_spoke = False

    @property
    def known_missing(self) -> bool:
        return time.monotonic() < self._missing_until

    @property
    def page_spoke(self) -> bool:
        """A page with our extension has spoken to this kernel (its requests then wait PAGE_WAIT_S)."""
        return self._page_spoke

    def page_seen(self) -> None:
        """A page with our extension spoke (it opened the notebook again): ask pages again at once,
        not only once the memory of an earlier silence runs out, and wait for them as for a page."""
        self._missing_until = 0.0
        self._page_spoke = True

    def _patience(self) -> float:
        """How long a page gets to answer: PAGE_WAIT_S once one spoke here (if it has gone since, one
        request waits that long, and the next minute's go to the fallback at once); else the short
        REPLY_TIMEOUT_S, or a frontend without the extension (VS Code, nbclient) would wait on each."""
        return PAGE_WAIT_S if self._page_spoke else REPLY_TIMEOUT_S

    async def ask(
        self,
        action: str,
        decision_timeout: float | None = None,
        on_shown: Callable[[dict[str, Any]], None] | None = None,
        **data: Any,
    ) -> dict[str, Any]:
        """Send a request; the extension's final `result` reply (after `shown`, if any, given to `on_shown`).

        Raises NoFrontend when nothing answers in time, and TimeoutError when a shown
        proposal is not decided within `decision_timeout` seconds.
        """
        if self.known_missing:
            raise NoFrontend("no notebook extension answered recently")
        try:
            from comm import create_comm, get_comm_manager
        except ImportError:
            raise NoFrontend("no comm support in this kernel") from None
        if not self._registered:
            get_comm_manager().register_target(REPLY_TARGET, self._on_reply)
            self._registered = True
        pending = _Pending(asyncio.get_running_loop())
        request = _Request(action, data, pending, create_comm)
        self._pending[request.request_id] = pending
        outcome: dict[str, Any] | None = None
        try:
            request.send(PAGE.get())
            first = await self._first(request)
            self._missing_until = 0.0
            if first.get("phase") != "shown":
                outcome = first
                return first
            if on_shown is not None:
                on_shown(first)
            reply = await self._decision(pending, first.get("page"), decision_timeout)
            if reply is None:
                raise TimeoutError("the proposal was not decided in time")
            outcome = reply
            return reply
        finally:
            self._pending.pop(request.request_id, None)
            request.close(outcome)

    async def _first(self, request: _Request) -> dict[str, Any]:
        """The first complete answer (`shown` or `result`) from whichever page was named last."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline: float | None = None  # None: the patience from the start (a page may speak meanwhile)

        def end() -> float:
            return started + self._patience() if deadline is None else deadline

        while True:
            timeout = end() - loop.time()
            if request.named[-1] is None and request.standby:
                # no page named: a focused page's standby is taken at once, another's after a short wait
                if any(request.standby.values()):
                    timeout = 0.0
                else:
                    timeout = min(timeout, FOCUS_WAIT_S)
            reply = await self._next(request.pending, max(timeout, 0.0))
            if reply is None and deadline is None and not request.standby and loop.time() < end():
                continue  # a page spoke while this waited: it gets a page's patience
            if reply is CLOSED and not request.standby and self._page_spoke:
                continue  # a console closed it; the page that spoke here may still answer
            if reply is None or (reply is CLOSED and request.standby):
                if reply is CLOSED:
                    continue  # a client without the extension closed the comm; the pages that stood by remain
                page = request.next_page()
                if page is None:
                    self._missing_until = time.monotonic() + NO_FRONTEND_MEMORY_S
                    raise NoFrontend("the notebook extension did not answer")
                request.send(page)  # the named page is silent (or none was named): ask one that stood by
                # it answered a moment ago: when no other page stood by, it gets a page's patience
                deadline = loop.time() + (FALLBACK_S if request.next_page() is not None else PAGE_WAIT_S)
                continue
            if reply is CLOSED:
                self._missing_until = time.monotonic() + NO_FRONTEND_MEMORY_S
                raise NoFrontend("the notebook extension did not answer")
            phase = reply.get("phase")
            if phase == "standby":
                page = reply.get("page")
                if isinstance(page, str) and page:
                    request.standby.setdefault(page, bool(reply.get("focused")))
                    if request.named[-1] is not None:
                        deadline = min(end(), loop.time() + FALLBACK_S)
                continue
            if phase in ("shown", "result"):
                return reply

    @staticmethod
    async def _decision(pending: _Pending, page: Any, timeout: float | None) -> dict[str, Any] | None:
        """The decision of the page that showed the proposal; other pages' answers are not it."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            left = None if deadline is None else max(deadline - loop.time(), 0.0)
            reply = await FrontendNotebook._next(pending, left)
            if reply is None:
                return None
            if reply.get("phase") == "result" and reply.get("page") == page:
                return reply

    @staticmethod
    async def _next(pending: _Pending, timeout: float | None) -> dict[str, Any] | None:
        try:
            return await asyncio.wait_for(pending.replies.get(), timeout)
        except TimeoutError:
            return None

    def _on_reply(self, comm: Any, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data") or {}
        self._page_spoke = True
        pending = self._pending.get(str(data.get("request_id")))
        if pending is not None:
            pending.put(dict(data))


frontend = FrontendNotebook()
