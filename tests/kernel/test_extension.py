"""`%load_ext agentik_jupyter`: cheap to load, and the --wait rewrite is exact."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentik_jupyter.errors import OptionsError
from agentik_jupyter.kernel.extension import transform
from agentik_jupyter.kernel.turn_options import parse_options


def test_loading_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\n"
        "ip.run_line_magic('load_ext', 'agentik_jupyter')\n"
        "assert 'agent' in ip.magics_manager.magics['cell']\n"
        "assert 'agent' in ip.magics_manager.magics['line']\n"
        "print(sorted(m for m in ('pydantic', 'httpx2', 'ipywidgets', 'pandas', 'mcp') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_wait_cells_become_a_top_level_await(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTIK_WAIT", raising=False)
    cell = ["%%agent --wait --model m1\n", "What is 'x'?\n", 'Second line "quoted"\n']
    out = transform(cell)
    assert out == ["await __agentik_cell__('--wait --model m1', 'What is \\'x\\'?\\nSecond line \"quoted\"\\n')\n"]
    namespace: dict[str, object] = {}
    compiled = compile(out[0].replace("await ", "", 1), "<cell>", "eval")
    namespace["__agentik_cell__"] = lambda line, body: (line, body)
    assert eval(compiled, namespace) == ("--wait --model m1", "What is 'x'?\nSecond line \"quoted\"\n")


def test_background_cells_are_left_alone_unless_agentik_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTIK_WAIT", raising=False)
    cell = ["%%agent\n", "hello\n"]
    assert transform(cell) == cell
    monkeypatch.setenv("AGENTIK_WAIT", "1")
    assert transform(cell)[0].startswith("await __agentik_cell__(")
    assert transform(["%%agent --no-wait\n", "hello\n"]) == ["%%agent --no-wait\n", "hello\n"]


def test_line_magics_at_column_zero_become_awaits() -> None:
    lines = ["x = 1\n", "%agent sessions\n", "    %agent stop\n", "%agents\n"]
    assert transform(lines) == ["x = 1\n", "await __agentik_line__('sessions')\n", "    %agent stop\n", "%agents\n"]
    assert transform(["%agent\n"]) == ["await __agentik_line__('')\n"]


def test_options_parse_and_errors() -> None:
    opts = parse_options("--new --session abc --model gpt --temp")
    assert (opts.new, opts.session, opts.model, opts.temp, opts.wait) == (True, "abc", "gpt", True, False)
    with pytest.raises(OptionsError, match="Usage: %%agent"):
        parse_options("--bogus")
    with pytest.raises(OptionsError):
        parse_options("--session")
