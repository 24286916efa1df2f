"""Session isolation: a victim session's round trip while another session builds a 2,000-link
model and a third client sends requests without ever reading its replies.

    python benchmarks/bench_isolation.py [--steps 300] [--links 2000]

One `rbcosim serve` (real rigid side). The victim drives the two-mass oscillator's interface
point with a held wrench and its node report, one `step` per round trip, `--steps` of them:
first undisturbed, then while (a) a second process creates a `scenarios/chain.toml` session
with `generators.chain.links = --links` (its build took 0.4 s on the 2-CPU machine; a larger
--links makes it longer) and (b) a third
process sends `results` requests of its own session every 0.5 ms and never reads a reply. Printed: the
victim's median and 90th-percentile round trip in both phases and their ratio (the aim:
within 1.5x), the build's time, and the server's resident memory before and after the flood.
Not a pass/fail test; the figures depend on the machine (2 cores here: the build occupies one).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rbcosim.client import Client

BUILDER = """
import sys, time
from rbcosim.client import Client
c = Client(sys.argv[1], timeout=600)
t0 = time.perf_counter()
print("building", flush=True)
c.create_session("scenarios/chain.toml", overrides={"generators.chain.links": sys.argv[2]})
print(f"built {time.perf_counter() - t0:.2f}", flush=True)
c.close()
"""

NON_READER = """
import sys, time, zmq, msgpack
from rbcosim.client import Client
c = Client(sys.argv[1], timeout=60)
c.create_session("scenarios/two_mass_oscillator.toml")
sock = zmq.Context.instance().socket(zmq.DEALER)
sock.connect(sys.argv[1])
head = {"version": "1.2", "msg_type": "results", "session": c.session, "content": {}}
print("sending", flush=True)
end = time.monotonic() + float(sys.argv[2])
n = 0
while time.monotonic() < end:  # a request every 0.5 ms, as a busy client sends them
    sock.send_multipart([b"", msgpack.packb({**head, "msg_id": n})])
    n += 1
    time.sleep(0.0005)
print(f"sent {n}", flush=True)
time.sleep(3600)  # never reads: the replies are the server's to hold or drop
"""


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


def victim_round_trips(client: Client, steps: int, while_running=None) -> np.ndarray:
    """Round trips (s) of `steps` steps, and on while `while_running` (a process) runs."""
    kin = client.outputs()["kinematics"]
    out = []
    while len(out) < steps or (while_running is not None and while_running.poll() is None):
        wrench = np.array([[-10.0 * kin[0, 0], 0, 0, 0, 0, 0]])
        t0 = time.perf_counter()
        r = client.step(wrench, kin)
        out.append(time.perf_counter() - t0)
        kin = r.kinematics
    return np.array(out)


def start(code: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, text=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--links", type=int, default=2000)
    args = p.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    if True:
        server = subprocess.Popen(
            [sys.executable, "-m", "rbcosim.cli.serve_cmd", "--bind", "tcp://127.0.0.1:0",
             "--root", str(ROOT)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        try:
            address = server.stdout.readline().split()[2]
            victim = Client(address, timeout=120)
            victim.create_session("scenarios/two_mass_oscillator.toml")
            victim.attach(["interface"], ["coupling"])
            victim_round_trips(victim, 50)  # warm
            quiet = victim_round_trips(victim, args.steps)
            rss_before = rss_kib(server.pid)
            builder = start(BUILDER, address, str(args.links))
            flooder = start(NON_READER, address, "5")
            assert builder.stdout.readline().strip() == "building"
            assert flooder.stdout.readline().strip() == "sending"
            time.sleep(0.5)  # the build is under way
            busy = victim_round_trips(victim, args.steps, while_running=builder)
            built = builder.stdout.readline().strip()
            sent = flooder.stdout.readline().strip()
            rss_after = rss_kib(server.pid)
            flooder.kill()
        finally:
            server.terminate()
            server.wait(30)
    q50, q90 = np.percentile(quiet, [50, 90]) * 1e6
    b50, b90 = np.percentile(busy, [50, 90]) * 1e6
    print(f"victim round trip undisturbed: median {q50:.0f} us, p90 {q90:.0f} us ({args.steps} steps)")
    print(f"victim round trip during a {args.links}-link build and a client that never reads: "
          f"median {b50:.0f} us, p90 {b90:.0f} us ({busy.size} steps)")
    print(f"ratio disturbed / undisturbed: median {b50 / q50:.2f}x, p90 {b90 / q90:.2f}x "
          "(aim: within 1.5x)")
    print(f"builder: {built} s; non-reader: {sent} results requests in 5 s; server resident "
          f"memory {rss_before / 1024:.1f} MiB before, {rss_after / 1024:.1f} MiB after")


if __name__ == "__main__":
    main()
