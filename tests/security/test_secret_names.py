"""Secrets under other names, and secret values that looked harmless.

The scrubber masked the values of variables named *KEY*, *TOKEN*, *SECRET*, *PASSWORD*…,
except values that looked like numbers, paths or URLs. So a database URL with its password,
MYSQL_PWD, DB_PASS, SENTRY_DSN, an all-digit PIN, a password that starts with `/` and a
webhook URL (under a secret name, or named *WEBHOOK*) all went out as they were. Here each is masked, directly and
in a real kernel whose model inspects a variable built from them; what is not a secret
(the working directory in PWD, `TOKENIZERS_PARALLELISM=false`, a *_DIR path, a URL without
a password) is left alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import NotebookKernel, file_bytes, kernel_env

pytestmark = pytest.mark.timeout(180)

DB_PASSWORD = "Pg-s3cret-Warehouse"
SECRETS = {
    "DATABASE_URL": f"postgresql://analyst:{DB_PASSWORD}@db.internal:5432/sales",
    "MYSQL_PWD": "mysqlpw-7781",
    "DB_PASS": "passw0rd-staging",
    "SENTRY_DSN": "https://4f1c2b9a7d3e48f0a1b2c3d4e5f60718@o4501.ingest.sentry.io/4505",
    "SERVICE_TOKEN": "736194028517",
    "DEPLOY_PASSWORD": "/leading-slash-pw",
    "BACKUP_SECRET": "~tilde-Secret-42",
    "ALERTS_WEBHOOK_SECRET": "https://hooks.slack.com/services/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",
    "HTTPS_PROXY": "http://proxyuser:Pr0xy-Passw0rd@proxy.corp:3128",
    "TEAMS_WEBHOOK_URL": "https://example.webhook.office.com/webhookb2/9f8e7d6c-5b4a-3210-fedc-ba9876543210/IncomingWebhook/a1b2c3d4e5f6",
}
LEAKS = {
    "DATABASE_URL": DB_PASSWORD,
    "MYSQL_PWD": SECRETS["MYSQL_PWD"],
    "DB_PASS": SECRETS["DB_PASS"],
    "SENTRY_DSN": "4f1c2b9a7d3e48f0a1b2c3d4e5f60718",
    "SERVICE_TOKEN": SECRETS["SERVICE_TOKEN"],
    "DEPLOY_PASSWORD": SECRETS["DEPLOY_PASSWORD"],
    "BACKUP_SECRET": SECRETS["BACKUP_SECRET"],
    "ALERTS_WEBHOOK_SECRET": "xYz0AbC1dEf2GhI3jKl4MnO5",
    "HTTPS_PROXY": "Pr0xy-Passw0rd",
    "TEAMS_WEBHOOK_URL": "9f8e7d6c-5b4a-3210-fedc-ba9876543210",
}
"""The part of each value that must never show."""
NOT_SECRETS = {
    "PWD": "/home/analyst/projects/sales-forecast",
    "OLDPWD": "/home/analyst",
    "TOKENIZERS_PARALLELISM": "false",
    "CACHE_KEY_DIR": "/tmp/cache-keys",
    "SSH_KEY_PATH": "/home/analyst/.ssh/id_ed25519",
    "SHORT_PASS": "abcde",
    "REPLICA_URL": "postgresql://db.internal:5432/sales",
}


def assert_clean(where: str, text: str) -> None:
    for name, leak in LEAKS.items():
        assert leak not in text, f"{name}'s secret ({leak!r}) is in {where}"


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_secret_is_masked_with_its_name(name: str) -> None:
    text = f"the value is {SECRETS[name]} and the part alone: {LEAKS[name]}."
    masked = scrub(text, {**SECRETS, **NOT_SECRETS})
    assert_clean("the scrubbed text", masked)
    assert f"[hidden: {name}]" in masked


def test_what_is_not_a_secret_stays() -> None:
    text = " | ".join(NOT_SECRETS.values()) + " | the word false and abcde"
    assert scrub(text, {**SECRETS, **NOT_SECRETS}) == text


def test_a_short_value_under_a_secret_name_is_kept_from_six_characters_on() -> None:
    env = {"PIN_PASS": "12345", "APP_PWD": "123456"}
    assert scrub("pins 12345 and 123456", env) == "pins 12345 and [hidden: APP_PWD]"


def test_a_path_under_a_secret_name_is_masked_whole_and_other_paths_beside_it_stay() -> None:
    env = {"GNOME_KEYRING_CONTROL": "/run/user/1000/keyring"}
    text = "File /run/user/1000/kernel-7.json; socket /run/user/1000/keyring"
    assert scrub(text, env) == "File /run/user/1000/kernel-7.json; socket [hidden: GNOME_KEYRING_CONTROL]"


def test_a_url_password_is_masked_wherever_it_goes_and_the_url_keeps_its_host() -> None:
    env = {"DATABASE_URL": SECRETS["DATABASE_URL"]}
    said = f"connect to postgresql://analyst:{DB_PASSWORD}@replica:5432/x failed; password {DB_PASSWORD!r}"
    masked = scrub(said, env)
    assert DB_PASSWORD not in masked and "analyst:" not in masked
    assert "[hidden: DATABASE_URL]replica:5432/x" in masked


SETUP = """
import os
names = ["DATABASE_URL", "MYSQL_PWD", "DB_PASS", "SENTRY_DSN", "SERVICE_TOKEN", "DEPLOY_PASSWORD",
         "BACKUP_SECRET", "ALERTS_WEBHOOK_SECRET", "HTTPS_PROXY", "TEAMS_WEBHOOK_URL"]
connections = {name.lower(): os.environ[name] for name in names}
workdir = os.getcwd()
"""


@pytest.fixture(scope="module")
def inspected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NotebookKernel, FakeLLMServer, Path]]:
    tmp = tmp_path_factory.mktemp("names")
    db = tmp / "names.agentik.db"
    with FakeLLMServer() as server:
        # (HTTPS_PROXY is not used for the fake model's http:// address)
        kernel = NotebookKernel(kernel_env(server, AGENTIK_DB_PATH=str(db), **SECRETS), tmp)
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(SETUP)
            server.push(
                Reply.tool_calls([{"name": "inspect_variable", "args": {"name": "connections"}}]),
                Reply.text("Those are your connections."),
            )
            kernel.run("%%agent --wait\nWhich connections do I have?")
            yield kernel, server, db
        finally:
            kernel.close()


def test_the_model_was_told_which_secrets_are_hidden(inspected: tuple[NotebookKernel, FakeLLMServer, Path]) -> None:
    _, server, _ = inspected
    results = json.dumps([m for m in server.requests[-1].messages if m.get("role") == "tool"])
    assert "'mysql_pwd'" in results
    for name in SECRETS:
        assert f"[hidden: {name}]" in results, name


def test_no_request_output_or_session_row_holds_a_secret(inspected: tuple[NotebookKernel, FakeLLMServer, Path]) -> None:
    kernel, server, db = inspected
    for request in server.requests:
        assert_clean("a request the model received", json.dumps(request.body))
    assert_clean("the agent cell's outputs", json.dumps(kernel.nb.cells[-1].outputs))
    assert_clean("the saved notebook", kernel.saved())
    assert_clean("the sessions file", file_bytes(db).decode("utf-8", "replace"))
