"""The C library (protocol 1.3) sends a session's requests to its direct endpoint: the
server's socket loop forwards only what came before the endpoint was known."""

from __future__ import annotations

import pytest
from service_helpers import running_server, toy_service
from test_c_client import c_exchange

pytestmark = pytest.mark.protocol


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
def test_the_c_client_steps_over_the_direct_endpoint(native_build, tmp_path,
                                                     transport):
    bind = "tcp://127.0.0.1:0" if transport == "tcp" else f"ipc://{tmp_path}/s.sock"
    with running_server(toy_service(), bind) as server:
        out = c_exchange(native_build, server.address, 30, tmp_path)
        forwarded = server.workers.forwarded
    assert out["server_version"] == "1.3" and len(out["step"]) == 30
    # create_session, then a second connection of live_exchange that joins the session by id
    # (its heartbeat, its attach): a handful, not one per step
    assert forwarded < 10, forwarded
