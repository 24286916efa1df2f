"""Two hosts for real: the server in one network namespace, `rbcosim cosim` and its flexible
process in another, joined by a veth pair (two hosts on one machine), CURVE on and
`--allow-remote`. The co-simulation gives `rbcosim run`'s bits, and its macro steps travel on
the session's direct endpoint (a second TCP connection to the server host, not the socket
loop's port). Needs root and `ip netns`; skipped with the reason where they cannot be made."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from rbcosim.results import Results

pytestmark = pytest.mark.protocol

ROOT = Path(__file__).resolve().parents[1]
PENDULUM = ROOT / "scenarios" / "rigid_flex_pendulum.toml"
SETS = ("--set", "solver.t_end=0.05", "--set", "solver.output_every=10")
RBCOSIM = [sys.executable, "-m", "rbcosim"]
DIRECT_CHECK = """import sys
import msgpack
from rbcosim.client import Client
address, server_key, secret, text = sys.argv[1:]
with Client(address, curve_server_key=server_key, curve_client_secret_file=secret) as c:
    c.create_session(text=text)
    sent = c.send("heartbeat")
    assert c.direct is not None and c.direct.poll(60000), "no reply on the direct endpoint"
    frames = [f for f in c.direct.recv_multipart() if f]
    reply = msgpack.unpackb(frames[0], raw=False)
    print(c.direct_endpoint, reply["status"] if reply["parent_id"] == sent else "other")
    c.close()
"""


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


@contextmanager
def two_hosts():
    """Namespaces A (server, 10.X.0.1) and B (client, 10.X.0.2) joined by a veth pair."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2's `ip`")
    tag = f"rbc{os.getpid() % 100000}"
    subnet = f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}"
    a, b = f"{tag}a", f"{tag}b"
    made = _ip("netns", "add", a)
    if made.returncode != 0:
        pytest.skip(f"cannot make a network namespace here: {made.stderr.strip()}")
    try:
        for step in (("netns", "add", b),
                     ("link", "add", f"{tag}va", "type", "veth", "peer", "name", f"{tag}vb"),
                     ("link", "set", f"{tag}va", "netns", a),
                     ("link", "set", f"{tag}vb", "netns", b),
                     ("-n", a, "addr", "add", f"{subnet}.1/24", "dev", f"{tag}va"),
                     ("-n", b, "addr", "add", f"{subnet}.2/24", "dev", f"{tag}vb"),
                     ("-n", a, "link", "set", f"{tag}va", "up"),
                     ("-n", b, "link", "set", f"{tag}vb", "up"),
                     ("-n", a, "link", "set", "lo", "up"),
                     ("-n", b, "link", "set", "lo", "up")):
            done = _ip(*step)
            if done.returncode != 0:
                pytest.skip(f"cannot join two namespaces: ip {' '.join(step)}: {done.stderr}")
        yield a, b, f"{subnet}.1"
    finally:
        for ns in (a, b):
            _ip("netns", "del", ns)


@contextmanager
def server_in(namespace: str, address: str, keys: Path, root: Path):
    """`rbcosim serve` in the namespace, CURVE on, beyond loopback; yields its endpoint."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", namespace, *RBCOSIM, "serve", "--bind", f"tcp://{address}:0",
         "--allow-remote", "--curve-secret", str(keys / "server.key_secret"),
         "--curve-clients", str(keys / "allowed"), "--root", str(root)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        endpoint, lines = None, []
        for line in server.stdout:  # ends when the server exits
            lines.append(line)
            found = re.search(r"serving on (tcp://\S+)", line)
            endpoint = endpoint or (found and found.group(1))
            if "sessions ready" in line or "sessions unavailable" in line:
                break
        assert endpoint and "sessions ready" in lines[-1], "".join(lines)
        yield endpoint
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_server_and_flexible_solver_on_two_hosts_give_run_bits(tmp_path):
    keys = tmp_path / "keys"
    made = subprocess.run([*RBCOSIM, "serve", "--generate-keys", str(keys)],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    (keys / "allowed").mkdir()
    shutil.copy(keys / "client.key", keys / "allowed" / "client.key")
    (tmp_path / "root").mkdir()

    ran = subprocess.run([*RBCOSIM, "run", str(PENDULUM), *SETS, "--quiet",
                          "--out", str(tmp_path / "run.csv")], capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stderr

    with two_hosts() as (host_a, host_b, address), \
            server_in(host_a, address, keys, tmp_path / "root") as endpoint:
        cosim = subprocess.run(
            ["ip", "netns", "exec", host_b, *RBCOSIM, "cosim", str(PENDULUM), *SETS, "--quiet",
             "--no-plot", "--connect", endpoint,
             "--curve-server-key", str(keys / "server.key"),
             "--curve-secret", str(keys / "client.key_secret"),
             "--out", str(tmp_path / "cosim.csv")],
            capture_output=True, text=True, timeout=300)
        assert cosim.returncode == 0, cosim.stdout + cosim.stderr
        # A client on host B is handed the session worker's own endpoint on host A, reachable
        # with the same keys: the macro steps' path, beside the socket loop's port.
        direct = subprocess.run(
            ["ip", "netns", "exec", host_b, sys.executable, "-c", DIRECT_CHECK, endpoint,
             str(keys / "server.key"), str(keys / "client.key_secret"), PENDULUM.read_text()],
            capture_output=True, text=True, timeout=120)
        assert direct.returncode == 0, direct.stdout + direct.stderr
        seen = direct.stdout.split()
        assert seen[0].startswith(f"tcp://{address}:") and seen[0] != endpoint, seen
        assert seen[1] == "ok", seen

    a = Results.read_csv(tmp_path / "run.csv")
    b = Results.read_csv(tmp_path / "cosim.csv")
    assert a.columns == b.columns and a.data.shape == b.data.shape
    assert np.array_equal(a.data, b.data), "the two-host co-simulation differs from `run`"
