"""The look every widget carries itself: inline styles on JupyterLab's theme variables, with fallbacks.

VS Code, Colab and JupyterLab without our lab extension render ipywidgets but not our CSS
(labextension/style/index.css), so a class alone leaves a card without its border and an error
without its red. Each style here is the same rule as index.css's for that class, written inline
(in the HTML a widget holds, or in a shared Layout or ButtonStyle): inside JupyterLab the theme's
variables give the very colours the CSS gives (one look), elsewhere the fallback after the comma
does (Material colours close to JupyterLab's light theme). The CSS keeps what inline styles cannot
say (hover, the dark theme's diff colours, ipywidgets' own sizes undone).
"""

from __future__ import annotations

BRAND = "var(--jp-brand-color1, #1976d2)"
BORDER = "var(--jp-border-color2, #e0e0e0)"
ERROR = "var(--jp-error-color1, #d32f2f)"
MUTED = "var(--jp-ui-font-color2, #616161)"
WARN = "var(--jp-warn-color1, #f57c00)"
CODE_BACKGROUND = "var(--jp-layout-color2, #eeeeee)"
CODE_FONT = "font-family:var(--jp-code-font-family, monospace);font-size:var(--jp-code-font-size, 13px)"

LIVE_FRAME = {"border_left": f"3px solid {BRAND}", "padding": "2px 0 2px 10px"}
"""A turn's live view (its box's Layout): the transcript's left border."""
APPROVAL_FRAME = {"border": f"2px solid {WARN}", "padding": "4px 8px", "margin": "4px 0"}
"""A card that asks the user (approval, trust) while it waits."""
APPROVAL_DONE_FRAME = {"border": f"1px solid {BORDER}", "padding": "4px 8px", "margin": "4px 0"}
"""The same card once answered."""
ERROR_BANNER_FRAME = {"border_left": f"3px solid {ERROR}", "padding": "2px 6px", "margin": "4px 0"}

ACCEPT_BUTTON = {"button_color": "var(--jp-accept-color-normal, #1976d2)", "text_color": "#fff"}
REJECT_BUTTON = {"button_color": "var(--jp-reject-color-normal, #616161)", "text_color": "#fff"}
"""White on JupyterLab's accept blue / reject grey (≥ 4.5:1 in every theme), as index.css."""

USER = "display:flex;gap:8px;margin:4px 0"
WHO = f"font-weight:bold;color:{BRAND};flex:none"
QUESTION = "white-space:pre-wrap;overflow-wrap:anywhere"
ERROR_TEXT = f"color:{ERROR}"
STATUS = f"color:{MUTED};font-size:var(--jp-ui-font-size0, 11px)"
CARD = f"border:1px solid {BORDER};border-radius:4px;padding:2px 8px;margin:4px 0"
PRE = (
    "white-space:pre-wrap;overflow-wrap:anywhere;max-height:24em;overflow:auto;margin:2px 0 6px;"
    f"padding:4px 6px;background:{CODE_BACKGROUND};{CODE_FONT}"
)
ERROR_PRE = f"{PRE};background:none;{ERROR_TEXT}"
"""An error's text in a card: red on the card's own background (on the code grey it reads at 4.3:1)."""
