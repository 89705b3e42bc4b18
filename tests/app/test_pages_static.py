"""What Streamlit would draw by accident: a page module's bare string (after its docstring) is rendered by
Streamlit's "magic" as Markdown at the top of the page, so constants are documented with comments there."""

import ast
from pathlib import Path

import pytest

PAGES = sorted((Path(__file__).resolve().parents[2] / "app" / "views").glob("*/page.py"))


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.parent.name)
def test_a_page_module_has_no_bare_string_but_its_docstring(page):
    body = ast.parse(page.read_text()).body
    strays = [
        node.lineno
        for node in body[1:]
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    ]
    assert strays == [], f"{page.name}: bare strings on lines {strays} would be drawn on the page"


def test_visitors_see_no_error_details_and_no_developer_menu():
    """An unforeseen exception must not show a traceback with the server's paths to a visitor."""
    import tomllib

    from streamlit import config

    settings = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    client = settings["client"]
    assert client["showErrorDetails"] == "type" and client["toolbarMode"] == "viewer"
    described = config._config_options_template["client.showErrorDetails"].description
    assert '"type"' in described and "exception types" in described  # a value this Streamlit knows
