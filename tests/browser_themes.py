"""JupyterLab in its light and dark themes for the look tests: a notebook opened in a themed lab (with
or without our lab extension), and the contrast of every text of ours on the page measured.

A look module opens its notebook with `themed_lab` (once per theme in `THEMES`) and checks what it
draws; `measure` gives each visible text of ours with its WCAG contrast ratio, to hold against `AA`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat

from tests.browser.test_browser import (  # (skips the module that imports this when chromium is missing)
    ARTIFACTS,
    Lab,
    browser_lab,
    lab_server,
    write_code_cells,
)
from tests.shared_servers import THEMES as THEMES  # (the look modules take it from here)
from tests.shared_servers import shared_llm

AA = 4.5
# Our elements (a cell flashed by the extension is JupyterLab's, and its prompt its own text)
OURS = '[class*="agentik"]:not(.jp-Cell), [class*="Agentik"]:not(.jp-Cell)'

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


@contextlib.contextmanager
def themed_lab(
    tmp: Path,
    theme: str,
    notebook: str,
    sources: list[str],
    *,
    artifact: str,
    height: int,
    outputs: dict[int, list[Any]] | None = None,
    extension: bool = True,
) -> Iterator[Lab]:
    """`notebook` of these code cells (with the saved `outputs` of some cells, by index) open in
    JupyterLab in `theme`, the fake LLM behind it, approvals waiting up to 120 s, sessions in
    `tmp`; without our lab extension unless `extension`. Logs and screenshots go by `artifact`."""
    root = tmp / "root"
    root.mkdir()
    write_code_cells(root / notebook, sources)
    if outputs:
        nb = nbformat.read(root / notebook, as_version=4)
        for index, saved in outputs.items():
            nb.cells[index].outputs = saved
        nbformat.write(nb, root / notebook)
    with (
        shared_llm() as srv,
        lab_server(root, tmp / "home", srv, artifact=artifact, extension=extension, theme=theme) as server,
        browser_lab(srv, server, artifact=artifact, height=height) as lab,
    ):
        lab.app = "jupyterlab"  # type: ignore[attr-defined]
        lab.theme = theme  # type: ignore[attr-defined]  (screenshot names)
        lab.page.goto(server.link(f"/lab/tree/{notebook}", reset=True), timeout=60_000)
        lab.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=120_000)
        light = "false" if theme == "dark" else "true"
        lab.wait(
            lambda: lab.page.evaluate("() => document.body.dataset.jpThemeLight") == light,
            60,
            f"the page in JupyterLab's {theme} theme",
        )
        yield lab


OUR_ANIMATIONS = """() => document.getAnimations().filter(
  a => a.playState === 'running' && String(a.animationName || '').startsWith('agentik')).length"""


def measure(lab: Lab, name: str) -> list[dict[str, Any]]:
    """Every visible text of ours on the page with its contrast (`MEASURE`), also saved as
    tests/artifacts/<name>.json. Measured once our own animations have ended (a changed cell's
    1.5 s flash tints what lies under its diff): the colours a user reads, not a frame of a fade."""
    lab.wait(lambda: not lab.page.evaluate(OUR_ANIMATIONS), 30, "our animations (a cell's flash) to end")
    found = list(lab.page.evaluate(MEASURE, OURS))
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"{name}.json").write_text(json.dumps(found, indent=1))
    return found
