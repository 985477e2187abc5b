"""The provider's secrets held by the Jupyter server, out of the environment its kernels inherit.

Jupyter Server starts a kernel with a copy of its own `os.environ` (plus `JPY_SESSION_NAME`),
so a key exported before `jupyter lab` used to sit in every kernel's `os.environ`, where any
approved `run_code`, any user `@tool` or any imported library could read it. When our server
extension loads, it moves the secret provider settings (`LLM_API_KEY`, any other `LLM_*` whose
name looks secret, and `LLM_BASE_URL` when it carries credentials) from `os.environ` into this
module, and sets the non-secret marker `AGENTIK_PROVIDER_IN_SERVER=1` in their place. Kernels the
server starts from then on inherit the marker and no key; their agent sends each model call to the
server's chat route (core/transport.py), which calls the provider with what is held here.

The key can also come from the server's config (`c.AgentikJupyter.api_key`) or a file
(`LLM_API_KEY_FILE`), which keep it out of every environment (server/key_sources.py); the marker's
companion `AGENTIK_KEY_SOURCE` tells kernels which, so `%agent status` can say who else could read it.

What this does and does not change: a kernel's `os.environ` (and its own `/proc/self/environ`,
since the kernel is started with the copy) has no key. Linux keeps the environment and arguments a
process *started* with in `/proc/<pid>/environ` and `/cmdline` whatever `os.environ` later does, so
the server also wipes the secrets there and makes itself non-dumpable (security/proc_hide.py). What
no code of ours can change: the process that started the server (a shell, a container's first
process) keeps its own copy of an exported key, root reads everything, and the server holds the key
in memory. Use the config or the file to keep it out of every environment.

`AGENTIK_KEY_IN_KERNELS=1` in the server's environment keeps the old behaviour (the key stays in
the environment and kernels inherit it).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, MutableMapping
from typing import Any

from traitlets.config import Config

from agentik_jupyter.core.transport import KEY_SOURCE, SAFER_WAYS, SOURCE_ENVIRONMENT, SOURCE_UNREADABLE
from agentik_jupyter.errors import ConfigurationError
from agentik_jupyter.security.proc_hide import Hidden, hide_in_proc
from agentik_jupyter.security.scrub import KEY_VARIABLE, LOCATION_NAME, SECRET_NAME, hold_secrets
from agentik_jupyter.security.urls import url_secrets
from agentik_jupyter.server.key_sources import KEY_FILE, ServerKey, find_key

MARKER = "AGENTIK_PROVIDER_IN_SERVER"
"""Set to "1" in the environment kernels inherit when the server holds the provider's key."""
OPT_OUT = "AGENTIK_KEY_IN_KERNELS"
"""Set to 1 (or true/yes/on) in the server's environment to leave the key where it is."""
BASE_URL = "LLM_BASE_URL"
_PROVIDER_NAME = re.compile(r"^LLM_")
_TRUE = {"1", "true", "yes", "on"}

_held: dict[str, str] = {}
_from_environ: dict[str, str] = {}
_source = ""
_problem = ""


def secret_names(environ: Mapping[str, str]) -> list[str]:
    """The provider settings in `environ` that are secrets: the key, other `LLM_*` names that look
    secret (`LLM_API_TOKEN`...) but not a place (`LLM_API_KEY_FILE`), and the base URL when it holds
    a password or a query key."""
    names = []
    for name, value in environ.items():
        if not _PROVIDER_NAME.match(name) or not value.strip():
            continue
        if name == KEY_VARIABLE or (SECRET_NAME.search(name) and not LOCATION_NAME.search(name)):
            names.append(name)
        elif name == BASE_URL and "://" in value and url_secrets(value.strip(), False, 1):
            names.append(name)
    return names


