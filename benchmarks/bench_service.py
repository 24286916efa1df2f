"""Macro-step round trip through `rbcosim serve` next to a raw pyzmq + msgpack echo.

    python benchmarks/bench_service.py [--steps 5000] [--points 4] [--rounds 20]

Both servers run as separate processes and receive the same step request (a wrench (n, 6) and
flexible kinematics (n, 13) as inline little-endian float64 bytes); the echo server unpacks it
and packs a reply of the same shape as the service's step reply (kinematics (n, 13), gaps
(n, 4)), with no session logic. The service runs a rigid side that does no physics (NullSide),
so the ratio is the protocol layer's cost: envelope checks, barrier bookkeeping, validation,
array handling; NullSide is Python, so its worker takes the Python path. "C path" is the same
requests to a session the worker's C step path serves (`rbcosim.service.served_path`: one free
rigid body with the n points, RK4, `c_path_scenario`): the protocol layer in C plus a few µs of
physics. "service" is protocol 1.3's path: the step goes straight to the session's
worker at the direct endpoint its create_session reply names (one hop); "via server" is the
1.2 path through the server's socket loop and on to the worker (two hops). Also printed: the
same through `rbcosim.client.Client.step` (direct), and one step of the real rigid–flexible
pendulum for scale. Figures are µs per round trip. Echo and service chunks alternate so that
load from other processes hits both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgpack
import numpy as np
import zmq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class NullSide:
    """RigidSide interface with constant outputs and no physics."""

    def __init__(self, n: int) -> None:
        self.point_names = tuple(f"p{i}" for i in range(n))
        self.joint_names = self.point_names
        self.macro_step = 1e-3
        self.time = 0.0
        self._out = {p: np.arange(13.0) + i for i, p in enumerate(self.point_names)}
        self._gaps = {p: np.zeros(4) for p in self.point_names}

    @classmethod
    def from_scenario(cls, path=None, *, text=None, base_dir=None, overrides=None) -> NullSide:
        return cls(int((text or "4").strip()))

    def parameters(self) -> dict[str, float]:
        return {}

    def point_outputs(self):
        return self._out

    def set_wrench(self, point, wrench) -> None:
        pass

    def set_flex_kinematics(self, joint, kinematics) -> None:
        pass

    def step(self, H: float) -> None:
        self.time += H

    def gaps(self):
        return self._gaps

    def get_state(self) -> bytes:
        return b""

    def set_state(self, blob: bytes) -> None:
        pass


ECHO = """
import sys, msgpack, zmq
sock = zmq.Context().socket(zmq.ROUTER)
sock.bind(sys.argv[1])
print(sock.getsockopt(zmq.LAST_ENDPOINT).decode(), flush=True)
n = int(sys.argv[2])
kin = bytes(8 * 13 * n)
gaps = bytes(8 * 4 * n)
while True:
    ident, delim, header = sock.recv_multipart()
    req = msgpack.unpackb(header, raw=False)
    c = req["content"]
    reply = {"version": "1.0", "msg_id": "e", "msg_type": "step_reply", "session": req["session"],
             "parent_id": req["msg_id"], "status": "ok",
             "content": {"step": c["step"] + 1, "time": 0.0,
                         "kinematics": {"dtype": "<f8", "shape": [n, 13], "data": kin},
                         "gaps": {"dtype": "<f8", "shape": [n, 4], "data": gaps}}}
    sock.send_multipart([ident, delim, msgpack.packb(reply, use_bin_type=True)])
