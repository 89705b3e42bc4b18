"""The lab's words as data: the glossary and every metric (with its card)."""
