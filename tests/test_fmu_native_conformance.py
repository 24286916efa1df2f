"""The native FMU under the calls the FMI standard allows and the ones it must refuse: a state
restored before initialization, state blobs with a valid checksum and bad fields, steps too
large to run, and (server mode) a server that ends with its host and logs through the FMI
logger."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fmi_calls_host import build_host, statuses, unpack
from fmpy.fmi1 import FMICallException
from native_build import native_unavailable
from test_fmu_support import REPO, bits, open_fmu

from rbcosim.fmu_export.packaging.native_fmu import NativeBuildError, export_native_fmu

pytestmark = pytest.mark.fmu

PENDULUM = REPO / "scenarios" / "double_pendulum.toml"
TWO_MASS = REPO / "scenarios" / "two_mass_oscillator.toml"
OUTPUTS = ["rod1.x", "rod1.z", "rod2.wy"]
#: Offsets in the blob (fmu/native/fmu_state.c): tag 8, n_vars 4, state 4, step 8, macro 8.
STEP_AT, MACRO_AT = 16, 24


def fnv1a(data: bytes) -> int:
    """The blob's checksum (fmu_state.c), computed independently."""
    h = 1469598103934665603
    for byte in data:
        h = ((h ^ byte) * 1099511628211) % 2**64
    return h


def resealed(blob: bytes, at: int, fmt: str, value) -> bytes:
    """``blob`` with the field at ``at`` replaced and the checksum recomputed."""
    body = bytearray(blob[:-8])
    struct.pack_into(fmt, body, at, value)
    return bytes(body) + struct.pack("<Q", fnv1a(bytes(body)))


@pytest.fixture(scope="module", params=[2, 3], ids=["fmi2", "fmi3"])
def local_fmu(request, tmp_path_factory):
    try:
        return export_native_fmu(PENDULUM, tmp_path_factory.mktemp("n") / "dp.fmu",
                                 fmi_version=request.param, self_contained=True)
    except NativeBuildError as exc:
        native_unavailable(str(exc))


def test_state_restores_before_initialization(local_fmu, tmp_path):
    """28.5: a state saved while stepping restores into a fresh, instantiated instance, which
    then steps on to the same bits as the original."""
    a = open_fmu(local_fmu, tmp_path / "a")
    h = float(a.description.defaultExperiment.stepSize)
    for k in range(3):
        a.do_step(k * h, h)
    blob = a.serialize(a.get_state())
    a.do_step(3 * h, h)
    expected = a.get(OUTPUTS)
    a.close()
    b = open_fmu(local_fmu, tmp_path / "a", initialize=False)
    try:
        b.set_state(b.deserialize(blob))  # in instantiated
        b.do_step(3 * h, h)
        assert bits(b.get(OUTPUTS)) == bits(expected)
    finally:
        b.close()


@pytest.mark.parametrize("field", [
    (MACRO_AT, "<d", float("nan"), "macro step"), (MACRO_AT, "<d", 1e-12, "macro step"),
    (MACRO_AT, "<d", -1e-3, "macro step"), (STEP_AT, "<q", -7, "step index"),
    (STEP_AT, "<q", 2**60, "step index")], ids=["nan", "tiny", "negative", "step-7",
                                                 "step2^60"])
def test_state_fields_are_checked_before_use(local_fmu, tmp_path, field):
    """31.3: a blob whose checksum is right but whose macro step or step index is not usable
    is refused (Error), naming the field; the instance then recovers with a good state."""
    at, fmt, value, named = field
    fmu = open_fmu(local_fmu, tmp_path / "u")
    try:
        h = float(fmu.description.defaultExperiment.stepSize)
        good = fmu.serialize(fmu.get_state())
        with pytest.raises(FMICallException) as info:
            fmu.set_state(fmu.deserialize(resealed(good, at, fmt, value)))
        assert info.value.status == 3
        assert named in fmu.messages()
        fmu.set_state(fmu.deserialize(good))
        fmu.do_step(0.0, h)
    finally:
        fmu.close()


@pytest.mark.parametrize("size", [1e300, 1e6])
def test_huge_step_is_refused(local_fmu, tmp_path, size):
    fmu = open_fmu(local_fmu, tmp_path / "u")
    try:
        with pytest.raises(FMICallException):
            fmu.do_step(0.0, size)
        assert "at most 1000000 of them per doStep" in fmu.messages()
    finally:
        fmu.slave.freeInstance()


@pytest.fixture(scope="module")
def server_fmu(tmp_path_factory):
    folder = tmp_path_factory.mktemp("s")
    try:
        fmu = export_native_fmu(TWO_MASS, folder / "s.fmu", fmi_version=2, address="")
    except NativeBuildError as exc:
        native_unavailable(str(exc))
    return unpack(fmu, folder / "s")[0], build_host(folder)


def _server_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}


def _gone(pid: int, limit: float = 60.0) -> bool:
    """Whether process ``pid`` has ended (or is a zombie) within ``limit`` s."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.2)
    return False


def _server_pid(log: str) -> int:
    line = next(x for x in log.splitlines() if "started a local rbcosim serve (pid" in x)
    return int(line.split("(pid ")[1].split(")")[0])


def test_server_ends_when_the_host_exits_without_free_and_logs_through_fmi(server_fmu):
    """31.5 / 28.8: the host exits without terminate or free; the server it started ends.
    Everything the server wrote reached the host through the FMI logger, not its stderr."""
    head, host = server_fmu
    done = subprocess.run([str(host), *head, "instantiate", "setup:0", "enter:0", "exit",
                           "step:0:0.001", "quit"], env=_server_env(), capture_output=True,
                          text=True, timeout=300, check=True)
    assert statuses(done.stdout) == ["0", "0", "0", "0", "0", "-"], done.stderr
    assert all(line.startswith("[fmi_calls status ") for line in done.stderr.splitlines())
    assert "rbcosim serve: serving on tcp://127.0.0.1:" in done.stderr
    assert _gone(_server_pid(done.stderr))


def test_server_ends_when_the_host_is_killed(server_fmu, tmp_path):
    head, host = server_fmu
    log = tmp_path / "host.err"
    with log.open("w") as err:
        proc = subprocess.Popen([str(host), *head, "instantiate", "setup:0", "enter:0",
                                 "exit", "sleep:600"], env=_server_env(),
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        end = time.monotonic() + 240
        while "started a local rbcosim serve" not in log.read_text() and proc.poll() is None:
            assert time.monotonic() < end, log.read_text()
            time.sleep(0.2)
        pid = _server_pid(log.read_text())
        assert Path(f"/proc/{pid}").exists()  # running while the host runs
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _gone(pid)