"""

def c_path_scenario(n: int) -> str:
    """A scenario the worker's C step path serves with the request shapes of NullSide's session:
    one free rigid body, n interface points p0.. and as many couplings of the same names (to
    small beams that stay in the flexible process: the server never steps them), tolerances
    no gap reaches (no Python for on_violation), no result row within the run."""
    parts = ['[bodies.box]\nmass = 2.0\ninertia = [0.1, 0.1, 0.1]\nposition = [0.0, 0.0, 0.0]\n']
    for i in range(n):
        parts.append(
            f'[interface_points.p{i}]\nbody = "box"\nposition = [{0.1 * (i + 1)}, 0.0, 0.0]\n'
            f'[flex_bodies.beam{i}]\nkind = "beam"\nattachment = "floating"\nlength = 0.5\n'
            'youngs_modulus = 2.1e11\ndensity = 7850.0\nsection = "square"\nwidth = 0.01\n'
            'elements = 2\nmodes = 1\nplanar = true\n'
            f'[couplings.p{i}]\npoint = "p{i}"\nflex_body = "beam{i}"\ntolerances = '
            '{ position = 1e30, rotation = 1e30, velocity = 1e30, angular_velocity = 1e30 }\n')
    parts.append('[cosim]\nmacro_step = 1e-3\nmicro_steps = 1\n'
                 '[solver]\nintegrator = "rk4"\nt_end = 1e4\noutput_every = 1000000\n')
    return "\n".join(parts)


SERVE_C = """
import sys
from rbcosim.cli.serve_cmd import main
sys.exit(main(["--bind", sys.argv[1], "--root", sys.argv[2]]))
"""

SERVE = """
import sys
sys.path.insert(0, {here!r})
from rbcosim.cli.serve_cmd import main
sys.exit(main(["--bind", sys.argv[1], "--rigid-factory", "bench_service:NullSide.from_scenario"]))
"""


def start(code: str, *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    line = proc.stdout.readline().strip()
    return proc, line.split()[-1]


class RawLoop:
    """A raw DEALER loop: pack a step request, send, receive, unpack, decode the kinematics."""

    def __init__(
        self,
        address: str,
        n: int,
        session: str | None = None,
        client: str | None = None,
        step: int = 0,
        version: str = "1.0",
    ) -> None:
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(address)
        self.n, self.session, self.client, self.step = n, session, client, step
        self.version = version
        self.wrench = np.ones((n, 6))
        self.flex = np.ones((n, 13))

    def run(self, steps: int) -> float:
        """µs per round trip over ``steps`` round trips."""
        n, sock = self.n, self.sock
        t0 = time.perf_counter()
        for _ in range(steps):
            header = {
                "version": self.version,
                "msg_id": str(self.step),
                "msg_type": "step",
                "session": self.session,
                "content": {
                    "client": self.client,
                    "step": self.step,
                    "wrench": {"dtype": "<f8", "shape": [n, 6], "data": self.wrench.tobytes()},
                    "flex_kinematics": {
                        "dtype": "<f8",
                        "shape": [n, 13],
                        "data": self.flex.tobytes(),
                    },
                },
            }
            sock.send_multipart([b"", msgpack.packb(header, use_bin_type=True)])
            frames = sock.recv_multipart()
            reply = msgpack.unpackb(frames[1], raw=False)
            if reply["status"] != "ok":
                raise RuntimeError(reply["error"])
            kin = reply["content"]["kinematics"]
            np.frombuffer(kin["data"], "<f8").reshape(kin["shape"])
            self.step += 1
        return (time.perf_counter() - t0) / steps * 1e6


class ClientLoop:
    """The same through rbcosim.client.Client.step."""

    def __init__(self, address: str, n: int) -> None:
        from rbcosim.client import Client

        self.c = Client(address)
        self.c.create_session(text=str(n))
        names = [f"p{i}" for i in range(n)]
        self.c.attach(names, names)
        self.wrench, self.flex = np.ones((n, 6)), np.ones((n, 13))

    def run(self, steps: int) -> float:
        t0 = time.perf_counter()
        for _ in range(steps):
            self.c.step(self.wrench, self.flex)
        return (time.perf_counter() - t0) / steps * 1e6


def measure(echo_address: str, serve_address: str, c_address: str, n: int, steps: int,
            rounds: int) -> tuple:
    """Alternate chunks of echo, service, via-server, client and C-path round trips, so that
    load from other processes hits them alike; returns medians (echo, service, via, client,
    service ratio, best service ratio, C path, C-path ratio)."""
    from rbcosim.client import Client

    echo = RawLoop(echo_address, n)
    names = [f"p{i}" for i in range(n)]
    with Client(serve_address) as c, Client(serve_address) as c2, Client(c_address) as c3:
        c.create_session(text=str(n))
        c.attach(names, names)
        endpoint = c.direct_endpoint or serve_address
        service = RawLoop(endpoint, n, c.session, c.client_id, c.step_index, "1.3")
        c2.create_session(text=str(n))
        c2.attach(names, names)
        via = RawLoop(serve_address, n, c2.session, c2.client_id, c2.step_index, "1.2")
        client = ClientLoop(serve_address, n)
        c3.create_session(text=c_path_scenario(n))
        c3.attach(names, names)
        c_path = RawLoop(c3.direct_endpoint, n, c3.session, c3.client_id, c3.step_index, "1.3")
        chunk = max(1, steps // rounds)
        for loop in (echo, service, via, client, c_path):
            loop.run(200)
        e, s, v, k, cp, ratios, c_ratios = [], [], [], [], [], [], []
        for _ in range(rounds):
            e.append(echo.run(chunk))
            s.append(service.run(chunk))
            v.append(via.run(chunk))
            k.append(client.run(chunk))
            cp.append(c_path.run(chunk))
            ratios.append(s[-1] / e[-1])
            c_ratios.append(cp[-1] / e[-1])
    med = statistics.median
    return (med(e), med(s), med(v), med(k), med(ratios), min(s) / min(e), med(cp),
            med(c_ratios))


def pendulum_step(steps: int) -> float | None:
    """µs per macro step of the real pendulum scenario through the service over tcp."""
    scenario = ROOT / "scenarios" / "rigid_flex_pendulum.toml"
    try:
        import rbcosim.cosim.rigid_side  # noqa: F401
    except ImportError:
        return None
    if not scenario.is_file():
        return None
    from rbcosim.client import Client

    proc, address = start(
        "import sys; from rbcosim.cli.serve_cmd import main; "
        "sys.exit(main(['--bind', sys.argv[1], '--root', sys.argv[2]]))",
        "tcp://127.0.0.1:0", str(scenario.parent),
    )
    try:
        with Client(address) as c:
            c.create_session(scenario)
            kin = c.attach(["tip"], ["clamp"])["kinematics"]
            wrench = np.zeros(6)
            t0 = time.perf_counter()
            for _ in range(steps):
                kin = c.step(wrench, kin).kinematics
            return (time.perf_counter() - t0) / steps * 1e6
    finally:
        proc.terminate()
        proc.wait()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--points", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=20, help="alternating chunks per transport")
    args = parser.parse_args(argv)
    n = args.points
    tmp = tempfile.mkdtemp(prefix="rbcosim-bench-")
    print(
        f"macro-step round trip, {n} interface points, {args.steps} steps in {args.rounds} alternating "
        "chunks; µs, medians over chunks; 'best' = ratio of the fastest chunks"
    )
    print(f"{'transport':<10}{'echo':>10}{'service':>10}{'ratio':>8}{'best':>8}"
          f"{'via server':>12}{'ratio':>8}{'Client.step':>13}{'C path':>9}{'ratio':>8}")
    for transport in ("tcp", "ipc"):
        bind_echo = "tcp://127.0.0.1:0" if transport == "tcp" else f"ipc://{tmp}/echo.sock"
        bind_serve = "tcp://127.0.0.1:0" if transport == "tcp" else f"ipc://{tmp}/serve.sock"
        echo, echo_address = start(ECHO, bind_echo, str(n))
        serve, serve_address = start(SERVE.format(here=str(HERE)), bind_serve)
        bind_c = "tcp://127.0.0.1:0" if transport == "tcp" else f"ipc://{tmp}/serve_c.sock"
        serve_c, c_address = start(SERVE_C, bind_c, tmp)
        try:
            e, s, v, c, ratio, best, cp, c_ratio = measure(echo_address, serve_address,
                                                           c_address, n, args.steps, args.rounds)
            print(f"{transport:<10}{e:>10.1f}{s:>10.1f}{ratio:>8.2f}{best:>8.2f}{v:>12.1f}"
                  f"{v / e:>8.2f}{c:>13.1f}{cp:>9.1f}{c_ratio:>8.2f}")
        finally:
            for p in (echo, serve, serve_c):
                p.terminate()
                p.wait()
    pend = pendulum_step(min(args.steps, 500))
    if pend is not None:
        print(
            f"rigid_flex_pendulum.toml through the service (tcp, Client.step, real solver): {pend:.1f} µs per macro step"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
