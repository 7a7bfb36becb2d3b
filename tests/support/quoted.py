"""What a document's text quotes of a command's or a cell's output, found and checked.

A quote is a backticked span right after the marker ``<!-- output -->`` (invisible once the
Markdown is rendered): ``<!-- output -->`21 file(s) passed over``. It is checked against the
output of what runs above it: spaces compared loosely (a quote may wrap over lines), ``...``
standing for any text."""

from __future__ import annotations

import re

QUOTE = re.compile(r"<!--\s*output\s*-->\s*`([^`]+)`")


def quotes(text: str) -> list[tuple[int, str]]:
    """Each quote of ``text`` with where its marker starts."""
    return [(found.start(), found.group(1)) for found in QUOTE.finditer(text)]


def _loose(text: str) -> str:
    return " ".join(text.split())


def shown_in(quote: str, output: str) -> bool:
    """Whether ``output`` holds ``quote`` (spaces loose, ``...`` any text)."""
    pattern = ".*?".join(re.escape(part.strip()) for part in _loose(quote).split("..."))
    return re.search(pattern, _loose(output), flags=re.S) is not None
