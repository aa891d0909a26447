"""Sessions: a local one over a state directory, and one in a dpq server."""

from __future__ import annotations

import os
import re
import sys
import weakref
from typing import Any

from . import _dpq
from ._errors import Error
from ._results import Result

_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_KEYWORDS = frozenset(k.upper() for k in _dpq.keywords())

# The session a notebook's `%%dpq` cells run in when they name none: the last one opened.
_last: weakref.ref | None = None


def _remember(session: Any) -> None:
    global _last
    _last = weakref.ref(session)


def last_session() -> Any:
    """The session opened last in this process (``None`` when there is none)."""
    return _last() if _last is not None else None


def quote_text(text: str) -> str:
    """``text`` as a string of the language: ``'...'``, a quote written twice."""
    return "'" + text.replace("'", "''") + "'"


def quote_name(name: str) -> str:
    """``name`` as a name of the language: as it is when it is a plain word, else quoted."""
    if _BARE.match(name) and name.upper() not in _KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def _outcomes(done: list) -> list[Result]:
    return [Result(*d) for d in done]


class Session:
    """A dpq session, as the prompt's: the same statements, the same ledgers on disk.

    A notebook and the command line on one state directory share one budget, and a new
    kernel finds what an old one spent.

    Args:
        state_dir: the directory of the ledgers; by default ``DPQ_STATE_DIR``, else ``dpq``
            in the user's data directory, as for the command line.
        practice: keep spending in memory only: nothing is read from the state directory or
            recorded in it, and every result says so.
        seed: draw noise from this seed: reproducible, not private (every result says so;
            spending goes to a practice copy of each ledger).
    """

    __slots__ = ("_native", "_practice", "_seed", "__weakref__")

    def __init__(self, state_dir: str | os.PathLike | None = None, practice: bool = False, seed: int | None = None):
        directory = os.fspath(state_dir) if state_dir is not None else None
        try:
            self._native = _dpq.NativeSession(directory, bool(practice), seed)
        except ValueError as e:
            raise Error(f"dpq: {e}") from None
        self._practice = bool(practice)
        self._seed = seed
        _remember(self)

    def run(self, text: str, *, origin: str = "<python>") -> list[Result]:
        """Runs the statements of ``text`` in order and returns their results. The first
        that fails raises its :class:`dpq.Error` (the results before it are its
        ``results``), and those after it do not run."""
        return _outcomes(self._native.run(text, origin))

    def load(self, data: Any, name: str, **options: Any) -> Result:
        """Loads ``data`` as the table ``name`` and makes it current.

        ``data`` is a path to a CSV or Parquet file (as ``LOAD 'path'``), a PostgreSQL
        connection string with ``table="schema.name"`` (as ``LOAD POSTGRES``), or any table
        with ``__arrow_c_stream__`` (a pandas or Polars DataFrame, a pyarrow Table). A
        DataFrame's ledger is found by its content, as a file's is: the same rows in a new
        kernel find the same budget.

        Options (each a clause of ``LOAD``): ``neighbours="replace"`` or
        ``"add_remove"``; ``privacy_unit="column"`` with ``max_rows=k``; for CSV files
        ``header=False`` (``NO HEADER``) and ``columns="age integer, ..."`` (``COLUMNS``).
        """
        allowed = {"neighbours", "privacy_unit", "max_rows", "header", "columns", "table"}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise TypeError(f"load() has no option {', '.join(unknown)}; it has {', '.join(sorted(allowed))}")
        if "header" in options and not isinstance(options["header"], bool):
            raise TypeError("header= is True or False")
        clauses = _clauses(options)
        target = quote_name(name)
        if hasattr(data, "__arrow_c_stream__") or _is_pandas(data):
            if options.get("table") is not None:
                raise TypeError("table= names a PostgreSQL table; a DataFrame is given whole")
            shown = f"<{_kind_of(data)}>"
            statement = f"LOAD {quote_text(shown)} AS {target}{clauses};"
            stream = _arrow_stream(data, statement)
            return _outcomes(self._native.load_rows(stream, shown, statement))[-1]
        if isinstance(data, (str, os.PathLike)):
            where = quote_text(os.fspath(data))
            if options.get("table") is not None:
                source = f"POSTGRES {where} TABLE {quote_name(str(options['table']))}"
            else:
                source = where
            return _outcomes(self._native.load(f"LOAD {source} AS {target}{clauses};"))[-1]
        raise TypeError(
            f"load() reads a path, a PostgreSQL connection string or a table with __arrow_c_stream__, not {type(data).__name__}"
        )

    def tables(self) -> list[str]:
        """The names of the loaded tables."""
        return [name for name, _ in self._native.names()]

    def __repr__(self) -> str:
        mode = "practice" if self._practice else "ledgers on disk"
        seeded = f", seed {self._seed} (not private)" if self._seed is not None else ""
        return f"<dpq.Session: {mode}{seeded}; tables: {', '.join(self.tables()) or 'none'}>"

    def __reduce__(self):
        raise TypeError("a dpq session cannot be pickled: its budget lives in its state directory; open a new dpq.Session there")


