"""The Python FMU in a host without Python of its own: fmu/hosts/fmi2_run.c, built here, with
the environment `python -m rbcosim.fmu_export.runtime.host_env` prints (the recipe of fmu/README.md).

The host's end values equal `rbcosim run` to the bit, and every run exits cleanly (a crash in
the interpreter's finalisation at exit would show as a signal or a non-zero status)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from native_build import native_unavailable
from test_fmu_support import REPO, bits

from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.runtime.host_env import host_environment
from rbcosim.results import Results

pytestmark = pytest.mark.fmu

PENDULUM = REPO / "scenarios" / "double_pendulum.toml"
STOP, STEP = 0.2, 0.01  # the scenario's dt = 1e-3 and output_every = 10
OUTPUTS = ("rod1.x", "rod1.z", "rod2.x", "rod2.z", "rod2.wy")
RUNS = 4


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        native_unavailable("no C compiler (cc, gcc) is installed")
    headers = REPO / "fmu" / "native" / "include"  # the FMI 2.0.5 headers the native FMU ships
    exe = tmp_path_factory.mktemp("host") / "fmi2_run"
    subprocess.run([compiler, "-O1", "-Wall", "-Werror", "-o", str(exe),
                    str(REPO / "fmu" / "hosts" / "fmi2_run.c"), f"-I{headers}", "-ldl"],
                   check=True)
    linked = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, check=True)
    assert "python" not in linked.stdout.lower()  # the host has no Python of its own
    return exe


def test_host_runs_the_fmu_like_rbcosim_run_and_exits_cleanly(host, tmp_path):
    fmu = export_fmu(PENDULUM, tmp_path / "p.fmu", ExportOptions(fmi_version=2))
    unzipped = tmp_path / "p"
    with zipfile.ZipFile(fmu) as archive:
        archive.extractall(unzipped)
    md = fmpy.read_model_description(str(fmu))
    refs = {v.name: v.valueReference for v in md.modelVariables}
    binary = unzipped / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"

    out = tmp_path / "run.csv"
    subprocess.run([sys.executable, "-m", "rbcosim", "run", str(PENDULUM), "--t-end",
                    str(STOP), "--out", str(out), "--quiet"], check=True)
    reference = Results.read_csv(out)
    expected = np.array([reference[name][-1] for name in OUTPUTS])
    assert reference.t[-1] == pytest.approx(STOP)

    env = {**os.environ, **host_environment()}
    command = [str(host), str(binary), (unzipped / "resources").as_uri(), md.guid, str(STOP),
               str(STEP), *(str(refs[name]) for name in OUTPUTS)]
    for _ in range(RUNS):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300,
                              check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        values = np.array([float(line) for line in done.stdout.split()])
        assert bits(values) == bits(expected), (values, expected)


def test_host_env_prints_loadable_shell_lines():
    env = host_environment()
    assert Path(env["LD_PRELOAD"]).is_file() and "libpython" in env["LD_PRELOAD"]
    assert (Path(env["PYTHONHOME"]) / "lib").is_dir()
    # The import path reaches this rbcosim, however it was installed (editable or not).
    import rbcosim
    package_root = str(Path(rbcosim.__file__).resolve().parents[1])
    assert package_root in env["PYTHONPATH"].split(":")
    assert os.getcwd() not in env["PYTHONPATH"].split(":")  # not where the host happens to run
    printed = subprocess.run([sys.executable, "-m", "rbcosim.fmu_export.runtime.host_env"],
                             capture_output=True, text=True, check=True).stdout
    shell = subprocess.run(["sh", "-c", printed + 'printf "%s|%s|%s" "$LD_PRELOAD" '
                            '"$PYTHONHOME" "$PYTHONPATH"'],
                           capture_output=True, text=True, check=True).stdout
    assert shell.split("|") == [env["LD_PRELOAD"], env["PYTHONHOME"], env["PYTHONPATH"]]
