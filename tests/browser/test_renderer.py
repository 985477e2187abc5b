"""A saved transcript makes the browser contact no host by itself.

A notebook whose saved `application/vnd.agentik.transcript+json` output carries every
URL-loading payload we know of (in the answer's Markdown and in a tool's HTML preview)
is opened in JupyterLab (headless Debian chromium, no kernel run). A local HTTP listener
on 127.0.0.1, named by every payload, must receive no request; the answer's raw HTML
shows as text; a base64 `data:image/png` preview still shows as an image.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser import (
    TRANSCRIPT,
    TRANSCRIPT_MIME,
    browser_lab,
    lab_server,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

import nbformat  # noqa: E402

from agentik_jupyter.types import ChatMessage  # noqa: E402
from agentik_jupyter.widgets.transcript import PLAIN_TEXT_LIMIT, transcript_bundle  # noqa: E402
from tests.shared_servers import shared_llm  # noqa: E402

NOTEBOOK = "loads_nothing.ipynb"
LONG_NOTEBOOK = "long_answer.ipynb"
TAMPERED_NOTEBOOK = "long_answer_tampered.ipynb"
TOC_SETTINGS = "@jupyterlab/toc-extension/registry"
URL_ATTRIBUTES = "[src]:not([src^='data:image/']), [srcset], [poster], [background], [style*='url'], link, source"
MEDIA = "video, audio, input, img, picture, svg, iframe, object, embed"
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
SETTLE = 2.0  # seconds for any fetch a payload could start (autoplay, lazy images, CSS)


def no_fetch_for(listener: Listener, seconds: float, what: str) -> None:
    """No request reaches the listener for `seconds` (any fetch a payload starts comes within them);
    fails at the first one."""
    deadline = time.monotonic() + seconds
    while True:
        assert listener.paths == [], f"{what} made the browser fetch {listener.paths}"
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)


def payloads(base: str) -> list[str]:
    """Each names its own path on the listener, so a request tells which one leaked."""
    return [
        f'<img src="{base}/img">',
        f'<img srcset="{base}/srcset 1x">',
        f'<video poster="{base}/poster" src="{base}/video-src"></video>',
        f'<audio src="{base}/audio" autoplay></audio>',
        f'<input type="image" src="{base}/input-image">',
        f'<div style="background-image:url({base}/style-bg)">styled</div>',
        f"<div style=\"background: url('{base}/style-shorthand')\">shorthand</div>",
        f'<table background="{base}/table-bg"><tr><td background="{base}/td-bg">cell</td></tr></table>',
        f'<picture><source srcset="{base}/source-srcset"><img src="{base}/picture-img"></picture>',
        f'<link rel="stylesheet" href="{base}/link-href">',
        f'<svg><image href="{base}/svg-image"></image></svg>',
        f'<object data="{base}/object"></object><embed src="{base}/embed"><iframe src="{base}/iframe"></iframe>',
        f'<body background="{base}/body-bg">',
        f"![markdown image]({base}/md-image)",
    ]


def hostile_transcript(base: str) -> dict[str, Any]:
    answer = "Answer with payloads END-URLS\n\n" + "\n\n".join(payloads(base))
    preview = "<p>preview-ok</p>" + "".join(payloads(base)[:-1])
    return {
        "version": 1,
        "title": None,
        "status": "complete",
        "usage": None,
        "elapsed_s": 0.1,
        "entries": [
            {"role": "user", "content": "Show me the payloads"},
            {
                "role": "tool",
                "id": "c1",
                "name": "inspect_variable",
                "args": {"name": "df"},
                "result": "text",
                "truncated": 0,
                "error": None,
                "duration_ms": 1.0,
                "display": {"text/html": preview},
            },
            {
                "role": "tool",
                "id": "c2",
                "name": "plot",
                "args": {},
                "result": "a figure",
                "truncated": 0,
                "error": None,
                "duration_ms": 1.0,
                "display": {"image/png": PNG_1X1},
            },
            {"role": "assistant", "content": answer},
        ],
    }


def long_answer_bundle(base: str, *, tampered: bool) -> dict[str, Any]:
    """A saved turn, built by the kernel's own code, whose long answer the renderer draws from
    the bundle's HTML (as every answer over PLAIN_TEXT_LIMIT). The model's answer carries the payloads (the
    kernel escapes them); `tampered` also puts them, live, where the renderer reads the HTML."""
    answer = (
        "LONG-START "
        + "The units column grows with each region. " * 700
        + "\n\n"
        + "\n\n".join(payloads(base))
        + "\n\n**END-LONG**"
    )
    assert len(answer) > PLAIN_TEXT_LIMIT
    bundle = transcript_bundle(
        [ChatMessage(role="assistant", content=answer)], question="Write the long report", status="complete"
    )
    marker = 'data-agentik-entry="1">'
    assert marker in bundle["text/html"] and bundle[TRANSCRIPT_MIME]["entries"][1]["in_html"] is True
    if tampered:
        bundle["text/html"] = bundle["text/html"].replace(marker, marker + "".join(payloads(base)[:-1]), 1)
    return bundle


def write_notebook(path: Path, source: str, data: dict[str, Any]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = [nbformat.v4.new_output("display_data", data=data)]
    nb.cells = [cell]
    nbformat.write(nb, path)


class Listener:
    """An HTTP server on 127.0.0.1 that records every path asked of it."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        paths = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                paths.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def lab_page(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any, Listener]]:
    """JupyterLab on the three saved notebooks. `request.param` False turns off JupyterLab's own
    Table of Contents headings from outputs: it parses every text/html output in a live <div>
    (whatever renderer draws it), which fetches what JupyterLab's sanitizer leaves in it."""
    root = tmp_path / "root"
    root.mkdir()
    settings = {} if getattr(request, "param", True) else {TOC_SETTINGS: {"includeOutput": False}}
    with contextlib.ExitStack() as stack:
        listener = stack.enter_context(Listener())
        write_notebook(
            root / NOTEBOOK,
            "%%agent --wait\nShow me the payloads",
            {"text/plain": "transcript", TRANSCRIPT_MIME: hostile_transcript(listener.base)},
        )
        for name, tampered in ((LONG_NOTEBOOK, False), (TAMPERED_NOTEBOOK, True)):
            write_notebook(
                root / name,
                "%%agent --wait\nWrite the long report",
                long_answer_bundle(listener.base, tampered=tampered),
            )
        srv = stack.enter_context(shared_llm())
        server = stack.enter_context(
            lab_server(root, tmp_path / "home", srv, artifact=f"renderer-{request.node.name}", settings=settings)
        )
        lab = stack.enter_context(browser_lab(srv, server, artifact=f"renderer-{request.node.name}", height=1300))
        yield lab.page, server, listener


