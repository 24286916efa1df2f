"""The client's request encoder (wire.RequestEncoder) gives the bytes of the one codec's
`encode` (what the server decodes), and InterfaceMotion.rows the motions and messages of
from_array row by row."""

import numpy as np
import pytest

from rbcosim import PROTOCOL_VERSION
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.service.wire import FRAME_MIN_BYTES, RequestEncoder, encode, frames_pay

rng = np.random.default_rng(7)
CASES = [
    ("step", "s-1", {"client": "c-1", "step": 5, "flex_kinematics": rng.random((1, 13)),
                     "flex_energy": rng.random(1), "wrench_polynomial": rng.random((1, 3, 6))}),
    ("step", "s-1", {"client": "c-1", "step": 6, "flex_kinematics": rng.random((2, 13)),
                     "flex_energy": rng.random(2), "wrench_polynomial": rng.random((2, 2, 6)),
                     "interface_jacobian": rng.random((2, 2, 6, 6))}),
    ("hello", None, {"protocol_version": PROTOCOL_VERSION, "client_name": "x"}),
    ("create_session", None, {"scenario": "a.toml", "overrides": {"a": "1", "b": "2"},
                              "barrier_timeout": 3.0, "wait_for_joints": True}),
    ("step", "s-2", {"client": "c-1", "step": 5, "wrench": rng.random((3000, 6)),
                     "interface_jacobian": rng.random((3000, 2, 6, 6))}),
    ("set_state", "s-2", {"state": b"abc" * 100000, "step": 3}),
    ("close", "s-2", {}),
    ("x", "s", {"nested": [np.zeros(3), {"a": np.ones((2, 2))}], "g": np.float64(2.5),
                "i": np.int64(3), "n": None, "big": np.zeros((40, 300))}),
    ("y", "s", {"e": np.zeros((0, 6)), "f": np.arange(6.0).reshape(2, 3).T,
                "f32": np.ones((4, 4), dtype=np.float32), "long": "é" * 40000,
                "bin16": np.ones((100, 10))}),
]


@pytest.mark.parametrize("msg_type,session,content", CASES)
def test_request_encoder_gives_encode_bytes(msg_type, session, content):
    encoder = RequestEncoder(PROTOCOL_VERSION)
    for i in range(3):  # the first time packs the pieces, later ones reuse them
        msg_id = f"py1-ab-{10 ** i}"
        want = encode({"version": PROTOCOL_VERSION, "msg_id": msg_id, "msg_type": msg_type,
                       "session": session, "content": content}, frames_pay(content))
        got = encoder.encode(msg_id, msg_type, session, content)
        assert [bytes(f) for f in got] == [bytes(f) for f in want]


def test_request_encoder_frames_at_the_threshold():
    encoder = RequestEncoder(PROTOCOL_VERSION)
    below = {"a": np.zeros(FRAME_MIN_BYTES // 8 - 1)}
    at = {"a": np.zeros(FRAME_MIN_BYTES // 8)}
    assert len(encoder.encode("1", "t", "s", below)) == 1
    assert len(encoder.encode("1", "t", "s", at)) == 2


def test_motion_rows_are_from_array_rows():
    values = rng.random((3, 19))
    values[:, 3:7] /= np.linalg.norm(values[:, 3:7], axis=1)[:, None]
    ms = InterfaceMotion.rows(values, 0.25)
    for m, row in zip(ms, values):
        one = InterfaceMotion.from_array(row, 0.25)
        assert m.time == one.time == 0.25
        assert np.array_equal(m.as_array(), one.as_array())
        for name in ("position", "quaternion", "velocity", "angular_velocity", "acceleration",
                     "angular_acceleration"):
            assert np.array_equal(getattr(m, name), getattr(one, name))
            assert not getattr(m, name).flags.writeable
    values[0, 0] = 99.0  # copied
    assert ms[0].position[0] != 99.0


def test_motion_rows_name_the_bad_row_as_from_array():
    bad = rng.random((2, 19))
    bad[1, 10] = np.nan
    with pytest.raises(ValueError) as rows_error:
        InterfaceMotion.rows(bad)
    with pytest.raises(ValueError) as one_error:
        InterfaceMotion.from_array(bad[1])
    assert str(rows_error.value) == str(one_error.value)
    assert str(rows_error.value).startswith("angular_velocity: contains non-finite values")
    with pytest.raises(ValueError, match=r"acceleration: expected shape \(3,\), got \(0,\)"):
        InterfaceMotion.rows(rng.random((1, 13)))
    with pytest.raises(ValueError, match=r"motion: expected 19 values, got shape \(20,\)"):
        InterfaceMotion.rows(rng.random((1, 20)))
