"""The served rigid side's one-call gaps (_core.served_gaps) and input check (_core.all_finite)
against an independent evaluation: the joint-by-joint C gaps and closed-form distances."""

import math

import numpy as np
import pytest

from rbcosim import _core


def _kin(position, angle, velocity, spin):
    """13-vector: position, attitude rotated `angle` rad about z, velocity, angular velocity."""
    q = [math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)]
    return np.array([*position, *q, *velocity, *spin], dtype=np.float64)


def test_served_gaps_equal_the_closed_form_and_count_the_joints_over():
    outputs = np.stack([_kin([0, 0, 0], 0.0, [0, 0, 0], [0, 0, 0]),
                        _kin([1, 2, 3], 0.1, [1, 0, 0], [0, 0, 1])])
    flex = (_kin([0.003, 0.004, 0], 0.02, [0, 0.5, 0], [0, 0, 0]),  # joint 0 at point 1
            None,                                                    # joint 1: not reported
            _kin([1, 2, 3], 0.1, [1, 0, 0], [0, 0, 1]))             # joint 2 at point 1
    point = np.array([1, 0, 1], dtype=np.int64)
    tol = np.full((3, 4), 1e-3)
    gaps = np.full((3, 4), np.nan)
    over = _core.served_gaps(outputs, point, flex, tol, gaps)
    expected0 = [math.dist([1, 2, 3], [0.003, 0.004, 0]), 0.08,
                 math.dist([1, 0, 0], [0, 0.5, 0]), 1.0]
    np.testing.assert_allclose(gaps[0], expected0, rtol=1e-12)
    assert gaps[1].tolist() == [0.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(gaps[2], 0.0, atol=1e-15)
    assert over == 1
    one = np.empty(4)
    _core.joint_gaps(outputs[1], flex[0], one)  # the joint-by-joint evaluation, bit for bit
    assert gaps[0].tobytes() == one.tobytes()


def test_served_gaps_refuses_a_flex_row_of_the_wrong_size():
    with pytest.raises(ValueError, match="served_gaps: joint 0: flex"):
        _core.served_gaps(np.zeros((1, 13)), np.zeros(1, dtype=np.int64), (np.zeros(12),),
                          np.zeros((1, 4)), np.zeros((1, 4)))


def test_all_finite():
    assert _core.all_finite(np.ones((2, 3)))
    assert _core.all_finite(np.zeros((0, 6)))
    assert not _core.all_finite(np.array([1.0, np.inf]))
    assert not _core.all_finite(np.array([[0.0], [np.nan]]))
