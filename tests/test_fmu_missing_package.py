"""An FMU in a Python without rbcosim (or numpy) fails to instantiate with an FMI log message
naming the package, rather than only "Failed to instantiate model"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_fmu_support import REPO

from rbcosim.fmu_export import ExportOptions, export_fmu

pytestmark = pytest.mark.fmu

CHILD = Path(__file__).with_name("fmu_missing_package.py")


@pytest.fixture(scope="module", params=[2, 3])
def fmu_path(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"missing{request.param}")
    return export_fmu(REPO / "scenarios" / "double_pendulum.toml", tmp / "dp.fmu",
                      ExportOptions(fmi_version=request.param))


@pytest.mark.parametrize("package", ["rbcosim", "numpy"])
def test_a_missing_package_is_named_in_the_fmi_log(fmu_path, package, tmp_path):
    done = subprocess.run([sys.executable, str(CHILD), str(fmu_path), str(tmp_path / "u"),
                           package], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]  # no crash of the host
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["outcome"].startswith("failed: Failed to instantiate")
    message = "\n".join(result["log"])
    assert f"cannot import '{package}': No module named '{package}'" in message
    assert "pip install 'rbcosim[fmu]'" in message and sys.prefix in message
