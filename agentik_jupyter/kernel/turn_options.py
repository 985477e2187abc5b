"""The options of `%%agent`, parsed the same way by the magic and the --wait transformer."""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass
from typing import NoReturn

from agentik_jupyter.errors import OptionsError

USAGE = "%%agent [--wait] [--new] [--temp] [--session ID] [--model NAME]"


@dataclass(frozen=True)
class TurnOptions:
    wait: bool = False
    new: bool = False
    temp: bool = False
    session: str | None = None
    model: str | None = None


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


def wait_by_default() -> bool:
    return os.environ.get("AGENTIK_WAIT", "").strip().lower() in {"1", "true", "yes", "on"}


def parse_options(line: str) -> TurnOptions:
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise OptionsError(f"{exc}. Usage: {USAGE}") from None
    args = _parser.parse_args(words)
    wait = (args.wait or wait_by_default()) and not args.no_wait
    return TurnOptions(wait=wait, new=args.new, temp=args.temp, session=args.session, model=args.model)
