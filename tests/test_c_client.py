"""The C client library (interfaces/c): conformance transcript, a live server next to the
Python client, error paths, CURVE, and the installed pkg-config files.

Every expected value comes from an independent source: the recorded transcript, the Python
client doing the same exchange, the server, or the header's status enum."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq
from server_process import child_env, rbcosim_serve
from service_helpers import running_server, toy_service

from rbcosim.client import Client, ServiceError
from rbcosim.service import CurveConfig, generate_keys

pytestmark = pytest.mark.protocol

REPO = Path(__file__).resolve().parents[1]
CONFORMANCE = REPO / "interfaces" / "conformance"
HEADER = REPO / "interfaces" / "c" / "rbcosim_client.h"
TOY = '[toy]\npoints = ["tip"]\nmacro_step = 0.01\nsubsteps = 4\nmass = 1.5\ninertia = 0.2\n'
FACTORY = "toy_side:ToySide.from_scenario"


def status_codes() -> dict[str, int]:
    """rbc_status values as the header defines them."""
    return {m[0]: int(m[1]) for m in re.findall(r"\b(RBC_\w+) = (\d+)", HEADER.read_text())}


def run(cmd, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=120, check=False, **kwargs
    )


def serve_toy(bind: str = "tcp://127.0.0.1:0", factory: str | None = FACTORY):
    """`rbcosim serve` with the toy rigid side (factory None: the real one), by default on a
    free port; yields its address."""
    return rbcosim_serve(REPO, bind, factory)


# --- conformance -------------------------------------------------------------------------


def replay(native_build: Path, folder: Path) -> subprocess.CompletedProcess:
    return run(
        [
            native_build / "conformance" / "conformance_replay",
            folder / "exchange.txt",
            folder / "exchange.expect",
        ]
    )


def test_conformance_replay_of_the_committed_transcript(native_build):
    done = replay(native_build, CONFORMANCE)
    assert done.returncode == 0, done.stdout + done.stderr
    requests = sum(line.startswith(">") for line in (CONFORMANCE / "exchange.txt").open())
    assert f"OK: {requests} requests byte-identical" in done.stdout


def test_conformance_replay_of_a_fresh_transcript(native_build, tmp_path):
    """make_transcripts.py against today's server, then the replay: the kit is current."""
    made = run([sys.executable, CONFORMANCE / "make_transcripts.py", tmp_path], env=child_env())
    assert made.returncode == 0, made.stderr
    done = replay(native_build, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_conformance_replay_names_a_changed_request(native_build, tmp_path):
    lines = (CONFORMANCE / "exchange.txt").read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if "6d6f74696f6e73c3" in line)  # motions: true
    lines[index] = lines[index].replace("6d6f74696f6e73c3", "6d6f74696f6e73c2")  # -> false
    (tmp_path / "exchange.txt").write_text("\n".join(lines) + "\n")
    shutil.copy(CONFORMANCE / "exchange.expect", tmp_path)
    done = replay(native_build, tmp_path)
    assert done.returncode == 1
    assert f"line {index + 1} of exchange.txt" in done.stderr and "rbc_attach" in done.stderr