def test_saved_transcript_loads_nothing_and_shows_raw_html_as_text(lab_page: tuple[Any, Any, Listener]) -> None:
    page, server, listener = lab_page
    page.goto(server.link(f"/lab/tree/{NOTEBOOK}", reset=True), timeout=30_000)
    transcript = page.locator(TRANSCRIPT).filter(has_text="END-URLS")
    wait_until(lambda: transcript.count() == 1, 45, "the transcript drawn by the extension")
    for card in transcript.locator("details.agentik-tool > summary").all():
        card.click()  # open the previews: their HTML is rendered now
    transcript.locator(".agentik-preview").wait_for(state="visible", timeout=5_000)
    no_fetch_for(listener, SETTLE, "the transcript")

    answer = transcript.locator(".agentik-assistant")
    text = answer.inner_text()
    assert f'<video poster="{listener.base}/poster"' in text, text  # raw HTML shown as text
    assert f'<audio src="{listener.base}/audio" autoplay>' in text
    assert answer.locator("video, audio, input, img, picture, svg, iframe, object, embed").count() == 0
    assert answer.locator("a", has_text="markdown image").count() == 1  # a link, followed only on a click

    url_attrs = "[src]:not([src^='data:image/']), [srcset], [poster], [background], [style*='url'], link, source"
    assert transcript.locator(url_attrs).count() == 0
    preview = transcript.locator(".agentik-preview")
    assert "preview-ok" in preview.inner_text() and "cell" in preview.inner_text()
    image = transcript.locator("img.agentik-image")
    assert image.count() == 1 and image.get_attribute("src").startswith("data:image/png;base64,")
    assert listener.paths == []


def open_long_answer(page: Any, server: Any, notebook: str) -> tuple[Any, Any]:
    page.goto(server.link(f"/lab/tree/{notebook}", reset=True), timeout=30_000)
    transcript = page.locator(TRANSCRIPT).filter(has_text="Write the long report")
    wait_until(lambda: transcript.count() == 1, 45, "the long transcript drawn by the extension")
    answer = transcript.locator(".agentik-assistant")
    wait_until(lambda: "END-LONG" in answer.inner_text(), 15, "the whole long answer, from the HTML")
    assert "LONG-START" in answer.inner_text() and answer.locator("strong", has_text="END-LONG").count() == 1
    return transcript, answer


def test_a_long_answer_is_drawn_from_the_saved_html_and_loads_nothing(lab_page: tuple[Any, Any, Listener]) -> None:
    page, server, listener = lab_page
    transcript, answer = open_long_answer(page, server, LONG_NOTEBOOK)
    assert f'<video poster="{listener.base}/poster"' in answer.inner_text()  # the model's raw HTML, as text
    no_fetch_for(listener, SETTLE, "the long answer")
    assert transcript.locator(URL_ATTRIBUTES).count() == 0 and answer.locator(MEDIA).count() == 0


@pytest.mark.parametrize("lab_page", [False], indirect=True, ids=["toc-output-headings-off"])
def test_a_tampered_long_answer_html_is_allow_listed(lab_page: tuple[Any, Any, Listener]) -> None:
    page, server, listener = lab_page
    transcript, answer = open_long_answer(page, server, TAMPERED_NOTEBOOK)
    no_fetch_for(listener, SETTLE, "the tampered HTML")
    assert transcript.locator(URL_ATTRIBUTES).count() == 0 and answer.locator(MEDIA).count() == 0
    assert answer.locator("a", has_text=f"{listener.base}/img").count() == 1  # an image became a link
