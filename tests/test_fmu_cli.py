"""`rbcosim export-fmu` in process: the subcommand module's parser and handler."""

from __future__ import annotations

import argparse

import fmpy
import pytest
from test_fmu_support import scenario_paths

from rbcosim.cli import export_fmu_cmd

pytestmark = pytest.mark.fmu


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="rbcosim")
    export_fmu_cmd.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return next(iter(scenario_paths(tmp_path_factory.mktemp("scenarios")).values()))


@pytest.mark.parametrize("version", [2, 3])
def test_export_writes_an_fmu_of_the_asked_version(scenario, tmp_path, version, capsys):
    out = tmp_path / "x.fmu"
    assert _main(["export-fmu", str(scenario), "-o", str(out), "--fmi", str(version)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert fmpy.read_model_description(str(out)).fmiVersion.startswith(f"{version}.0")


def test_output_must_be_an_fmu_file(scenario, tmp_path):
    assert _main(["export-fmu", str(scenario), "-o", str(tmp_path / "x.zip")]) == 2


def test_missing_scenario_fails(tmp_path):
    assert _main(["export-fmu", str(tmp_path / "none.toml"), "-o", str(tmp_path / "x.fmu")]) == 1


def test_derivatives_flag_declares_them_and_refuses_remote_mode(scenario, tmp_path, capsys):
    out = tmp_path / "d.fmu"
    assert _main(["export-fmu", str(scenario), "-o", str(out), "--derivatives"]) == 0
    assert fmpy.read_model_description(str(out)).coSimulation.providesDirectionalDerivative
    assert _main(["export-fmu", str(scenario), "-o", str(out), "--derivatives",
                  "--mode", "remote"]) == 2
    assert "--derivatives re-runs the step inside the FMU: embedded mode only" in (
        capsys.readouterr().err)
