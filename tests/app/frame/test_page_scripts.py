"""The scripts the app puts in every page through ``st.html`` (the clicker's keys, the phone's drawer). Streamlit
sanitises that HTML before it runs the script: a script whose text holds anything that reads as a tag (a comment
saying "its <div>") is dropped whole, and the page silently has no clicker (seen in a browser: the clicker's flag
never set). So each is one ``<script>`` element with no tag inside it."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from app.frame.clicker import clicker_script
from app.frame.phone import phone_script


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)


@pytest.mark.parametrize("script", [clicker_script, phone_script], ids=lambda script: script.__name__)
def test_a_page_script_is_one_script_element_with_no_tag_inside(script):
    html = script()
    elements = _Elements()
    elements.feed(html)
    assert elements.tags == ["script"], elements.tags
    body = html.removeprefix("<script>").removesuffix("</script>")
    assert not re.search(r"</?[A-Za-z!]", body), re.search(r".{0,40}</?[A-Za-z!].{0,40}", body)
