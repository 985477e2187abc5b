"""Every answer is saved once, in the bundle's HTML; JupyterLab draws it as before.

Two saved notebooks hold the same ~4,000-character answer: one as today's kernel saves it (the
JSON keeps the start and `in_html`; the answer is the HTML element `data-agentik-entry`), one as
an older version saved it (the whole Markdown in the JSON, no `in_html`). Both are opened in
JupyterLab (headless Debian chromium, no kernel run): the answer reads the same, has the same
paragraphs, list items, emphasis, code and link, and takes the same room on the page.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser import (
    ARTIFACTS,
    TRANSCRIPT,
    TRANSCRIPT_MIME,
    browser_lab,
    lab_server,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


from agentik_jupyter.types import ChatMessage  # noqa: E402
from agentik_jupyter.widgets.transcript import transcript_bundle  # noqa: E402
from tests.browser.test_renderer import write_notebook  # noqa: E402
from tests.shared_servers import shared_llm  # noqa: E402
from tests.widgets.test_transcript import report  # noqa: E402

ANSWER = (
    "START-OF-ANSWER The **sales** frame, [pandas docs](https://pandas.pydata.org/), and "
    "`units`.\n\n" + report(3_400) + "\n\n1. first *step*\n2. second step\n\n"
    "```\nsales.groupby('region').units.sum()\n```\n\nThe end: **END-OF-ANSWER**"
)
FORMS = ("saved_now", "saved_before")
ELEMENTS = "p, li, strong, em, code, pre, a"


def bundles() -> dict[str, dict[str, Any]]:
    now = transcript_bundle(
        [ChatMessage(role="assistant", content=ANSWER)], question="Write the report.", status="complete", elapsed_s=2.0
    )
    assert now[TRANSCRIPT_MIME]["entries"][1]["in_html"] is True
    before = copy.deepcopy(now)  # what an older version saved: the whole Markdown in the JSON
    before[TRANSCRIPT_MIME]["entries"][1] = {"role": "assistant", "content": ANSWER}
    return {"saved_now": now, "saved_before": before}


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    root = tmp_path / "root"
    root.mkdir()
    for name, data in bundles().items():
        write_notebook(root / f"{name}.ipynb", "%%agent --wait\nWrite the report.", data)
    with (
        shared_llm() as srv,
        lab_server(root, tmp_path / "home", srv, artifact="transcript") as server,
        browser_lab(srv, server, artifact="transcript", width=1100, height=1400) as lab,
    ):
        yield lab.page, server


def drawn(page: Any, server: Any, name: str) -> dict[str, Any]:
    page.goto(server.link(f"/lab/tree/{name}.ipynb", reset=True), timeout=30_000)
    answer = page.locator(TRANSCRIPT).locator(".agentik-assistant")
    wait_until(lambda: answer.count() == 1 and "END-OF-ANSWER" in answer.inner_text(), 45, f"{name}: the answer")
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(TRANSCRIPT).screenshot(path=str(ARTIFACTS / f"transcript_{name}.png"))
    box = answer.bounding_box()
    return {
        "text": " ".join(answer.inner_text().split()),
        "elements": answer.evaluate(f"n => [...n.querySelectorAll({ELEMENTS!r})].map(e => e.tagName)"),
        "classes": answer.get_attribute("class"),
        "size": (round(box["width"]), round(box["height"])),
        "links": answer.evaluate("n => [...n.querySelectorAll('a')].map(a => [a.href, a.target])"),
    }


def test_an_answer_saved_in_the_html_is_drawn_as_one_saved_in_the_json(lab: tuple[Any, Any]) -> None:
    page, server = lab
    now, before = (drawn(page, server, name) for name in FORMS)
    assert now["text"] == before["text"] and now["text"].startswith("START-OF-ANSWER")
    assert now["elements"] == before["elements"] and now["elements"].count("LI") >= 4
    assert now["classes"] == before["classes"] == "agentik-assistant jp-RenderedHTMLCommon jp-RenderedMarkdown"
    assert now["links"] == before["links"] == [["https://pandas.pydata.org/", "_blank"]]
    assert abs(now["size"][1] - before["size"][1]) <= 2 and now["size"][0] == before["size"][0], (
        now["size"],
        before["size"],
    )
