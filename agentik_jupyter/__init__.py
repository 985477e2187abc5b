"""agentik_jupyter: an LLM agent that lives in the Jupyter kernel.

`%load_ext agentik_jupyter` registers the magics. Importing this package is kept
cheap: the agent's machinery loads on the first turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentik_jupyter._version import __version__

__all__ = [
    "tool",
    "current_session",
    "provider_configured",
    "load_ipython_extension",
    "unload_ipython_extension",
    "__version__",
]

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from agentik_jupyter.core.session import Session
    from agentik_jupyter.tools.registry import tool


def __getattr__(name: str) -> Any:
    if name == "tool":
        # load time: importing the package stays cheap; the agent loads on first use
        from agentik_jupyter.tools.registry import tool

        return tool
    raise AttributeError(name)


def current_session() -> Session | None:
    """The Session the next `%%agent` turn goes to in this kernel (None before the first turn)."""
    # load time: importing the package stays cheap; the agent loads on first use
    from IPython import get_ipython

    from agentik_jupyter.kernel.agent import get_agent

    shell = get_ipython()
    return get_agent(shell).session if shell is not None else None


def provider_configured() -> bool:
    """Whether this kernel has a provider to call: a key set in the kernel, or a Jupyter server that
    holds the key (it takes it out of its kernels' environment, so `LLM_API_KEY` alone can't tell)."""
    # load time: importing the package stays cheap; the agent loads on first use
    from agentik_jupyter.core.transport import provider_configured as configured

    return configured()


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "agentik_jupyter.server"}]


def load_ipython_extension(ipython: InteractiveShell) -> None:
    # load time: importing the package stays cheap; the agent loads on first use
    from agentik_jupyter.kernel.extension import load
    from agentik_jupyter.notebook import page as frontend

    load(ipython)
    frontend.hello()


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    # load time: importing the package stays cheap; the agent loads on first use
    from agentik_jupyter.kernel.extension import unload
    from agentik_jupyter.notebook import page as frontend

    unload(ipython)
    frontend.forget()
