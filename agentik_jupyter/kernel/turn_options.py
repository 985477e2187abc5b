"""The options of `%%agent`, parsed the same way by the magic and the --wait transformer."""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, NoReturn

from agentik_jupyter.errors import OptionsError

if TYPE_CHECKING:
    from agentik_jupyter.types import AgentMode

USAGE = "%%agent [--wait] [--new] [--temp] [--session ID] [--model NAME] [--mode ask|agent|auto|plan]"


@dataclass(frozen=True)
class TurnOptions:
    wait: bool = False
    new: bool = False
    temp: bool = False
    session: str | None = None
    model: str | None = None
    mode: AgentMode | None = None  # this turn's only; the session's mode stays


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise OptionsError(f"{message}. Usage: {USAGE}")


_parser = _Parser(prog="%%agent", add_help=False)
_parser.add_argument("--wait", action="store_true")
_parser.add_argument("--no-wait", action="store_true")
_parser.add_argument("--new", action="store_true")
_parser.add_argument("--temp", action="store_true")
_parser.add_argument("--session")
_parser.add_argument("--model")
_parser.add_argument("--mode")


def wait_by_default() -> bool:
    return os.environ.get("AGENTIK_WAIT", "").strip().lower() in {"1", "true", "yes", "on"}


def parse_options(line: str) -> TurnOptions:
    options, no_wait = _parsed(line)
    wait = (options.wait or wait_by_default()) and not no_wait
    return options if wait == options.wait else replace(options, wait=wait)


@lru_cache(maxsize=64)
def _parsed(line: str) -> tuple[TurnOptions, bool]:
    """The line's options as written (`--wait` as given) and its `--no-wait`: a notebook's cells
    repeat the same few lines, and argparse takes longer than the rest of a turn's start."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise OptionsError(f"{exc}. Usage: {USAGE}") from None
    args = _parser.parse_args(words)
    mode = None
    if args.mode is not None:
        # load time: %load_ext stays cheap (modes reads the types, which import pydantic)
        from agentik_jupyter.tools.modes import parse_mode

        mode = parse_mode(args.mode)
    options = TurnOptions(
        wait=args.wait, new=args.new, temp=args.temp, session=args.session, model=args.model, mode=mode
    )
    return options, args.no_wait