def test_conformance_replay_has_no_leaks(native_build):
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    done = run(
        [
            "valgrind",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--error-exitcode=3",
            native_build / "conformance" / "conformance_replay",
            CONFORMANCE / "exchange.txt",
            CONFORMANCE / "exchange.expect",
        ]
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "definitely lost: 0 bytes" in done.stderr or "no leaks are possible" in done.stderr


def test_build_has_no_warnings(native_build):
    log = (native_build / "build.log").read_text()
    ours = [
        line
        for line in log.splitlines()
        if "warning:" in line and ("interfaces/c/" in line or "conformance/" in line)
    ]
    assert not ours, "\n".join(ours)


# --- a live server, next to the Python client ------------------------------------------------


def spring(x: list[float], k: int) -> list[float]:
    """live_exchange.c's flexible-side stand-in, in Python floats."""
    return [-40.0 * x[0] + 0.5 * k, -40.0 * x[1], -40.0 * x[2] + 3.0, -0.5 * x[10], 0.25, 0.0]


def flex_of(x: list[float], k: int) -> list[float]:
    flex = list(x)
    flex[0] += 1e-4 * (k + 1)
    return flex


def python_exchange(
    address: str, steps: int, point="tip", joint="tip", scenario=None, energy=False, mass=False
) -> dict:
    """What live_exchange.c does, with rbcosim.client.Client (scenario: a path, else TOY)."""
    out: dict = {"step": []}
    with Client(address, timeout=60) as a:
        out["server_version"] = a.hello("python")["protocol_version"]
        if scenario is not None:
            a.create_session(str(scenario))
        else:
            a.create_session(text=TOY)
        att = a.attach([point], [joint], name="live", motions=True)
        k = att["coupling"]
        out["coupling"] = [
            k["scheme"],
            k["extrapolation"],
            k["micro_steps"],
            k["macro_step"],
            k["t_end"],
            k["n_steps"],
            k["output_every"],
            int(k["added_mass"]),
        ]
        out["attach"] = [
            att["step"],
            att["time"],
            *att["kinematics"].ravel().tolist(),
            *att["motions"].ravel().tolist(),
        ]
        if mass:
            a.set_added_mass([(0.5 * np.eye(6)).tolist()])
        kin = att["kinematics"][0].tolist()
        r = a.report(flex_of(kin, 0), [0.0] if energy else None, wrench=[spring(kin, 0)])
        out["report"] = exchange_row(r)
        for s in range(steps):
            kin = r.kinematics[0].tolist()
            e = [0.001 * s] if energy else None
            r = a.step([spring(kin, s + 1)], [flex_of(kin, s + 1)], flex_energy=e)
            out["step"].append(exchange_row(r))
        out["state"] = a.get_state()["state"].hex()
        with Client(address, timeout=10) as b:
            b.session = a.session
            got = b.get_state()
            b.set_state(got["state"], step=got["step"] + 3)
        with pytest.raises(ServiceError) as info:
            a.step([spring(kin, 0)], [flex_of(kin, 0)])
        out["stale"] = info.value.code
        a.detach()
        closed = a.close()
        out["close"] = [closed["step"], closed["time"]]
    return out


def exchange_row(r) -> list:
    return [
        r.step,
        r.time,
        *r.kinematics.ravel().tolist(),
        *r.motions.ravel().tolist(),
        *r.gaps.ravel().tolist(),
    ]


def c_exchange(
    native_build: Path, address: str, steps: int, tmp_path: Path, options=(), scenario=None, **extra
) -> dict:
    """live_exchange's output parsed (options: its flags; scenario: a path, else TOY)."""
    if scenario is None:
        scenario = tmp_path / "toy.toml"
        scenario.write_text(TOY)
    program = native_build / "conformance" / "live_exchange"
    done = run([program, "run", *options, address, scenario, steps], env={**os.environ, **extra})
    assert done.returncode == 0, done.stderr
    out: dict = {"step": []}
    for line in done.stdout.splitlines():
        label, *fields = line.split()
        if label in ("server_version", "stale", "state"):
            out[label] = fields[-1] if label != "stale" else (int(fields[0]), fields[1])
        elif label == "coupling":
            out[label] = [
                fields[0],
                *(int(f) for f in fields[1:3]),
                float.fromhex(fields[3]),
                float.fromhex(fields[4]),
                *(int(f) for f in fields[5:]),
            ]
        else:
            row = [int(fields[0]), *(float.fromhex(f) for f in fields[1:])]
            if label == "step":
                out["step"].append(row)
            else:
                out[label] = row
    return out


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
def test_live_server_numbers_equal_the_python_clients_bitwise(native_build, tmp_path, transport):
    steps = 6
    bind = "tcp://127.0.0.1:0" if transport == "tcp" else f"ipc://{tmp_path}/rbcosim.sock"
    with serve_toy(bind) as address:
        c = c_exchange(native_build, address, steps, tmp_path)
        py = python_exchange(address, steps)
    assert c["server_version"] == py["server_version"]
    assert c["coupling"] == py["coupling"]
    for key in ("attach", "report", "close"):
        assert c[key] == py[key], key  # floats compared exactly: same bits
    assert len(c["step"]) == steps and c["step"] == py["step"]
    assert c["state"] == py["state"]
    assert (
        c["stale"] == (status_codes()["RBC_ERR_SERVER"], py["stale"])
        and py["stale"] == "stale_step"
    )


def test_real_rigid_side_numbers_equal_the_python_clients_bitwise(native_build, tmp_path):
    """The two-mass oscillator on the real rigid side: scenario path, coupling, added mass,
    flexible energy."""
    scenario = REPO / "scenarios" / "two_mass_oscillator.toml"
    names = ["--point", "interface", "--joint", "coupling"]
    options = [*names, "--path", "--energy", "--added-mass"]
    with serve_toy(factory=None) as address:
        c = c_exchange(native_build, address, 4, tmp_path, options, scenario)
        py = python_exchange(address, 4, "interface", "coupling", scenario, True, True)
    assert c["coupling"] == py["coupling"] and c["coupling"][0] == "jacobi"
    for key in ("attach", "report", "step", "state", "close"):
        assert c[key] == py[key], key
    assert c["stale"] == (status_codes()["RBC_ERR_SERVER"], py["stale"])


def test_live_exchange_over_curve(native_build, tmp_path):
    import zmq.auth

    keys = generate_keys(tmp_path / "keys")
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    shutil.copy(keys["client"][0], allowed)
    server_public, _ = zmq.auth.load_certificate(str(keys["server"][0]))
    client_public, client_secret = zmq.auth.load_certificate(str(keys["client"][1]))
    curve = CurveConfig(keys["server"][1], allowed)
    with running_server(toy_service(), curve=curve) as server:
        c = c_exchange(
            native_build,
            server.address,
            2,
            tmp_path,
            RBC_CURVE_SERVER_PUBLIC=server_public.decode(),
            RBC_CURVE_CLIENT_PUBLIC=client_public.decode(),
            RBC_CURVE_CLIENT_SECRET=client_secret.decode(),
        )
        with Client(
            server.address,
            timeout=10,
            curve_server_key=server_public,
            curve_client_secret_file=keys["client"][1],
        ) as py:
            assert c["server_version"] == py.hello()["protocol_version"]
    assert [row[0] for row in c["step"]] == [1, 2]


# --- error paths ---------------------------------------------------------------------------


def hello(native_build: Path, address: str, timeout_ms: int = 300) -> list[str]:
    done = run([native_build / "conformance" / "live_exchange", "hello", address, timeout_ms])
    assert done.returncode == 0, done.stderr
    return done.stdout.split(maxsplit=3)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_endpoint_times_out(native_build):
    out = hello(native_build, f"tcp://127.0.0.1:{free_port()}")
    assert out[:3] == ["hello", str(status_codes()["RBC_ERR_TIMEOUT"]), "timeout"]


@contextlib.contextmanager
def fake_server(reply_for):
    """A ROUTER answering each request with reply_for(request header dict) (a dict)."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            if sock.poll(50):
                identity, empty, header = sock.recv_multipart()
                reply = reply_for(msgpack.unpackb(header, raw=False))
                sock.send_multipart([identity, empty, msgpack.packb(reply, use_bin_type=True)])

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{port}"
    finally:
        stop.set()
        thread.join(5)
        sock.close(0)
        ctx.term()


def reply_envelope(request: dict, version: str, **fields) -> dict:
    return {
        "version": version,
        "msg_id": "r-1",
        "msg_type": request["msg_type"] + "_reply",
        "session": None,
        "parent_id": request["msg_id"],
        **fields,
    }


@pytest.mark.parametrize("how", ["refused", "answered"])
def test_an_incompatible_major_version_is_rbc_err_version(native_build, how):
    def reply_for(request):
        if how == "refused":  # a 2.x server refuses the 1.2 request
            return reply_envelope(
                request,
                "2.0",
                status="error",
                content={},
                error={"code": "incompatible_version", "message": "this server speaks 2.0"},
            )
        return reply_envelope(request, "2.0", status="ok", content={"protocol_version": "2.0"})

    with fake_server(reply_for) as address:
        out = hello(native_build, address, 3000)
    assert out[:3] == ["hello", str(status_codes()["RBC_ERR_VERSION"]), "incompatible_version"]


def test_late_replies_to_other_requests_are_skipped(native_build):
    """A reply whose parent_id is not the awaited request's is dropped, not taken."""

    def reply_for(request):
        return reply_envelope(request, "1.2", status="ok", content={"protocol_version": "1.2"})

    def stale_then_right(request):
        return {**reply_for(request), "parent_id": request["msg_id"] + 100}

    with fake_server(stale_then_right) as address:
        out = hello(native_build, address, 500)
    assert out[:3] == ["hello", str(status_codes()["RBC_ERR_TIMEOUT"]), "timeout"]
    with fake_server(reply_for) as address:
        out = hello(native_build, address, 3000)
    assert out[:3] == ["hello", str(status_codes()["RBC_OK"]), "1.2"]


def test_misuse_is_refused_by_the_library(native_build):
    done = run([native_build / "conformance" / "live_exchange", "misuse"])
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    argument = f"{status_codes()['RBC_ERR_ARGUMENT']} invalid_argument"
    for call in (
        "step_unattached",
        "wait_without_send",
        "attach_without_session",
        "create_two_sources",
        "create_no_source",
        "join_empty",
        "null_client",
    ):
        assert lines[call] == argument, (call, lines[call])
    assert lines["connect_bad_endpoint"].startswith("1 cannot connect to nonsense://x")
    assert lines["connect_bad_curve"].startswith("1 CURVE key server_public must be 40")


# --- install and pkg-config ----------------------------------------------------------------

PROGRAM = """#include <rbcosim_client.h>
int main(void) { rbc_client *c = rbc_connect("tcp://127.0.0.1:1", 0, 10, 0, 0);
                 int ok = c != 0 && rbc_error_code(c)[0] == 0; rbc_destroy(c); return !ok; }
"""


def test_install_and_pkg_config_shared_and_static(native_build, tmp_path):
    prefix = tmp_path / "prefix"
    done = run(["cmake", "--install", native_build, "--prefix", prefix])
    assert done.returncode == 0, done.stdout + done.stderr
    pcs = sorted(prefix.rglob("rbcosim-client.pc"))
    assert len(pcs) == 1 and (prefix / "include" / "rbcosim_client.h").is_file()
    pkg_env = {**os.environ, "PKG_CONFIG_PATH": str(pcs[0].parent)}
    (tmp_path / "p.c").write_text(PROGRAM)
    # Without LD_LIBRARY_PATH: the shared flags carry the install's run path. With --static
    # too: Debian's own libzmq.pc cannot be linked statically, so ours must not pull it in.
    no_library_path = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    for package, static in itertools.product(("rbcosim-client", "rbcosim-client-static"),
                                             ((), ("--static",))):
        exe = tmp_path / (package + "".join(static))
        flags = run(["pkg-config", *static, "--cflags", "--libs", package], env=pkg_env)
        assert flags.returncode == 0, flags.stderr
        cc = run(["cc", "-std=c99", tmp_path / "p.c", "-o", exe, *flags.stdout.split()])
        assert cc.returncode == 0, (package, static, cc.stderr)
        ran = run([exe], env=no_library_path)
        assert ran.returncode == 0, (package, static, ran.stderr)
        needed = run(["readelf", "-d", exe]).stdout
        assert ("librbcosim_client.so" in needed) == (package == "rbcosim-client"), needed


def test_ctest_in_the_build_folder_runs_the_conformance_replay(native_build):
    done = run(["ctest", "--test-dir", native_build, "--output-on-failure"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "conformance_replay" in done.stdout and "100% tests passed" in done.stdout
