"""Model and tool text never becomes live HTML."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentik_jupyter.widgets.markdown import is_safe_url, render_markdown
from agentik_jupyter.widgets.sanitize import sanitize_html


@pytest.mark.parametrize(
    "attack",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        "<iframe src=https://evil.example></iframe>",
        "<svg onload=alert(1)>",
    ],
)
def test_raw_html_in_model_text_shows_as_text(attack: str) -> None:
    out = render_markdown(f"Hello {attack} world\n\n{attack}")
    assert "<script" not in out and "<img" not in out and "<iframe" not in out and "<svg" not in out
    assert "&lt;" in out


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,x", "vbscript:x", "file:///etc/passwd"]
)
def test_only_http_and_mailto_links(url: str) -> None:
    out = render_markdown(f"[click]({url}) and <{url}>")
    assert "href" not in out
    assert not is_safe_url(url)


def test_safe_links_open_in_a_new_tab_and_images_become_links() -> None:
    out = render_markdown("[a](https://example.org/x?q=1) [m](mailto:a@b.c) ![chart](https://e.org/c.png)")
    assert 'href="https://example.org/x?q=1"' in out and 'href="mailto:a@b.c"' in out
    assert 'rel="noopener noreferrer nofollow"' in out and "<img" not in out
    assert 'href="https://e.org/c.png"' in out


def test_markdown_features_render() -> None:
    out = render_markdown("# T\n\n**b** `x<1`\n\n```python\nif a < b:\n    pass\n```\n\n|a|b|\n|-|-|\n|1|2|")
    assert "<h1>T</h1>" in out and "<strong>b</strong>" in out and "<code>x&lt;1</code>" in out
    assert '<code class="language-python">if a &lt; b:' in out and "<table>" in out


def test_attribute_injection_in_link_is_encoded() -> None:
    out = render_markdown('[f](https://a.b/"onmouseover="alert(1))')
    assert 'onmouseover="' not in out


def test_sanitizer_keeps_a_dataframe_table_and_drops_active_content() -> None:
    df = pd.DataFrame({"a": [1, 2], "b": ["<script>x</script>", "<img src=x onerror=alert(1)>"]})
    out = sanitize_html(df._repr_html_())
    assert '<table border="1" class="dataframe">' in out and "<td>1</td>" in out
    assert "<script" not in out and "<img" not in out and "<style" not in out
    assert "&lt;script&gt;" in out
    hostile = sanitize_html('<td onclick="x">q</td><a href="javascript:x">t</a><script>bad()</script><svg><g/></svg>')
    assert hostile == "<td>q</td>t"


def test_sanitizer_closes_unclosed_tags() -> None:
    assert sanitize_html("<table><tr><td>x") == "<table><tr><td>x</td></tr></table>"


HTML_PIECES = (
    "<table>|</table>|<tr>|</tr>|<td>|</td>|<td colspan='2' onclick=\"x\">|<br>|<br/>|<hr/>|<p>|</p>|"
    '<div class="agentik-diff-added" style="x">|</div>|<span title=\'a"b\'>|</span>|<script>|</script>|'
    "<style>|</style>|<svg>|<!-- c -->|<![CDATA[x]]>|<b>|</i>|<pre>|</pre>|&amp;|&lt;|&nbsp;|&#x27;|&amp|AT&T|"
    "&#0;|<|>|\"|'|\u202e|\u200b|\ufeff|\n|\r\n| |x|é|<td nowrap>|<TD ALIGN=left>|<?pi?>|<!doctype html>"
).split("|")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(HTML_PIECES), max_size=30).map("".join))
def test_sanitised_html_is_its_own_sanitised_form(markup: str) -> None:
    """A transcript's card shows a tool's display as the transcript's JSON keeps it, sanitised once;
    sanitising it again would change nothing."""
    once = sanitize_html(markup)
    assert sanitize_html(once) == once
