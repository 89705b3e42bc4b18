"""The pages: one folder each (its page, its settings, its helpers), registered in ``navigation.PAGES``."""
