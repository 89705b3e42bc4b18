"""Showing a visitor's text safely (app/frame/safe_text.py): as a code span, or escaped so nothing in it is markup."""

import re

import pytest

from app.frame.safe_text import plain, shown

HOSTILE = [
    "[Log in again](https://evil.example/login)",
    "![x](http://127.0.0.2:9/track)",
    "**bold** __under__ $x^2$ <b>tag</b>",
    "https://evil.example www.evil.example someone@evil.example",
    "`code` ``more`` ```fences```",
    "line one\nline two # heading",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_plain_escapes_every_markdown_character_and_breaks_autolinks(text):
    escaped = plain(text)
    punctuation = r"[!-/:-@\[-`{-~]"
    assert not re.search(punctuation, re.sub(r"\\" + punctuation, "", escaped))  # none left unescaped
    assert "://" not in escaped.replace("\\", "") and "www." not in escaped.replace("\\", "").lower()
    unescaped = re.sub(r"\\(" + punctuation + ")", r"\1", escaped).replace("\u200b", "").replace("  \n", "\n")
    assert unescaped == text  # and it still says exactly what the visitor typed


@pytest.mark.parametrize("text", HOSTILE)
def test_shown_is_one_code_span_however_many_backticks_the_value_holds(text):
    span = shown(text)
    fence = re.match(r"`+", span).group()
    inside = span[len(fence) : -len(fence)]
    assert span.endswith(fence) and fence not in inside.replace(fence + "`", "")  # nothing closes it early
    assert "\n" not in span


def test_long_values_are_cut_with_an_ellipsis():
    assert len(shown("x" * 10_000)) < 100 and shown("x" * 10_000).endswith("…`")
    assert len(plain("y" * 10_000)) < 700 and plain("y" * 10_000).endswith("…")


@pytest.mark.parametrize("value", [":skull:", ":material/home:", "a:+1:b", ":smile_cat:"])
def test_no_short_code_survives_in_a_message_or_a_code_span(value):
    """Streamlit's Markdown draws :skull: as 💀 (even with its colons escaped) and :material/home: as an icon (even
    inside a code span): a zero-width space after the opening colon leaves the visitor's text as text."""
    for shown_text in (plain(value), shown(value)):
        unescaped = shown_text.replace("\\", "").strip("`")
        assert re.search(r":[A-Za-z0-9_+\-/]+:", unescaped) is None, shown_text
        assert unescaped.replace("\u200b", "") == value
    assert plain("10:30") == "10\\:30"  # a colon that opens no short code is left alone
