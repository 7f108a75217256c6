"""retainlint.output.escape: text from the checked tree made safe for terminals and Markdown."""

import pytest
from markdown_it import MarkdownIt

from retainlint.output.escape import code_span

# GitHub renders job summaries and hover text as GFM; markdown-it-py (a dependency of rich)
# with tables on reads code spans the same way CommonMark does.
_MD = MarkdownIt("commonmark").enable("table")

HOSTILE = [
    "x.py",
    "a`b.py",
    "`</code><img src=x onerror=alert(1)>`",
    "``[click](https://evil.example)``",
    "` ``` [x](javascript:alert(1)) ",
    "`",
    "line\nbreak <b>bold</b>",
    "",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_code_span_renders_as_one_code_element_with_the_text(text):
    html = _MD.render(f"see {code_span(text)} here")
    assert html.count("<code>") == 1 and "<a " not in html and "<img" not in html and "<b>" not in html
    inner = html.split("<code>", 1)[1].split("</code>", 1)[0]
    shown = inner.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    # the padding code_span adds is dropped again; an empty text shows as one space
    assert shown == (text.replace("\n", "\\n") or " ")


def test_code_span_in_a_table_cell_with_pipes():
    span = code_span("a|b`|c").replace("|", "\\|")
    html = _MD.render(f"| where | what |\n|---|---|\n| {span} | x |\n")
    assert html.count("<td>") == 2 and "<code>a|b`|c</code>" in html
