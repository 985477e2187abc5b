"""The provider's secrets held by the Jupyter server, out of the environment its kernels inherit.

Jupyter Server starts a kernel with a copy of its own `os.environ` (plus `JPY_SESSION_NAME`),
so a key exported before `jupyter lab` used to sit in every kernel's `os.environ`, where any
approved `run_code`, any user `@tool` or any imported library could read it. When our server
extension loads, it moves the secret provider settings (`LLM_API_KEY`, any other `LLM_*` whose
name looks secret, and `LLM_BASE_URL` when it carries credentials) from `os.environ` into this
module, and sets the non-secret marker `AGENTIK_PROVIDER_IN_SERVER=1` in their place. Kernels the
server starts from then on inherit the marker and no key; their agent sends each model call to the
server's chat route (core/transport.py), which calls the provider with what is held here.

What this does and does not change: a kernel's `os.environ` (and its own `/proc/self/environ`,
since the kernel is started with the copy) has no key. The server process keeps the key in memory,
and Linux keeps the environment a process *started* with in `/proc/<pid>/environ` whatever
`os.environ` later does; the `jupyter` launcher that started the server keeps it too. Code running
as the same OS user can read those, so this is not a boundary against a determined same-user
process: it keeps the key out of the place notebook code and libraries look (`os.environ`).

`AGENTIK_KEY_IN_KERNELS=1` in the server's environment keeps the old behaviour (the key stays in
the environment and kernels inherit it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping

from agentik_jupyter.security.scrub import KEY_VARIABLE, SECRET_NAME, hold_secrets
from agentik_jupyter.security.urls import url_secrets

MARKER = "AGENTIK_PROVIDER_IN_SERVER"
"""Set to "1" in the environment kernels inherit when the server holds the provider's key."""
OPT_OUT = "AGENTIK_KEY_IN_KERNELS"
"""Set to 1 (or true/yes/on) in the server's environment to leave the key where it is."""
BASE_URL = "LLM_BASE_URL"
_PROVIDER_NAME = re.compile(r"^LLM_")
_TRUE = {"1", "true", "yes", "on"}

_held: dict[str, str] = {}


def secret_names(environ: Mapping[str, str]) -> list[str]:
    """The provider settings in `environ` that are secrets: the key, other `LLM_*` names that look
    secret (`LLM_API_TOKEN`...), and the base URL when it holds a password or a query key."""
    names = []
    for name, value in environ.items():
        if not _PROVIDER_NAME.match(name) or not value.strip():
            continue
        if name == KEY_VARIABLE or SECRET_NAME.search(name):
            names.append(name)
        elif name == BASE_URL and "://" in value and url_secrets(value.strip(), False, 1):
            names.append(name)
    return names


def take_provider_secrets(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Move the provider's secrets out of `environ` (the server's `os.environ`) into this module.

    Returns the names moved (none: no key was set, or AGENTIK_KEY_IN_KERNELS=1). Idempotent: a
    second load finds nothing left to take and keeps what the first took.
    """
    env = os.environ if environ is None else environ
    if env.get(OPT_OUT, "").strip().lower() in _TRUE:
        return []
    if not (env.get(KEY_VARIABLE) or "").strip():
        return []  # nothing to hold: kernels get what the user sets in them, as before
    names = secret_names(env)
    taken = {name: env.pop(name) for name in names}
    _held.update(taken)
    hold_secrets(taken)  # the server's scrubber and masked logs still know the values
    env[MARKER] = "1"
    return names


def held_names() -> list[str]:
    """The names the server holds (never their values)."""
    return sorted(_held)


def provider_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the chat route reads its provider settings from: the process's own,
    with the held secrets put back (only in this dict, never in `os.environ`)."""
    merged = dict(os.environ if environ is None else environ)
    merged.update(_held)
    merged.pop(MARKER, None)
    return merged
