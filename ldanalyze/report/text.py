"""How numbers read in every table a person reads (text, Markdown, the HTML report): shares as
percent with ``%`` in the column's name, a missing value as ``-``, times since the epoch as UTC
date and time. Machine outputs (JSON, CSV, Parquet) keep fractions and seconds, as their
columns' names say (``loss_rate``, ``M_c``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

MISSING = "-"
UTC_FORMAT = "%Y-%m-%d %H:%M:%S.%f"

# The timeline summary's columns as a table shows them: shares in percent, delays in ms.
SUMMARY_PERCENT = {"loss_rate": "loss %", "congestion_rate": "cong %", "wireless_rate": "wless %"}


def number(value, digits: int) -> str:
    """``value`` with ``digits`` decimals, ``-`` when missing."""
    return MISSING if pd.isna(value) else f"{value:.{digits}f}"


def shown(frame: pd.DataFrame, *, percent: Mapping[str, str] | Iterable[str] = (), digits: int = 1,
          fixed: Mapping[str, int] | None = None, utc: Iterable[str] = ()) -> pd.DataFrame:
    """``frame`` as strings for a person: the ``percent`` columns (fractions) ×100 with
    ``digits`` decimals, renamed ``name %`` (or as the mapping says); the ``fixed`` columns with
    their own decimals; the ``utc`` columns (seconds since the epoch) as UTC; every missing
    value ``-``. Other columns are left as they are."""
    names = dict(percent) if isinstance(percent, Mapping) else {c: f"{c} %" for c in percent}
    out = frame.copy()
    for column in names:
        if column in out:
            out[column] = (out[column].astype(float) * 100).map(lambda v: number(v, digits))
    for column, places in (fixed or {}).items():
        if column in out:
            out[column] = out[column].astype(float).map(lambda v, p=places: number(v, p))
    for column in utc:
        if column in out:
            times = pd.to_datetime(out[column], unit="s", utc=True, errors="coerce")
            out[column] = times.dt.strftime(UTC_FORMAT).fillna(MISSING)
    return out.rename(columns={c: n for c, n in names.items() if c in out})


def summary_shown(summary: pd.DataFrame) -> pd.DataFrame:
    """A timeline summary (``Timeline.summary``) as ``inspect`` and the report show it."""
    fixed = {c: 1 for c in summary.columns if c.endswith("_ms")}
    return shown(summary, percent=SUMMARY_PERCENT, digits=2, fixed=fixed)


def text(frame: pd.DataFrame, **options) -> str:
    """:func:`shown` as aligned text, without the index."""
    return shown(frame, **options).to_string(index=False)
