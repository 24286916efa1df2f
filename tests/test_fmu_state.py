"""FMU state: rollback with get/set FMU state and serialization re-steps to the same bits."""

from __future__ import annotations

import pytest
from test_fmu_support import bits, open_fmu, scenario_with_points

from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.runtime.fmustate import decode_state, encode_state

pytestmark = pytest.mark.fmu


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return scenario_with_points(tmp_path_factory.mktemp("scenarios"))


@pytest.fixture(scope="module", params=[2, 3], ids=["fmi2", "fmi3"])
def fmu_path(request, scenario, tmp_path_factory):
    out = tmp_path_factory.mktemp("fmus") / f"state_fmi{request.param}.fmu"
    return export_fmu(scenario, out, ExportOptions(fmi_version=request.param))


def _outputs(fmu):
    return [x.name for x in fmu.description.modelVariables if x.causality == "output"]


def _forces(fmu):
    return [x.name for x in fmu.description.modelVariables if x.name.endswith((".fx", ".fz"))]


def _run(fmu, t, H, steps, scale):
    names, forces = _outputs(fmu), _forces(fmu)
    trace = []
    for n in range(steps):
        fmu.set(forces, [scale * (n + 1) * (i + 1) for i in range(len(forces))])
        fmu.do_step(t, H)
        t += H
        trace.extend(fmu.get(names))
    return t, trace


def test_rollback_restores_and_resteps_to_the_same_bits(fmu_path, tmp_path):
    fmu = open_fmu(fmu_path, tmp_path / "u")
    H = float(fmu.description.defaultExperiment.stepSize)
    t, _ = _run(fmu, float(fmu.description.defaultExperiment.startTime), H, 3, 0.5)
    saved = fmu.get_state()
    _, first = _run(fmu, t, H, 5, 1.0)
    _run(fmu, t + 5 * H, H, 4, -3.0)  # wander off with other inputs
    fmu.set_state(saved)
    assert fmu.get(_outputs(fmu)) != first[: len(_outputs(fmu))]
    _, again = _run(fmu, t, H, 5, 1.0)
    fmu.close()
    assert bits(again) == bits(first)


def test_serialized_state_restores_in_another_instance(fmu_path, tmp_path):
    a = open_fmu(fmu_path, tmp_path / "a")
    H = float(a.description.defaultExperiment.stepSize)
    t, _ = _run(a, float(a.description.defaultExperiment.startTime), H, 4, 0.7)
    blob = a.serialize(a.get_state())
    _, expected = _run(a, t, H, 5, 1.0)
    a.close()

    b = open_fmu(fmu_path, tmp_path / "b")
    b.set_state(b.deserialize(blob))
    _, got = _run(b, t, H, 5, 1.0)
    b.close()
    assert bits(got) == bits(expected)


def test_state_codec_round_trips_and_rejects_foreign_bytes():
    state = {
        "values": [0.1, float("nan"), 1e-300, "tcp://h:1"],
        "overrides": {"a.b": "2.0"},
        "flex_reported": ["j"],
        "wrench_pending": False,
        "mode": "STEP",
        "solver": b"\x00\x01raw",
        "joint_angles": [[0.5, 4.0, -2.0]],
    }
    back = decode_state(encode_state(state))
    assert back["solver"] == state["solver"] and back["overrides"] == state["overrides"]
    assert bits(back["values"][:3]) == bits(state["values"][:3])
    assert back["joint_angles"] == state["joint_angles"]
    with pytest.raises(ValueError, match="does not come from an rbcosim FMU"):
        decode_state(b'{"json": 1}' + bytes(60))
    with pytest.raises(ValueError, match="truncated"):
        decode_state(encode_state(state)[:-1])
    spoiled = bytearray(encode_state(state))
    spoiled[30] ^= 1
    with pytest.raises(ValueError, match="checksum"):
        decode_state(bytes(spoiled))
