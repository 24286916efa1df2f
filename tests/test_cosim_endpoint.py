"""The server `rbcosim cosim` starts listens on an ipc socket in a folder only this user can
enter (no port other users could reach), tcp loopback where such a path is too long."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rbcosim.client import Client
from rbcosim.distributed.processes import ServerProcess, private_endpoint
from rbcosim.endpoints import IPC_PATH_MAX

ROOT = Path(__file__).resolve().parents[1]


def test_a_short_folder_gets_an_ipc_socket_in_it(tmp_path):
    assert private_endpoint(tmp_path) == f"ipc://{tmp_path}/server.sock"


def test_a_folder_too_long_for_a_socket_gets_tcp_loopback(tmp_path):
    deep = tmp_path / ("d" * (IPC_PATH_MAX - len(os.fsencode(tmp_path))))
    assert len(os.fsencode(deep / "server.sock")) > IPC_PATH_MAX
    assert private_endpoint(deep) == "tcp://127.0.0.1:0"


def test_the_started_server_answers_on_its_private_socket():
    server = ServerProcess(None, 30.0, ROOT / "scenarios")
    try:
        address = server.wait_address()
        path = Path(address.removeprefix("ipc://"))
        assert address.startswith("ipc://") and path.is_socket()
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        with Client(address, timeout=30.0) as client:
            assert client.hello()["protocol_version"]
    finally:
        server.stop()
    assert not path.parent.exists()
