"""Every text of ours is legible (WCAG AA, contrast ≥ 4.5:1) in JupyterLab's light and dark themes.

JupyterLab + headless Debian Chromium + the fake LLM, once per theme: a notebook shows what the
extension and the widgets draw — a turn waiting on its on-cell diff (the diff's lines, title and
buttons, the status line), **Fix with agent** under a failed cell, the chat panel, a saved
transcript (question, tool card with its diff, answer, error) and the **Agent sessions** sidebar.
Each visible element of ours that holds text is measured from its computed colours: the text
colour (with the opacity above it) over the backgrounds below it, composited as the browser
paints them. Screenshots and the measurements land in tests/artifacts/contrast_<theme>_*.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.browser.test_browser import (  # noqa: E402  (skips the module when chromium is missing)
    ARTIFACTS,
    TRANSCRIPT_MIME,
    Lab,
    browser_lab,
    lab_server,
    write_code_cells,
)
from tests.browser.test_notebook import PROPOSAL, run_cell
from tests.browser_apps import open_sessions_sidebar

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

from agentik_jupyter.notebook.edits import diff_html, unified_diff  # noqa: E402
from agentik_jupyter.testing import FakeLLMServer, Reply  # noqa: E402

NOTEBOOK = "contrast.ipynb"
SOURCES = [
    "%load_ext agentik_jupyter",
    "rate = 1",
    "%%agent\nLook at my notebook.",
    "scaled = rate * factor",
    "%agent panel",
    "%%agent --wait\nA saved turn",
]
CELL_LOAD, CELL_DATA, CELL_ASK, CELL_BROKEN, CELL_PANEL, CELL_SAVED = range(6)
AA = 4.5
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
# Our elements (a cell flashed by the extension is JupyterLab's, and its prompt its own text)
OURS = '[class*="agentik"]:not(.jp-Cell), [class*="Agentik"]:not(.jp-Cell)'

SAVED_TRANSCRIPT = {
    "version": 1,
    "title": None,
    "status": "complete",
    "usage": {"input_tokens": 10, "output_tokens": 5},
    "elapsed_s": 0.25,
    "entries": [
        {"role": "user", "content": "Change the rate."},
        {
            "role": "tool",
            "id": "call_1",
            "name": "edit_cell",
            "args": {"cell_id": "c1", "new_source": "rate = 2"},
            "result": "The user accepted the edit: cell c1 now holds the new source (not run).",
            "truncated": 0,
            "error": None,
            "duration_ms": 3.0,
            "display": {"text/html": diff_html(unified_diff("rate = 1\nkept = 0", "rate = 2\nkept = 0", "c1"))},
        },
        {
            "role": "tool",
            "id": "call_2",
            "name": "edit_cell",
            "args": {"cell_id": "c2", "new_source": "kept = 1"},
            "result": "The user rejected the edit: cell c2 is unchanged. Ask what they want instead; do not retry the same edit.",
            "truncated": 0,
            "error": None,
            "duration_ms": 2.0,
            "display": None,
        },
        {"role": "assistant", "content": "The rate is **2** now. END-SAVED"},
        {"role": "error", "message": "A saved error line."},
    ],
}

# For each visible element of ours with text of its own: its text colour (times the opacity above
# it) over its backgrounds (itself and its ancestors', composited), and the ratio WCAG defines.
MEASURE = """sel => {
  const parse = value => {
    let m = value.match(/^rgba?\\(([^)]*)\\)/);
    if (m) {
      const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    m = value.match(/^color\\(srgb ([^)]*)\\)/);
    if (m) {
      const p = m[1].split(/[\\s\\/]+/).filter(Boolean).map(Number);
      return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1];
    }
    return null;
  };
  const over = (top, bottom) => {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  };
  const lum = c => {
    const ch = c.slice(0, 3).map(v => {
      v = v / 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2];
  };
  const backgroundOf = el => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const bg = parse(getComputedStyle(e).backgroundColor);
      if (bg && bg[3] > 0) {
        layers.push(bg);
        if (bg[3] >= 1) break;
      }
    }
    let colour = [255, 255, 255, 1];
    if (!layers.length || layers[layers.length - 1][3] < 1) {
      colour = parse(getComputedStyle(document.body).backgroundColor) || colour;
    }
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  };
  const opacityOf = el => {
    let o = 1;
    for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
    return o;
  };
  const seen = new Set();
  const out = [];
  for (const root of document.querySelectorAll(sel)) {
    for (const el of [root, ...root.querySelectorAll('*')]) {
      if (seen.has(el)) continue;
      seen.add(el);
      const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('').trim();
      if (!own || !el.getClientRects().length) continue;
      if (el.closest('[disabled], .jp-mod-disabled, .cm-editor, .jp-InputArea-editor')) continue;
      const style = getComputedStyle(el);
      if (style.visibility === 'hidden' || style.display === 'none') continue;
      const bg = backgroundOf(el);
      const fg = parse(style.color);
      if (!fg) continue;
      const text = over([fg[0], fg[1], fg[2], fg[3] * opacityOf(el)], bg);
      const [l1, l2] = [lum(text), lum(bg)].sort((a, b) => b - a);
      out.push({
        text: own.slice(0, 60),
        cls: (typeof el.className === 'string' ? el.className : '').slice(0, 80),
        tag: el.tagName.toLowerCase(),
        parent: (el.closest(sel)?.className || '').toString().slice(0, 60),
        color: style.color,
        background: 'rgb(' + bg.slice(0, 3).map(Math.round).join(', ') + ')',
        ratio: Math.round(((l1 + 0.05) / (l2 + 0.05)) * 100) / 100
      });
    }
  }
  return out;
}"""


def theme_settings(home: Path, theme: str) -> None:
    """The user's theme, as JupyterLab's Settings > Theme saves it."""
    settings = home / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "themes.jupyterlab-settings").write_text(json.dumps({"theme": THEMES[theme]}))


@contextlib.contextmanager
def themed_lab(tmp: Path, theme: str) -> Iterator[Lab]:
    root, home = tmp / "root", tmp / "home"
    root.mkdir()
    write_code_cells(root / NOTEBOOK, SOURCES)
    nb = nbformat.read(root / NOTEBOOK, as_version=4)
    nb.cells[CELL_SAVED].outputs = [
        nbformat.v4.new_output("display_data", data={"text/plain": "saved", TRANSCRIPT_MIME: SAVED_TRANSCRIPT})
    ]
    nbformat.write(nb, root / NOTEBOOK)
    name = f"contrast-{theme}"
    with (
        FakeLLMServer() as srv,
        lab_server(
            root,
            home,
            srv,
            artifact=name,
            AGENTIK_DB_PATH=str(root / "contrast.agentik.db"),
            AGENTIK_APPROVAL_TIMEOUT="120",
        ) as server,
    ):
        theme_settings(home, theme)
        with browser_lab(srv, server, artifact=name, height=1400) as lab:
            lab.app = "jupyterlab"  # type: ignore[attr-defined]
            lab.page.goto(f"{server.url}/lab/tree/{NOTEBOOK}?reset&token={server.token}", timeout=60_000)
            lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=120_000)
            yield lab


def show_everything(lab: Lab) -> None:
    """What a user sees in a working session: each of our texts on screen at least once."""
    run_cell(lab, CELL_LOAD)
    run_cell(lab, CELL_DATA)
    run_cell(lab, CELL_BROKEN)  # NameError: Fix with agent appears under it
    lab.cell(CELL_BROKEN).get_by_role("button", name="Fix with agent").wait_for(timeout=30_000)
    run_cell(lab, CELL_PANEL)
    lab.output(CELL_PANEL).locator("input").first.wait_for(timeout=30_000)
    target = nbformat.read(lab.server.root / NOTEBOOK, as_version=4).cells[CELL_DATA].id
    lab.srv.push(
        Reply.tool_calls([{"name": "read_notebook", "args": {}}]),
        Reply.tool_calls([{"name": "edit_cell", "args": {"cell_id": target, "new_source": "rate = 2\nextra = 1"}}]),
        Reply.text("Changed. END-EDIT"),
    )
    run_cell(lab, CELL_ASK)
    diff = lab.cell(CELL_DATA).locator(PROPOSAL)
    lab.wait(lambda: diff.count() == 1 and diff.is_visible(), 45, "the diff on the cell")
    lab.wait(lambda: "waiting" in lab.text(lab.output(CELL_ASK)).lower(), 30, "the status line waiting on the diff")
    lab.cell(CELL_SAVED).locator(".jp-AgentikTranscript").first.wait_for(timeout=30_000)
    card = lab.cell(CELL_SAVED).locator("details.agentik-tool").first
    card.locator("summary").first.click()  # open the tool card: its diff
    card.locator(".agentik-diff-added").first.wait_for(timeout=10_000)
    open_sessions_sidebar(lab)
    lab.page.locator(".jp-AgentikSidebar li, .jp-AgentikSidebar .agentik-session").first.wait_for(timeout=30_000)


def measure(lab: Lab, theme: str) -> list[dict[str, Any]]:
    found = list(lab.page.evaluate(MEASURE, OURS))
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"contrast_{theme}.json").write_text(json.dumps(found, indent=1))
    return found


@pytest.mark.parametrize("theme", list(THEMES))
def test_every_text_of_ours_meets_wcag_aa(tmp_path: Path, theme: str) -> None:
    with themed_lab(tmp_path, theme) as lab:
        dark = lab.page.evaluate("() => document.body.dataset.jpThemeLight") == "false"
        assert dark == (theme == "dark"), f"the page is not in the {theme} theme"
        show_everything(lab)
        lab.shot(f"contrast_{theme}_diff.png", at=lab.cell(CELL_DATA))
        lab.shot(f"contrast_{theme}_saved.png", at=lab.cell(CELL_SAVED))
        found = measure(lab, theme)
        kinds = {f["cls"].split()[0] if f["cls"] else f["parent"].split()[0] for f in found}
        for expected in (
            "agentik-diff-added",
            "agentik-proposal-title",
            "agentik-proposal-accepted",
            "agentik-refresh",
        ):
            assert any(expected in f["cls"] for f in found), (expected, sorted(kinds))
        low = [f for f in found if f["ratio"] < AA]
        assert not low, json.dumps(low, indent=1)
        assert sum("agentik-diff-added" in f["cls"] for f in found) >= 3  # on the cell and in the tool card
