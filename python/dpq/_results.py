"""Results of dpq statements: the JSON object, the prompt's text, tables as DataFrames, HTML."""

from __future__ import annotations

import base64
import html
import json as _json
from typing import Any

# The table of each kind of result: the key of its list of rows, by default first.
_TABLES: dict[str, tuple[str, ...]] = {
    "histogram": ("cells",),
    "budget": ("spending", "cells"),
    "history": ("releases",),
    "tables": ("tables",),
    "loaded": ("columns",),
    "using": ("columns",),
    "table": ("columns",),
}


class Result:
    """The result of one statement.

    ``str(result)`` is the text the prompt prints; :meth:`to_dict` the object
    ``--format json`` prints; :meth:`to_pandas`, :meth:`to_polars` and :meth:`to_arrow` give
    the rows of a result that is a table (``HISTOGRAM`` and ``COUNT BY``: one row per cell;
    ``SHOW BUDGET``: one per spending, or per cell with ``table="cells"``; ``SHOW HISTORY``:
    one per release; ``SHOW TABLES``: one per table; ``LOAD`` and ``DESCRIBE``: one per
    column). In a notebook a result shows itself as HTML, its charts inline.

    A result holds what the prompt would print, and nothing else: no row of the data, no
    true count.
    """

    __slots__ = ("_json", "_text", "_charts")

    def __init__(self, json: str, text: str, charts: list | None = None):
        self._json = json
        self._text = text
        self._charts = [(str(n), str(s)) for n, s in (charts or [])]

    @property
    def kind(self) -> str:
        """What the statement was: ``count``, ``histogram``, ``budget``, ``loaded``, ..."""
        return self.to_dict().get("kind", "")

    @property
    def text(self) -> str:
        """The result as the prompt prints it."""
        return self._text

    @property
    def charts(self) -> list[tuple[str, str]]:
        """The charts the statement wrote (``PLOT 'file.svg'``): ``(file, svg text)``."""
        return list(self._charts)

    def to_dict(self) -> dict[str, Any]:
        """The result as ``dpq --format json`` prints it (a new dict at each call)."""
        return _json.loads(self._json)

    def to_json(self) -> str:
        """The result's line of ``dpq --format json``, byte for byte."""
        return self._json

    def tables(self) -> tuple[str, ...]:
        """The names of the tables this result holds (empty when it is no table)."""
        return _TABLES.get(self.kind, ())

    def rows(self, table: str | None = None) -> list[dict[str, Any]]:
        """The rows of the result's table (``table``: one of :meth:`tables`), as dicts. A
        pair of bounds (``interval95``) becomes two columns, ``interval95_low`` and
        ``interval95_high``."""
        names = self.tables()
        if not names:
            raise TypeError(f"a {self.kind or 'result'} result is not a table; use to_dict()")
        if table is None:
            table = names[0]
        if table not in names:
            raise ValueError(f"a {self.kind} result has the tables {', '.join(names)}, not {table!r}")
        found = self.to_dict().get(table) or []
        return [_flat(row) for row in found if isinstance(row, dict)]

    def to_pandas(self, table: str | None = None):
        """The result's table as a pandas DataFrame (imports pandas)."""
        import pandas as pd

        rows = self.rows(table)
        return pd.DataFrame.from_records(rows, columns=_columns(rows))

    def to_polars(self, table: str | None = None):
        """The result's table as a Polars DataFrame (imports polars)."""
        import polars as pl

        rows = self.rows(table)
        return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()

    def to_arrow(self, table: str | None = None):
        """The result's table as a pyarrow Table (imports pyarrow)."""
        import pyarrow as pa

        return pa.Table.from_pylist(self.rows(table))

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return self._text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Result):
            return NotImplemented
        return (self._json, self._text, self._charts) == (other._json, other._text, other._charts)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        return (Result, (self._json, self._text, self._charts))

    def _repr_html_(self) -> str:
        parts = ['<div class="dpq-result">']
        if self.tables():
            caption = _caption(self.to_dict())
            parts.append(_html_table(self.rows(), caption))
            parts.append(
                "<details><summary>as the prompt prints it</summary>"
                f"<pre>{html.escape(self._text)}</pre></details>"
            )
        else:
            parts.append(f"<pre>{html.escape(self._text)}</pre>")
        for name, svg in self._charts:
            # As an image: a chart's text (category names) can never become markup of the page.
            data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
            parts.append(
                f'<figure><img alt="{html.escape(name)}" src="data:image/svg+xml;base64,{data}"/>'
                f"<figcaption>{html.escape(name)}</figcaption></figure>"
            )
        parts.append("</div>")
        return "".join(parts)


# Columns shown first, in this order; the others follow as the JSON object has them.
_FIRST = ("seq", "cell", "name", "type", "statement", "noisy", "interval95_low", "interval95_high", "eps")


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    out = _flat_pairs(row)
    first = {k: out[k] for k in _FIRST if k in out}
    first.update((k, v) for k, v in out.items() if k not in first)
    return first


def _flat_pairs(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, (int, float)) or v is None for v in value)
            and ("interval" in key or "credible" in key or key.endswith("95"))
        ):
            out[f"{key}_low"], out[f"{key}_high"] = value
        else:
            out[key] = value
    return out


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    return list(seen)


def _caption(obj: dict[str, Any]) -> str:
    bits = []
    if obj.get("statement"):
        bits.append(str(obj["statement"]))
    if obj.get("table") and isinstance(obj["table"], str):
        bits.append(f"table {obj['table']}")
    if obj.get("eps_spent") is not None:
        bits.append(f"epsilon spent {obj['eps_spent']}")
    for key in ("budget_remaining", "remaining"):
        if isinstance(obj.get(key), (int, float)):
            bits.append(f"remaining {obj[key]}")
            break
    if obj.get("from_history"):
        bits.append("answered from the history, nothing spent")
    if obj.get("seed") is not None:
        bits.append("seeded: reproducible, not private")
    if obj.get("practice"):
        bits.append("practice: nothing recorded")
    return "; ".join(bits)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.6g}" if abs(value) < 1e15 else f"{value:.6g}"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    if value is None:
        return ""
    return str(value)


def _html_table(rows: list[dict[str, Any]], caption: str) -> str:
    columns = _columns(rows)
    out = ["<table>"]
    if caption:
        out.append(f"<caption>{html.escape(caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in columns) + "</tr></thead>")
    out.append("<tbody>")
    for row in rows:
        cells = "".join(f"<td>{html.escape(_cell(row.get(c)))}</td>" for c in columns)
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)