class Connection:
    """A session in a dpq server (``dpq serve``), opened by :func:`dpq.connect`: the same
    :meth:`run` and results, the server's policy and budgets."""

    __slots__ = ("_native", "_url", "__weakref__")

    def __init__(self, url: str, token: str):
        self._native = _dpq.NativeRemote(url, token)
        self._url = url
        _remember(self)

    def run(self, text: str, *, origin: str = "<python>") -> list[Result]:
        """Runs the statements of ``text`` on the server, as :meth:`Session.run`."""
        return _outcomes(self._native.run(text, origin))

    def greeting(self) -> str:
        """The server, the analyst, and each of their datasets with what is left of it."""
        return self._native.greeting()

    def tables(self) -> list[str]:
        """The analyst's datasets."""
        return [name for name, _ in self._native.names()]

    def __repr__(self) -> str:
        return f"<dpq.Connection to {self._url}; datasets: {', '.join(self.tables()) or 'none'}>"

    def __reduce__(self):
        raise TypeError("a dpq connection cannot be pickled: connect again with dpq.connect")


def connect(url: str, token: str | None = None) -> Connection:
    """A session in the dpq server at ``url`` with the analyst's ``token`` (by default the
    environment's ``DPQ_TOKEN``, as ``dpq connect`` reads it)."""
    if token is None:
        token = os.environ.get("DPQ_TOKEN")
        if not token:
            from ._errors import ConnectionError

            raise ConnectionError("no token: give token= or set DPQ_TOKEN (the curator hands it out)")
    return Connection(url, token)


def _clauses(options: dict[str, Any]) -> str:
    out = []
    if options.get("header") is False:
        out.append("NO HEADER")
    if options.get("neighbours") is not None:
        out.append(f"NEIGHBOURS {quote_name(str(options['neighbours']))}")
    if options.get("privacy_unit") is not None:
        unit = f"PRIVACY UNIT {quote_name(str(options['privacy_unit']))}"
        if options.get("max_rows") is not None:
            unit += f" MAX ROWS {int(options['max_rows'])}"
        out.append(unit)
    elif options.get("max_rows") is not None:
        raise TypeError("max_rows= bounds a privacy unit: give privacy_unit= too")
    if options.get("columns") is not None:
        out.append(f"COLUMNS ({options['columns']})")
    return "".join(" " + c for c in out)


def _kind_of(data: Any) -> str:
    module = type(data).__module__.split(".")[0]
    return f"{module} {type(data).__name__}"


def _is_pandas(data: Any) -> bool:
    # Without importing pandas: a pandas DataFrame exists only once pandas is imported.
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(data, pandas.DataFrame)


def _arrow_stream(data: Any, statement: str) -> Any:
    """What gives ``data``'s rows as an Arrow stream. A pandas DataFrame goes through
    pyarrow without its index (pandas' own stream would add a non-default index as a
    column), a missing value (NaN, None) as a null. pyarrow's errors can quote a cell: they
    become a message naming the column only."""
    if not _is_pandas(data):
        return data
    import pyarrow as pa

    from ._errors import DataError

    names = [str(c) for c in data.columns]
    if len(set(names)) != len(names) or not all(isinstance(c, str) for c in data.columns):
        raise DataError(
            f"load: cannot load a pandas DataFrame: its column names must be distinct strings\n  = in: {statement}"
        )
    try:
        return pa.Table.from_pandas(data, preserve_index=False)
    except Exception:
        pass
    for name in names:
        try:
            pa.array(data[name], from_pandas=True)
        except Exception:
            raise DataError(
                f"load: cannot load a pandas DataFrame: pyarrow cannot read its column {name!r} "
                "(values of mixed types?); convert it first, e.g. with astype(str)"
            ) from None
    raise DataError("load: cannot load a pandas DataFrame: pyarrow cannot read it") from None
