"""Presentation of results: text and Markdown tables (CI formats and plots come here too)."""
