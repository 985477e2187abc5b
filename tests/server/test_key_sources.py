"""The key given to the Jupyter server through LLM_API_KEY_FILE or its config: no process's environment
(the server's, its kernels') nor command line holds it, turns reach the provider with it, and
`%agent status` says where it came from. A key file that cannot be read is named by its path."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from agentik_jupyter.server.key_sources import KEY_FILE, AgentikJupyter, find_key, read_key_file
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.jupyter_servers import RunningServer, attach, jupyter, start_notebook_session, stop_notebook_session
from tests.proc_support import no_proc_file_holds, proc_files_holding

pytestmark = pytest.mark.timeout(240)

FILE_KEY = "sk-from-the-key-file-3f8a61c0d2"
CONFIG_KEY = "sk-from-the-server-config-94b7e2"


def test_a_key_file_loses_one_trailing_line_break(tmp_path: Path) -> None:
    file = tmp_path / "key"
    file.write_text(FILE_KEY + "\n")
    assert read_key_file(str(file)).key == FILE_KEY
    file.write_bytes(FILE_KEY.encode() + b"\r\n")
    assert read_key_file(str(file)).key == FILE_KEY
    assert FILE_KEY not in repr(read_key_file(str(file)))


@pytest.mark.parametrize(
    ("content", "says"),
    [(None, ": cannot read the key (No such file or directory)"), (b"", " is empty"), (b"\n", " is empty")],
)
def test_a_key_file_that_gives_no_key_is_named_by_its_path(tmp_path: Path, content: bytes | None, says: str) -> None:
    file = tmp_path / "llm.key"
    if content is not None:
        file.write_bytes(content)
    found = read_key_file(str(file))
    assert found.key == "" and found.problem == f"{KEY_FILE}={file}{says}"


def test_a_folder_or_a_binary_file_is_no_key_and_its_content_is_never_shown(tmp_path: Path) -> None:
    assert read_key_file(str(tmp_path)).problem == f"{KEY_FILE}={tmp_path} is a folder, not a file holding the key"
    binary = tmp_path / "key.bin"
    binary.write_bytes(b"\xff\xfe" + FILE_KEY.encode())
    found = read_key_file(str(binary))
    assert found.problem == f"{KEY_FILE}={binary} is not UTF-8 text" and FILE_KEY not in found.problem


def test_the_config_wins_over_the_file_which_wins_over_the_environment(tmp_path: Path) -> None:
    file = tmp_path / "key"
    file.write_text(FILE_KEY)
    env = {"LLM_API_KEY": "sk-exported-in-the-environment", KEY_FILE: str(file)}
    config = Config({"AgentikJupyter": {"api_key": CONFIG_KEY}})
    found = find_key(config, env)
    assert found is not None and (found.source, found.key) == ("config", CONFIG_KEY)
    found = find_key(Config(), env)
    assert found is not None and (found.source, found.key) == ("file", FILE_KEY)
    found = find_key(None, {"LLM_API_KEY": "sk-exported-in-the-environment"})
    assert found is not None and found.source == "environment"
    assert find_key(Config(), {}) is None
    assert "api_key" in AgentikJupyter.class_trait_names(config=True)


# ---- real servers: one given the key through a file, one through its config ----


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def _provider_env(llm: FakeLLMServer) -> dict[str, str]:
    env = llm.env("openai-compatible")
    env.pop("LLM_API_KEY")
    return env


@pytest.fixture(scope="module", params=["file", "config"])
def keyed(
    request: pytest.FixtureRequest, llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, RunningServer]]:
    """(source, key, server): a Jupyter server whose key is in a file or in its config, in no environment."""
    root, home = tmp_path_factory.mktemp("root"), tmp_path_factory.mktemp("home")
    env = _provider_env(llm)
    if request.param == "file":
        key = FILE_KEY
        secrets = tmp_path_factory.mktemp("secrets")
        (secrets / "llm_api_key").write_text(key + "\n")
        (secrets / "llm_api_key").chmod(0o600)
        env[KEY_FILE] = str(secrets / "llm_api_key")
    else:
        key = CONFIG_KEY
        (home / "config").mkdir(parents=True)
        (home / "config" / "jupyter_server_config.json").write_text(json.dumps({"AgentikJupyter": {"api_key": key}}))
    with jupyter(root, home, env=env) as running:
        yield request.param, key, running


@pytest.fixture(scope="module")
def kernel(keyed: tuple[str, str, RunningServer]) -> Iterator[Any]:
    server = keyed[2]
    session = start_notebook_session(server, "keyed.ipynb")
    attached = attach(server, session["kernel"]["id"])
    try:
        attached.text("%load_ext agentik_jupyter")
        yield attached
    finally:
        attached.close()
        stop_notebook_session(server, session)


def test_the_key_is_in_no_environment_and_no_command_line(keyed: tuple[str, str, RunningServer], kernel: Any) -> None:
    source, key, server = keyed
    env = kernel.value("dict(__import__('os').environ)")
    assert "LLM_API_KEY" not in env and KEY_FILE not in env
    assert env["AGENTIK_PROVIDER_IN_SERVER"] == "1" and env["AGENTIK_KEY_SOURCE"] == source
    assert kernel.value(f"{key.encode()!r} in open('/proc/self/environ', 'rb').read()") is False
    found = proc_files_holding(kernel, server.proc.pid, key)
    assert no_proc_file_holds(found), found
    assert key not in server.log()
    assert "the server holds LLM_API_KEY" in server.log()


def test_a_turn_reaches_the_provider_with_the_servers_key(
    keyed: tuple[str, str, RunningServer], llm: FakeLLMServer, kernel: Any
) -> None:
    key = keyed[1]
    llm.push(Reply.text("Answered with the key you gave the server."))
    out = kernel.text("%%agent --wait\nWhose key?", timeout=60)
    assert "Answered with the key you gave the server." in out
    assert llm.requests[-1].headers["authorization"] == f"Bearer {key}"
    assert key not in out


def test_status_says_where_the_key_came_from(keyed: tuple[str, str, RunningServer], kernel: Any) -> None:
    status = kernel.text("%agent status")
    assert "key:      in the Jupyter server; this kernel has none" in status
    status = " ".join(status.split())  # (the `key from:` line is wrapped to the cell's width)
    said = {
        "file": "key from: a file the server read once (LLM_API_KEY_FILE); no process's environment holds it",
        "config": "key from: the server's config (AgentikJupyter.api_key); no process's environment holds it",
    }
    assert said[keyed[0]] in status
    assert "Processes of the same user could read it" not in status


def test_a_key_file_the_server_cannot_read_is_named_in_its_log_the_status_and_each_turn(
    llm: FakeLLMServer, tmp_path: Path
) -> None:
    missing = tmp_path / "secrets" / "llm_api_key"
    env = {**_provider_env(llm), KEY_FILE: str(missing)}
    (tmp_path / "root").mkdir()
    with jupyter(tmp_path / "root", tmp_path / "home", env=env) as server:
        assert f"{KEY_FILE}={missing}: cannot read the key (No such file or directory)" in server.log()
        session = start_notebook_session(server, "nokey.ipynb")
        kernel = attach(server, session["kernel"]["id"])
        try:
            kernel.text("%load_ext agentik_jupyter")
            status = " ".join(kernel.text("%agent status").split())
            assert "key from: the server could not read its key (its log and each turn's error say why)" in status
            before = len(llm.requests)
            out = kernel.text("%%agent --wait\nAnyone there?", timeout=60)
            assert f"{KEY_FILE}={missing}: cannot read the key" in out
            assert "restart the Jupyter server" in out
            assert len(llm.requests) == before  # no request went out without a key
        finally:
            kernel.close()
            stop_notebook_session(server, session)
