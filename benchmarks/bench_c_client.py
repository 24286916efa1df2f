"""Macro-step round trip seen from the C client library, next to raw libzmq with the same bytes.

    python benchmarks/bench_c_client.py [--steps 200] [--rounds 60] [--build DIR]

Builds interfaces/ with CMake (into DIR, default a temporary folder), starts `rbcosim serve`
with the toy rigid side (one point and joint "tip": a 6-value wrench and 13-value node
kinematics in, 13-value kinematics, 19-value motions and 4 gaps out, all inline float64) and
runs interfaces/c/bench/bench_roundtrip, which measures four loops side by side, alternating
within each round (the median and the best round, µs per round trip):

- lib/server: `rbc_step` against the rbcosim server (encode, send, receive, decode);
- raw/server: a hand-written libzmq DEALER sending the same step requests, encoded before the
  clock starts, and receiving the replies undecoded, against the same server;
- lib/fake, raw/fake: the same two against a C ROUTER in the benchmark's process that answers
  each step with the real server's reply bytes (parent_id and step patched in), so that the
  Python server's ~100+ µs do not hide the library's cost.

lib/raw is the library's overhead over raw libzmq (target: at most 1.2). Each client has its
own ZeroMQ context (one I/O thread), as an rbc_client does. Not a pass/fail test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FACTORY = "toy_side:ToySide.from_scenario"


def build(folder: Path) -> Path:
    subprocess.run(
        ["cmake", "-S", str(ROOT / "interfaces"), "-B", str(folder), "-DCMAKE_BUILD_TYPE=Release"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        ["cmake", "--build", str(folder), "-j2", "--target", "bench_roundtrip"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return folder / "bench_roundtrip"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="round trips per loop and round")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--build", type=Path, help="CMake build folder (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        program = build(args.build or Path(tmp) / "build")
        # tests/ holds the toy rigid side (toy_side.py)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")]))
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rbcosim.cli.serve_cmd",
                "--bind",
                "tcp://127.0.0.1:0",
                "--root",
                tmp,
                "--rigid-factory",
                FACTORY,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        try:
            address = server.stdout.readline().split()[2]
            out = subprocess.run(
                [str(program), address, str(args.steps), str(args.rounds)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        finally:
            server.terminate()
            server.wait(10)
    figures, best = {}, {}
    for line in out.splitlines():
        print(line)
        parts = line.split()
        if len(parts) >= 2 and "/" in parts[0]:
            figures[parts[0]] = float(parts[1])
            best[parts[0]] = float(parts[-1].rstrip(")"))
    print(
        f"C library / raw libzmq: {figures['lib/server'] / figures['raw/server']:.3f}x against "
        f"rbcosim serve (toy), {figures['lib/fake'] / figures['raw/fake']:.3f}x against the C "
        "fake server (the library's own overhead; target <= 1.2x)"
    )
    print(
        f"best-round ratios — {best['lib/server'] / best['raw/server']:.3f}x against the server, "
        f"{best['lib/fake'] / best['raw/fake']:.3f}x against the C fake server"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
