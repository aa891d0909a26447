"""The errors dpq raises: one class per kind of error, all under :class:`dpq.Error`."""

from __future__ import annotations

import json as _json
from typing import Any


class Error(Exception):
    """An error of a dpq statement. Its text is the diagnostic the prompt prints: where
    (``origin:line:column``), the statement's line with a caret, and ``help:`` when there is
    a fix. A statement that fails changes nothing: no budget spent, no release recorded.

    Attributes:
        message: what is wrong, in plain words.
        line, column: where, in the text run (``None`` when the error has no place).
        help: a fix, when one is known.
        results: the results of the statements of the same run that came before it (they
            ran, and spent their budget).
    """

    def __init__(self, text: str, json: str = "", results: list | None = None):
        super().__init__(text)
        try:
            obj = _json.loads(json) if json else {}
        except ValueError:
            obj = {}
        self._json = json
        self.message: str = obj.get("message") or text
        self.line: int | None = obj.get("line")
        self.column: int | None = obj.get("column")
        self.help: str | None = obj.get("help")
        self.results: list = list(results or [])

    def to_dict(self) -> dict[str, Any]:
        """The error as ``--format json`` prints it (``{"kind": "error", ...}``)."""
        if self._json:
            return _json.loads(self._json)
        return {"kind": "error", "message": self.message, "line": None, "column": None, "help": None}

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a traceback: the diagnostic, as the prompt prints it.
        return str(self).splitlines()

    def __reduce__(self):
        return (type(self), (str(self), self._json, self.results))


class SyntaxError(Error):  # noqa: A001 - the language's syntax, named as users expect
    """The text is not a statement of the language."""


class UnknownName(Error):
    """A table or column that does not exist, or no current table."""


class InvalidQuery(Error):
    """A statement that parses but cannot be asked: a parameter out of range, a type that
    does not fit, a count the cube cannot express."""


class BudgetExceeded(Error):
    """The statement would spend more than remains (of the table, a cell, a dataset)."""


class DataError(Error):
    """The data could not be read: a missing or malformed file, a column of a kind dpq does
    not read, a database that failed."""


class LedgerError(Error):
    """The ledger that keeps the budget cannot be used (damaged, missing, a full disk)."""


class NotPermitted(Error):
    """A served dataset's policy does not allow the statement."""


class Refused(Error):
    """The statement conflicts with what the table's ledger records (its neighbour model,
    its cube, a seed after noise was drawn, a name in use)."""


class Interrupted(Error):
    """The run was stopped before the statement ran; nothing of it was spent."""


class ConnectionError(Error):  # noqa: A001
    """A dpq server could not be reached, or refused the token."""


_CLASSES = {
    c.__name__: c
    for c in (
        SyntaxError,
        UnknownName,
        InvalidQuery,
        BudgetExceeded,
        DataError,
        LedgerError,
        NotPermitted,
        Refused,
        Interrupted,
        ConnectionError,
    )
}


def _make(kind: str, text: str, json: str, done: list) -> Error:
    """The exception for an error of kind ``kind`` (called by the native module)."""
    from ._results import Result

    cls = _CLASSES.get(kind, Error)
    return cls(text, json, [Result(*d) for d in done])
