"""`%agent config`: the LLM_* and AGENTIK_* settings, the key only as set or not set."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agentik_jupyter.core.transport import KEY_IN_KERNEL, KEY_IN_SERVER, key_location
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.security.urls import redact_urls

if TYPE_CHECKING:
    from agentik_jupyter.kernel.agent import KernelAgent

SETTINGS = [
    "LLM_PROVIDER",
    "LLM_MODEL",
    "LLM_BASE_URL",
    "LLM_STREAM_USAGE",
    "LLM_CACHE_CONTROL",
    "LLM_PROMPT_CACHE_KEY",
    "AGENTIK_SYSTEM_PROMPT",
    "AGENTIK_WAIT",
    "AGENTIK_APPROVE",
    "AGENTIK_MODE",
    "AGENTIK_APPROVAL_TIMEOUT",
    "AGENTIK_DB_PATH",
    "AGENTIK_CONTEXT_TOKENS",
    "AGENTIK_PRICES",
    "AGENTIK_MCP_CONFIG",
    "AGENTIK_TRANSPORT",
    "AGENTIK_REWIND_BUDGET",
    "AGENTIK_PROVIDER_IN_SERVER",
    "AGENTIK_KEY_SOURCE",
]


async def config_command(agent: KernelAgent, args: list[str]) -> None:
    where = key_location()
    key = "set" if where == KEY_IN_KERNEL else f"not set ({where})" if where == KEY_IN_SERVER else "not set"
    print(f"{'LLM_API_KEY':<26} {key}")
    for name in SETTINGS:
        value = os.environ.get(name)
        print(f"{name:<26} {scrub(redact_urls(value)) if value is not None else '-'}")
