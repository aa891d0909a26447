"""The notebook magic: ``%load_ext dpq``, then ``%%dpq`` cells and ``%dpq`` lines."""

from __future__ import annotations

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ._errors import Error
from ._session import Session, last_session


@magics_class
class DpqMagics(Magics):
    """``%%dpq`` runs its cell's statements in the notebook's session and shows every result
    as the prompt would, as HTML; ``%dpq STATEMENT;`` runs one line."""

    @magic_arguments()
    @argument("-o", "--output", help="bind the last result to this variable")
    @argument("-s", "--session", help="the variable holding the dpq.Session (or connection) to run in")
    @argument("statement", nargs="*", help="with %%dpq, the statements of the line")
    @line_cell_magic
    def dpq(self, line: str, cell: str | None = None):
        args = parse_argstring(self.dpq, line)
        source = cell if cell is not None else " ".join(args.statement)
        session = self._session(args.session)
        try:
            results = session.run(source, origin="cell")
        except Error as e:
            for r in e.results:
                display(r)
            if args.output and e.results:
                self.shell.user_ns[args.output] = e.results[-1]
            raise
        for r in results:
            display(r)
        if args.output and results:
            self.shell.user_ns[args.output] = results[-1]
        return None

    def _session(self, name: str | None):
        if name:
            if name not in self.shell.user_ns:
                raise Error(f"%%dpq -s {name}: no variable {name} in the notebook")
            return self.shell.user_ns[name]
        session = last_session()
        if session is None:
            # The notebook's session: the command line's state directory and budgets.
            session = Session()
            self.shell.user_ns.setdefault("dpq_session", session)
        return session


def load(ipython) -> None:
    ipython.register_magics(DpqMagics)
