"""A paced answer streams into the append-only live text, in JupyterLab and Notebook 7.

Headless Debian Chromium, a real Jupyter server and kernel, the fake LLM streaming at a model's
pace. `%load_ext` makes the kernel say hello; our extension answers, so the `%%agent --wait`
answer streams into the LiveText widget (finished blocks added once, the tail replaced): the
page sees it grow, each state a start of the answer, and the live text ends on the same text
as the transcript that replaces it. Screenshots in tests/artifacts/live_text_<app>_*.png.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator

import pytest

from tests.browser.test_browser import Lab, notebook_page  # noqa: E402  (skips the module when chromium is missing)
from tests.browser.test_notebook import run_cell  # noqa: E402
from tests.browser_apps import restart_from_the_menu  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

from agentik_jupyter.testing import Reply  # noqa: E402

NOTEBOOK = "live_text.ipynb"
SOURCES = [
    "%load_ext agentik_jupyter",
    "from agentik_jupyter.notebook import page\nprint('live text:', page.live_text())",
    "%%agent --wait\nSummarise the sales data.",
]
CELL_LOAD, CELL_ANSWERED, CELL_ASK = range(3)
SENTENCE = (
    "The sales frame has many rows and the `units` column grows with each region while "
    "north and south stay balanced across the sample. "
)
ANSWER = "\n\n".join(
    [
        SENTENCE * 2,
        "- north: 41 rows\n- south: 38 rows",
        SENTENCE * 3,
        "```python\nsales.groupby('region')['units'].sum()\n```",
        SENTENCE * 3 + "END-LIVE",
    ]
)
PACE_HZ = 50.0  # 4-character chunks: ~4.5 s of streaming
LIVE = ".agentik-live-text"
ANSWER_IN_TRANSCRIPT = ".jp-AgentikTranscript .agentik-assistant"

# Every distinct text the live answer shows, as the page sees it (a MutationObserver).
RECORD = """() => {
  window.__agentik_live = [];
  const seen = () => {
    const el = document.querySelector('.agentik-live-text');
    if (!el) return;
    const text = el.textContent;
    const all = window.__agentik_live;
    if (text && all[all.length - 1] !== text) all.push(text);
  };
  new MutationObserver(seen).observe(document.body, {childList: true, subtree: true, characterData: true});
}"""

APPS = {"jupyterlab": (f"/lab/tree/{NOTEBOOK}", True), "notebook7": (f"/notebooks/{NOTEBOOK}", False)}


@pytest.fixture(scope="module", params=list(APPS))
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    url_path, reset = APPS[request.param]
    with notebook_page(
        tmp_path_factory, NOTEBOOK, SOURCES, artifact=f"{request.param}-live-text", url_path=url_path, reset=reset
    ) as lab:
        lab.app = request.param  # type: ignore[attr-defined]  (screenshot names)
        yield lab


def run(lab: Lab, index: int) -> None:
    """`run_cell`, saying which dialog is in the way when one is."""
    try:
        run_cell(lab, index)
    except Exception as exc:
        dialog = lab.page.locator(".jp-Dialog")
        if dialog.count():
            lab.shot(f"live_text_{lab.app}_dialog.png")  # type: ignore[attr-defined]
            raise AssertionError(f"a dialog is in the way: {lab.text(dialog.first)!r}") from exc
        raise


def start(lab: Lab, index: int) -> None:
    """Run a `--wait` cell without waiting for it: its prompt reads [*] until the turn ends."""
    prompt = lab.cell(index).locator(".jp-InputArea-prompt")
    prompt.click()
    lab.page.keyboard.press("Shift+Enter")
    lab.wait(lambda: "*" in lab.text(prompt), 60, f"cell {index} to start")


def squeeze(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_a_paced_answer_grows_in_the_live_text_and_ends_as_the_transcript(lab: Lab) -> None:
    app = lab.app  # type: ignore[attr-defined]
    run(lab, CELL_LOAD)
    lab.wait(
        lambda: re.search(r"\[\d+\]", lab.text(lab.cell(CELL_LOAD).locator(".jp-InputArea-prompt"))),
        30,
        "%load_ext to run",
    )
    run(lab, CELL_ANSWERED)  # (the extension answered the kernel's hello)
    lab.wait(lambda: "live text: True" in lab.text(lab.output(CELL_ANSWERED)), 60, "the kernel to know the extension")
    lab.page.evaluate(RECORD)
    lab.srv.pace = PACE_HZ
    lab.srv.push(Reply.text(ANSWER, chunks=len(ANSWER) // 4, first_byte_after=0.3))
    start(lab, CELL_ASK)
    out = lab.output(CELL_ASK)

    live = out.locator(LIVE)
    lab.wait(lambda: live.count() == 1 and "rows" in lab.text(live), 30, "the answer's first words in the live text")
    assert {"agentik-assistant", "jp-RenderedHTMLCommon", "jp-RenderedMarkdown"} <= set(
        str(live.get_attribute("class")).split()
    )
    lab.wait(lambda: live.count() == 1 and live.locator("li").count() == 2, 30, "the list, finished, in the live text")
    lab.shot(f"live_text_{app}_streaming.png", at=out)

    done = out.locator(ANSWER_IN_TRANSCRIPT)
    lab.wait(lambda: done.count() == 1 and "END-LIVE" in lab.text(done), 30, "the transcript with the whole answer")
    lab.shot(f"live_text_{app}_done.png", at=out)
    assert out.locator(LIVE).count() == 0  # (the transcript replaced it)
    lab.no_widget_errors()

    shown: list[str] = [squeeze(t) for t in lab.page.evaluate("() => window.__agentik_live")]
    final = squeeze(lab.text(done))
    assert len(shown) >= 8, shown  # it grew step by step (~4 a second for ~4.5 s)
    assert len(shown[0]) < len(final) / 4
    for text in shown:  # each state is a start of the answer (the unfinished word may differ)
        assert final.startswith(text[: max(0, len(text) - 30)]), (text, final)
    assert shown[-1] == final  # the live text ends on the transcript's text: no jump


def test_after_a_kernel_restart_the_new_kernel_learns_it_again(lab: Lab) -> None:
    """The hello's target stays registered on the notebook's kernel connection across a restart."""

    def api(path: str, method: str = "GET") -> object:
        request = urllib.request.Request(
            f"{lab.server.url}{path}?token={lab.server.token}", method=method, data=b"{}" if method == "POST" else None
        )
        with urllib.request.urlopen(request, timeout=30) as reply:
            return json.loads(reply.read() or b"null")

    (session,) = api("/api/sessions")  # type: ignore[misc]
    kernel = f"/api/kernels/{session['kernel']['id']}"
    started = api(kernel)["last_activity"]  # type: ignore[index]
    restart_from_the_menu(lab)
    lab.wait(
        lambda: (k := api(kernel)) and k["execution_state"] == "idle" and k["last_activity"] != started,  # type: ignore[index]
        90,
        "the restarted kernel",
    )
    answered = lab.output(CELL_ANSWERED)
    run(lab, CELL_ANSWERED)  # (a new kernel: nothing loaded, nothing learnt)
    lab.wait(
        lambda: "ModuleNotFoundError" not in lab.text(answered) and "live text: False" in lab.text(answered),
        60,
        "the restarted kernel not to know the extension before %load_ext",
    )
    run(lab, CELL_LOAD)
    run(lab, CELL_ANSWERED)
    lab.wait(lambda: "live text: True" in lab.text(answered), 60, "the restarted kernel to know the extension")
