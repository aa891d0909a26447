"""Shared set-up of dpq's Python tests: the repository, the `dpq` binary, fresh state
directories, and the bundled example table."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEOPLE = ROOT / "examples" / "data" / "people.csv"


def dpq_binary() -> Path:
    """The command line built from this checkout: `DPQ_BIN`, else the newer of
    target/release/dpq and target/debug/dpq."""
    given = os.environ.get("DPQ_BIN")
    candidates = [Path(given)] if given else [ROOT / "target" / "release" / "dpq", ROOT / "target" / "debug" / "dpq"]
    built = [c for c in candidates if c.is_file()]
    if built:
        return max(built, key=lambda c: c.stat().st_mtime)
    raise RuntimeError("no dpq binary: run `cargo build --release` (or set DPQ_BIN) before these tests")


@pytest.fixture
def dpq_bin() -> Path:
    return dpq_binary()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def cli(dpq_bin: Path, state: Path | None, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the command line on the state directory `state` (none: `--practice` is among
    `args`), in the repository."""
    where = ["--state-dir", str(state)] if state is not None else []
    return subprocess.run(
        [str(dpq_bin), *where, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=check,
        env={k: v for k, v in os.environ.items() if k != "DPQ_STATE_DIR"},
    )


@pytest.fixture(autouse=True)
def _in_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    # Scripts name the bundled data by relative paths, as the README's do.
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("DPQ_STATE_DIR", raising=False)


def copy_people(tmp_path: Path, name: str = "people.csv") -> Path:
    target = tmp_path / name
    shutil.copyfile(PEOPLE, target)
    return target
