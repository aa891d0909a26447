"""Every `python` example of docs/python.md runs, in order, in one namespace."""

from __future__ import annotations

import re

from conftest import ROOT


def blocks(page: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page, flags=re.S | re.M)


def test_every_python_example_of_the_page_runs(state, monkeypatch, capsys):
    monkeypatch.setenv("DPQ_STATE_DIR", str(state))
    found = blocks((ROOT / "docs" / "python.md").read_text())
    assert len(found) >= 4
    namespace: dict = {}
    for block in found:
        exec(compile(block, "docs/python.md", "exec"), namespace)
    assert "noisy count" in capsys.readouterr().out


def test_the_readmes_python_example_runs(state, monkeypatch):
    monkeypatch.setenv("DPQ_STATE_DIR", str(state))
    [block] = blocks((ROOT / "README.md").read_text())
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["young"].kind == "count"
