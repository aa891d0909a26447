"""dpq.connect: a session in a real `dpq serve` on loopback, with the same run and results."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

import dpq
from conftest import ROOT

CLASSROOM = ROOT / "examples" / "classroom"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(dpq_bin, tmp_path):
    policy = (CLASSROOM / "policy.toml").read_text()
    policy = policy.replace('source = "../data/people.csv"', f'source = "{ROOT / "examples" / "data" / "people.csv"}"')
    policy = policy.replace('state_dir = "state"', f'state_dir = "{tmp_path / "state"}"')
    (tmp_path / "policy.toml").write_text(policy)
    shutil.copytree(CLASSROOM / "tokens", tmp_path / "tokens")
    port = free_port()
    process = subprocess.Popen(
        [str(dpq_bin), "serve", "--policy", str(tmp_path / "policy.toml"), "--listen", f"127.0.0.1:{port}", "--allow-public-tokens", "--quiet"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url + "/v1/health", timeout=1).read()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"dpq serve did not start: {process.stderr.read().decode()}")
            time.sleep(0.1)
    yield url
    process.terminate()
    process.wait(timeout=10)


def token(name: str) -> str:
    return (CLASSROOM / "tokens" / f"{name}.token").read_text().strip()


def test_a_session_in_a_server_runs_statements_and_gives_results(server):
    c = dpq.connect(server, token("alice"))
    assert "alice" in c.greeting() and "people" in c.greeting()
    assert c.tables() == ["people"]
    [used, count] = c.run("USE people;\nCOUNT WHERE age < 30 WITH EPS 0.1;")
    assert used.kind == "using"
    d = count.to_dict()
    assert d["kind"] == "count" and d["eps_spent"] == 0.1
    assert "noisy count" in str(count)
    [b] = c.run("SHOW BUDGET;")
    assert b.to_dict()["spent"] == 0.1
    assert len(b.to_pandas()) == 1
    # Bob has his own budget of the class's one.
    other = dpq.connect(server, token("bob"))
    [_, again] = other.run("USE people; COUNT WHERE age < 30 WITH EPS 0.1;")
    assert again.to_dict()["budget_spent"] == 0.1


def test_a_servers_errors_raise_their_class_placed_in_the_source(server):
    c = dpq.connect(server, token("carol"))
    with pytest.raises(dpq.UnknownName) as raised:
        c.run("USE people;\nCOUNT WHERE agee < 30 WITH EPS 0.1;", origin="cell")
    e = raised.value
    assert str(e).startswith("cell:2:13: unknown column `agee`")
    assert [r.kind for r in e.results] == ["using"]
    with pytest.raises(dpq.NotPermitted):
        c.run("USE people; COUNT WHERE age < 30 WITH EPS 0.3;")
    with pytest.raises(dpq.SyntaxError):
        c.run("COUTN;")


def test_a_wrong_token_or_no_server_is_a_connection_error(server):
    with pytest.raises(dpq.ConnectionError, match="refused"):
        dpq.connect(server, "not-a-token")
    with pytest.raises(dpq.ConnectionError, match="cannot reach"):
        dpq.connect(f"http://127.0.0.1:{free_port()}", token("alice"))
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle

        pickle.dumps(dpq.connect(server, token("alice")))
