"""Named, parameterised algorithms (LDAs and rate controllers) and their ``name:key=value`` specs.

Both families are frozen dataclasses of their parameters registered under a name; this module
builds them from a name and keyword parameters, parses the spec strings the CLI takes, and
prints an object back as its spec, so that the two families behave the same way.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Iterable
from typing import Any, ClassVar

from .errors import UsageError


class Parameterized:
    """Mixin for a frozen parameter dataclass with a registered ``name``."""

    name: ClassVar[str]

    def _fields(self) -> tuple[dataclasses.Field, ...]:
        return dataclasses.fields(self)  # type: ignore[arg-type]  # every subclass is a dataclass

    def params(self) -> dict[str, Any]:
        """The parameters as a plain dict: ``type(x)(**x.params()) == x``."""
        return {f.name: getattr(self, f.name) for f in self._fields()}

    @property
    def spec(self) -> str:
        """``name`` or ``name:key=value:...`` for the non-default parameters (the CLI form)."""
        parts = [self.name]
        for f in self._fields():
            value = getattr(self, f.name)
            if value != f.default:
                parts.append(f"{f.name}={_text(value)}")
        return ":".join(parts)


def build(registry: dict[str, type], kind: str, name: str, **params) -> Any:
    """The ``kind`` (e.g. "LDA") registered as ``name`` with the given parameters."""
    cls = registry.get(name)
    if cls is None and "=" in name:  # "spike:alpha=0.6,beta=0.4": the comma began a new spec
        article = "an" if kind[:1] in "AEIOLaeio" else "a"  # an LDA, a controller
        raise UsageError(
            f"{name!r} is a parameter, not {article} {kind}: parameters are joined by ':' "
            f"(e.g. spike:alpha=0.6:beta=0.4), and ',' separates {kind}s"
        )
    if cls is None:
        close = difflib.get_close_matches(name, list(registry), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UsageError(f"unknown {kind} {name!r}{hint}; known: {', '.join(registry)}")
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - fields)
    if unknown:
        known = ", ".join(sorted(fields)) or "none"
        raise UsageError(f"{name}: unknown parameter(s) {', '.join(unknown)} (it takes: {known})")
    return cls(**params)


def parse_specs(text: str | Iterable | None, registry: dict[str, type], kind: str, base: type) -> list:
    """Objects from ``"all"``, a comma-separated list of specs, or a list of specs / objects.

    A spec is ``name`` or ``name:key=value:key=value`` (the form ``spec`` prints); values are
    JSON (``zigzag:dev_factors=[-1,-0.5,0,1]``), or plain text for strings.
    """
    if text is None or text == "all":
        return _every(registry)
    items = _split_specs(text) if isinstance(text, str) else list(text)
    out: list = []
    for item in items:
        if isinstance(item, base):
            out.append(item)
        elif item == "all":
            out.extend(_every(registry))
        else:
            name, *pairs = item.split(":")
            params = {}
            for pair in pairs:
                key, sep, value = pair.partition("=")
                if not sep or not key:
                    raise UsageError(f"bad {kind} parameter {pair!r} in {item!r}: expected key=value")
                params[key.strip()] = _value(value.strip())
            out.append(build(registry, kind, name.strip(), **params))
    if not out:
        raise UsageError(f"no {kind} given")
    names = [obj.spec for obj in out]
    if len(set(names)) != len(names):
        raise UsageError(f"a {kind} is named twice: {', '.join(names)}")
    return out


def _every(registry: dict[str, type]) -> list:
    """What ``all`` means: every registered one but those that must be named (``in_all`` False)."""
    return [registry[name]() for name in names_in_all(registry)]


def names_in_all(registry: dict[str, type]) -> list[str]:
    """The names ``all`` brings in, in the registry's order (the others must be named)."""
    return [name for name, cls in registry.items() if getattr(cls, "in_all", True)]


def asks_for_all(text: str | Iterable | None) -> bool:
    """Whether ``text`` (as :func:`parse_specs` takes it) asks for every registered one:
    ``None``, ``"all"``, or ``"all"`` among its items (``"all,biaz:upper=1.4"``)."""
    if text is None or text == "all":
        return True
    items = _split_specs(text) if isinstance(text, str) else list(text)
    return any(isinstance(item, str) and item.strip() == "all" for item in items)


def _split_specs(text: str) -> list[str]:
    """Split at commas outside brackets."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _text(value) -> str:
    """A parameter value as the spec parser reads it back: JSON, or bare text for a string
    that JSON would not read as itself."""
    if isinstance(value, str) and _value(value) == value:
        return value
    return json.dumps(list(value) if isinstance(value, tuple) else value, separators=(",", ":"))


def _value(text: str):
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return tuple(value) if isinstance(value, list) else value


def check_fraction(owner: str, **values: float) -> None:
    """Raise UsageError unless every value is a number in [0, 1]."""
    for key, value in values.items():
        if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
            raise UsageError(f"{owner}: {key} must be a number between 0 and 1, not {value!r}")


def check_positive(owner: str, **values: float) -> None:
    """Raise UsageError unless every value is a number > 0."""
    for key, value in values.items():
        if not (isinstance(value, (int, float)) and value > 0):
            raise UsageError(f"{owner}: {key} must be a positive number, not {value!r}")
