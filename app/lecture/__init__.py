"""Lecture mode: the event-by-event deck stepped in the browser and the lecturer's controls."""