def take_provider_secrets(environ: MutableMapping[str, str] | None = None, found: ServerKey | None = None) -> list[str]:
    """Move the provider's secrets out of `environ` (the server's `os.environ`) into this module, with
    the key `found` in the server's config or key file (by default: looked for in `environ` only).

    Returns the names held (none: no key anywhere, or AGENTIK_KEY_IN_KERNELS=1 with a key only in the
    environment). Idempotent: a second load finds nothing left to take and keeps what the first took.
    """
    global _source, _problem
    env = os.environ if environ is None else environ
    found = find_key(None, env) if found is None else found
    if found is None:
        return []  # nothing to hold: kernels get what the user sets in them, as before
    opted_out = env.get(OPT_OUT, "").strip().lower() in _TRUE
    if opted_out and found.source == SOURCE_ENVIRONMENT:
        return []
    names = [] if opted_out else secret_names(env)
    taken = {name: env.pop(name) for name in names}
    env.pop(KEY_FILE, None)  # (read once; kernels have no use for the path)
    _from_environ.update(taken)
    hold_secrets(taken)  # the server's scrubber and masked logs still know the values
    if found.key:
        taken[KEY_VARIABLE] = found.key  # the config's or the file's key wins over an exported one
        hold_secrets({KEY_VARIABLE: found.key})
    _held.update(taken)
    _source, _problem = (SOURCE_UNREADABLE, found.problem) if found.problem else (found.source, "")
    env[MARKER] = "1"
    env[KEY_SOURCE] = _source
    return sorted(taken)


def hold_provider_key(config: Config | None, log: logging.Logger | logging.LoggerAdapter[Any]) -> None:
    """When the server extension loads: find the key (config, file, environment), take the provider's
    secrets out of what kernels inherit, then out of what /proc shows of the server; log what it did."""
    try:
        found = find_key(config, os.environ)
    except Exception as exc:  # a config value of the wrong type: say so, start without a key
        log.error("agentik_jupyter: cannot read AgentikJupyter.api_key: %s", type(exc).__name__)
        found = None
    taken = take_provider_secrets(found=found)
    if found is not None and found.problem:
        log.error("agentik_jupyter: %s; turns fail until it is fixed and the server restarted", found.problem)
    if taken:
        log.info(
            "agentik_jupyter: the server holds %s (key from: %s); kernels it starts have none and use its chat route",
            ", ".join(taken),
            key_source(),
        )
    if key_source() == SOURCE_ENVIRONMENT:
        log.info(
            "agentik_jupyter: processes of the same user can read an exported key in the environment of "
            "whatever started this server; safer: %s",
            SAFER_WAYS,
        )
    hidden = hide_held_secrets()
    if hidden.environ:
        log.info("agentik_jupyter: wiped %s in /proc/<pid>/environ of the server", ", ".join(hidden.environ))
    if hidden.cmdline:
        log.info("agentik_jupyter: wiped %d secret(s) in /proc/<pid>/cmdline of the server", hidden.cmdline)
    if hidden.undumpable:
        log.debug("agentik_jupyter: the server is non-dumpable: its /proc files and memory are root's")
    for problem in hidden.problems:
        log.warning("agentik_jupyter: %s", problem)


def hide_held_secrets() -> Hidden:
    """Wipe what the server holds from its own /proc environ and cmdline and make it non-dumpable
    (kept apart from taking them, so a unit test can take from a dict without touching its process)."""
    if not _held and not _problem:
        return Hidden()
    return hide_in_proc(list(_from_environ), list(_held.values()))


def key_source() -> str:
    """Where the held key came from (a SOURCE_* value), "" when the server holds none."""
    return _source


def held_names() -> list[str]:
    """The names the server holds (never their values)."""
    return sorted(_held)


def provider_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the chat route reads its provider settings from: the process's own,
    with the held secrets put back (only in this dict, never in `os.environ`). Raises
    ConfigurationError naming the key file the server could not read."""
    if _problem:
        raise ConfigurationError(f"{_problem}. Fix it and restart the Jupyter server.")
    merged = dict(os.environ if environ is None else environ)
    merged.update(_held)
    merged.pop(MARKER, None)
    merged.pop(KEY_SOURCE, None)
    return merged
