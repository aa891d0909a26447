"""dpq: differentially private questions of a table, with every spending of its budget kept.

    >>> import dpq
    >>> s = dpq.Session(practice=True, seed=1)
    >>> s.load("examples/data/people.csv", "people")            # or a pandas/Polars DataFrame
    >>> [count] = s.run("COUNT WHERE age <= 30 WITH EPS 0.1 PRIOR p=0.3;")
    >>> count.to_dict()["noisy"], count.to_dict()["bayes"]

A :class:`Session` is the prompt's session, its ledgers in the same state directory, so a
notebook and the command line share one budget, and restarting a kernel resets nothing.
:func:`connect` opens a session in a dpq server. In a notebook, ``%load_ext dpq`` adds the
``%%dpq`` cell magic. Errors raise subclasses of :class:`Error`. See ``docs/python.md``.
"""

from ._dpq import __version__
from ._errors import (
    BudgetExceeded,
    ConnectionError,
    DataError,
    Error,
    Interrupted,
    InvalidQuery,
    LedgerError,
    NotPermitted,
    Refused,
    SyntaxError,
    UnknownName,
)
from ._results import Result
from ._session import Connection, Session, connect


def help(topic: str = "") -> str:  # noqa: A001 - the language's own help, as at the prompt
    """The help of the language, as the prompt gives it: ``help()`` or ``help("COUNT")``."""
    from ._dpq import help as _help

    return _help(topic)


def load_ipython_extension(ipython) -> None:
    """``%load_ext dpq``: the ``%%dpq`` cell magic and ``%dpq`` line magic."""
    from ._magic import load

    load(ipython)


__all__ = [
    "BudgetExceeded",
    "Connection",
    "ConnectionError",
    "DataError",
    "Error",
    "Interrupted",
    "InvalidQuery",
    "LedgerError",
    "NotPermitted",
    "Refused",
    "Result",
    "Session",
    "SyntaxError",
    "UnknownName",
    "connect",
    "help",
    "__version__",
]
