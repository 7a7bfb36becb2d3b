"""Errors raised on bad input: each one names the file and the line (or byte offset); and the
warning of a keyword argument renamed (``renamed_keyword``)."""

from __future__ import annotations

import functools
import os
import warnings


class TraceError(ValueError):
    """A trace file could not be read as asked.

    Formats like a compiler diagnostic, ``path:line: message``, followed by the offending
    text, so that a user can open the file at the right place.
    """

    def __init__(
        self,
        path: str | os.PathLike | None,
        message: str,
        *,
        line: int | None = None,
        offset: int | None = None,
        text: str | None = None,
    ) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.message = message
        self.line = line
        self.offset = offset
        self.text = text
        super().__init__(self._render())

    def __reduce__(self):
        # rebuilt from its fields, not from its rendered message: an error crosses a process
        # pool (batch, Dask) whole, subclasses' fields too
        return _restore_trace_error, (type(self), dict(self.__dict__))

    def _render(self) -> str:
        where = self.path or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        elif self.offset is not None:
            where += f": byte {self.offset}"
        out = f"{where}: {self.message}"
        if self.text is not None:
            shown = self.text if len(self.text) <= 200 else self.text[:200] + "..."
            out += f"\n    {shown}"
        return out


def _restore_trace_error(cls: type[TraceError], fields: dict) -> TraceError:
    error = cls.__new__(cls)
    error.__dict__.update(fields)
    ValueError.__init__(error, error._render())
    return error


class UsageError(ValueError):
    """Options that do not fit together or do not fit the input (not a defect of the file)."""


class TraceWarning(UserWarning):
    """Something of a trace was left out or guessed; the message says what and how much."""


def renamed_keyword(old: str, new: str, since: str):
    """Let a function still take its keyword ``old`` (now ``new``), with a FutureWarning: a
    user's code keeps working for a release and is told what to write."""

    def wrap(func):
        @functools.wraps(func)
        def call(*args, **kwargs):
            if old in kwargs:
                if new in kwargs:
                    raise UsageError(f"{func.__name__}: give {new}= only ({old}= is its old name)")
                warnings.warn(
                    f"{func.__name__}({old}=...) is now {func.__name__}({new}=...) (renamed in {since})",
                    FutureWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return call

    return wrap
