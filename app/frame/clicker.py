"""A presentation clicker drives the lab: PageDown and → press the page's "Next event ▶" (lecture mode) or, when
there is none or it is at its last event, "Next step ▶" (a lesson); PageUp and ← go back the same way.
Keys typed into a text box, a number, a slider or a list are theirs, and keys with a modifier are the browser's;
a switch or a checkbox keeps none (after turning lecture mode on, PageDown steps its events).

A script in the page's own document (``st.html`` with JavaScript allowed), registered once per browser tab; it
finds the buttons by their visible names, so it acts on whatever page shows them."""

NEXT = ("Next event ▶", "Next step ▶")
PREVIOUS = ("◀ Previous event", "◀ Previous step")

_SCRIPT = """
(() => {
  if (window.__pplabClicker) return;
  window.__pplabClicker = true;
  const NEXT = %(next)s, PREVIOUS = %(previous)s;
  const ROLES = ['slider', 'combobox', 'listbox', 'spinbutton', 'textbox', 'option'];
  // a switch or a checkbox just pressed (lecture mode's) keeps no keys: PageDown steps, as after any button
  const PRESSED = ['checkbox', 'radio', 'button', 'submit', 'reset'];
  const typing = (el) => el && (el.isContentEditable || /^(TEXTAREA|SELECT)$/.test(el.tagName)
    || (el.tagName === 'INPUT' && !PRESSED.includes(el.type))
    || ROLES.includes(el.getAttribute && el.getAttribute('role')));
  const press = (names) => {
    const buttons = [...document.querySelectorAll('button')];
    for (const name of names) {
      const button = buttons.find((b) => b.innerText.trim() === name && !b.disabled);
      if (button) { button.click(); return true; }
    }
    return false;
  };
  document.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || typing(document.activeElement)) return;
    const forward = event.key === 'PageDown' || event.key === 'ArrowRight';
    const back = event.key === 'PageUp' || event.key === 'ArrowLeft';
    if ((forward || back) && press(forward ? NEXT : PREVIOUS)) event.preventDefault();
  });
})();
"""


def clicker_script() -> str:
    """The ``<script>`` element to put in the page once per run."""
    import json

    return "<script>" + _SCRIPT % {"next": json.dumps(NEXT), "previous": json.dumps(PREVIOUS)} + "</script>"
