"""The project's plain C host as the master of export-ssp packages (fmu/hosts/ssp_run.c, no
Python of its own; the FMUs' embedded interpreter comes from `python -m
rbcosim.fmu_export.runtime.host_env`): the two-mass oscillator and the main job (the rigid–flexible
pendulum) give `rbcosim run`'s Jacobi results to 1e-12, FMI 2 and FMI 3."""

from __future__ import annotations

import os
import subprocess
import zipfile

import fmpy
import numpy as np
import pytest
from fmi_calls_host import REPO
from native_build import native_unavailable
from ssp_fmpy_master import read_package
from test_fmu_ssp_masters import CASES, _reference

from rbcosim.fmu_export.packaging.ssp import export_ssp
from rbcosim.fmu_export.runtime.host_env import host_environment

pytestmark = pytest.mark.fmu


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    import shutil

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        native_unavailable("no C compiler (cc, gcc) is installed")
    exe = tmp_path_factory.mktemp("host") / "ssp_run"
    subprocess.run([compiler, "-O1", "-Wall", "-Werror", "-o", str(exe),
                    str(REPO / "fmu" / "hosts" / "ssp_run.c"),
                    f"-I{REPO / 'fmu' / 'native' / 'include'}", "-ldl"], check=True)
    return exe


def plan(package, folder, steps: int, printed: list[str]) -> str:
    """ssp_run's plan of ``package`` (its FMUs unzipped under ``folder``): components, the
    .ssd's start values and connections, the ``printed`` COMPONENT:VARIABLEs, the run."""
    components, links, starts, h = read_package(package)
    with zipfile.ZipFile(package) as z:
        z.extractall(folder)
    refs, lines = {}, []
    for name, source in components.items():
        unzipped = folder / f"{name}_fmu"
        with zipfile.ZipFile(folder / source) as z:
            z.extractall(unzipped)
        md = fmpy.read_model_description(str(unzipped / "modelDescription.xml"))
        refs[name] = {v.name: v.valueReference for v in md.modelVariables}
        platform = "linux64" if md.fmiVersion == "2.0" else "x86_64-linux"
        binary = unzipped / "binaries" / platform / f"{md.coSimulation.modelIdentifier}.so"
        resources = ((unzipped / "resources").as_uri() if md.fmiVersion == "2.0"
                     else f"{unzipped / 'resources'}/")
        lines.append(f"fmu {name} {binary} {resources} {md.guid}")
    lines += [f"start {c} {refs[c][v]} {x!r}" for (c, v), x in starts.items()]
    lines += [f"link {a} {refs[a][x]} {b} {refs[b][y]}" for a, x, b, y in links]
    lines += [f"print {c} {refs[c][v]}" for c, v in (p.split(":", 1) for p in printed)]
    lines.append(f"run 0.0 {h!r} {steps}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("name", CASES)
def test_c_host_runs_the_package_as_rbcosim_runs(host, tmp_path, name, fmi):
    steps, columns = CASES[name]
    package = export_ssp(REPO / "scenarios" / f"{name}.toml", tmp_path / f"{name}.ssp", fmi)
    plan_file = tmp_path / "plan.txt"
    plan_file.write_text(plan(package, tmp_path, steps, list(columns.values())), "utf-8")
    done = subprocess.run([str(host), str(fmi), str(plan_file)], capture_output=True, text=True,
                          env={**os.environ, **host_environment()}, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = np.array([[float(x) for x in line.split()] for line in done.stdout.splitlines()])
    reference = _reference(name, steps)
    assert got.shape == (steps, 1 + len(columns))
    np.testing.assert_allclose(got[:, 0], reference.t[1:], rtol=0, atol=1e-12)
    for k, column in enumerate(columns, start=1):
        scale = max(1.0, np.abs(reference[column]).max())
        worst = np.abs(got[:, k] - reference[column][1:]).max() / scale
        assert worst <= 1e-12, (column, worst)
