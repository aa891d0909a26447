"""The teaching notebook, run end to end by a real Jupyter kernel, twice: the second kernel
finds the budget the first spent, and answers every question from the ledger."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import ROOT

NOTEBOOK = ROOT / "examples" / "first-lesson.ipynb"


def execute(monkeypatch, state) -> nbformat.NotebookNode:
    monkeypatch.setenv("DPQ_STATE_DIR", str(state))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "examples")}}).execute()
    return nb


def outputs(nb, index: int, mime: str) -> str:
    cell = nb.cells[index]
    return "\n".join(o.get("data", {}).get(mime, "") for o in cell.outputs if "data" in o)


def cell_with(nb, text: str) -> int:
    found = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and text in c.source]
    assert len(found) >= 1, text
    return found[0]


def spent(nb, index: int) -> float:
    html = outputs(nb, index, "text/html")
    assert "<table>" in html
    plain = outputs(nb, index, "text/plain")
    # The row of the table: its name, the total epsilon, what is spent, what remains.
    match = re.search(r"people \S ([0-9.]+) +\S ([0-9.]+) ", plain)
    assert match, plain
    return float(match.group(2))


def test_the_lesson_runs_and_a_restarted_kernel_finds_its_budget_spent(monkeypatch, tmp_path):
    state = tmp_path / "state"
    first = execute(monkeypatch, state)
    for cell in first.cells:
        if cell.cell_type == "code":
            assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
    budgets = [i for i, c in enumerate(first.cells) if c.cell_type == "code" and "SHOW BUDGET" in c.source]
    assert len(budgets) == 2
    assert spent(first, budgets[0]) == 0
    count = cell_with(first, "%%dpq -o young")
    assert "noisy count" in outputs(first, count, "text/plain")
    assert "Bayes estimate" in outputs(first, count, "text/html")
    again = cell_with(first, "%%dpq\nCOUNT WHERE age <= 30")
    assert "identical to an earlier query" in outputs(first, again, "text/plain")
    chart = cell_with(first, "by_sex]")
    html = outputs(first, chart, "text/html")
    assert "<table>" in html and "data:image/svg+xml;base64," in html
    frame = cell_with(first, "by_sex.to_pandas()")
    assert "sex = 'F'" in outputs(first, frame, "text/plain")
    assert spent(first, budgets[1]) == pytest.approx(0.3)

    second = execute(monkeypatch, state)
    assert spent(second, budgets[0]) == pytest.approx(0.3)
    assert "identical to an earlier query" in outputs(second, count, "text/plain")
    assert spent(second, budgets[1]) == pytest.approx(0.3)
