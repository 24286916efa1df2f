"""The chord body's step glue: its kernels' rows are made contiguous once (not per call) and
its frame takes each pin's position, velocity and acceleration columns, as the chord frame's
definition (rbcosim.flex.modelling.chord) has them."""

from __future__ import annotations

import numpy as np

from rbcosim.flex.modelling.chord import ChordModel
from rbcosim.flex.runtime.chord_body import ChordBody
from rbcosim.flex.runtime.chord_kernels import contiguous_rows, frame_inputs


def _model() -> ChordModel:
    return ChordModel.from_beam(0.3, 2.0e11, 7870.0, 2.8e-5, 6.4e-11, n_elements=8, n_modes=4,
                                output_nodes={"mid": 0.15})


def test_rows_made_contiguous_are_taken_as_they_are():
    model = _model()
    rows = contiguous_rows(model.modal_rows)
    assert contiguous_rows(rows) is rows  # a body's rows, every step: no copy
    for made, given in zip(rows, model.modal_rows, strict=True):
        assert made.flags.c_contiguous and made.dtype == np.float64
        np.testing.assert_array_equal(made, given)
    again = contiguous_rows(tuple(model.modal_rows))  # a plain tuple: made again
    assert again is not rows and all(np.array_equal(a, b) for a, b in zip(again, rows))


def test_the_frame_takes_the_pins_position_velocity_and_acceleration():
    body = ChordBody(_model())
    motions = np.random.default_rng(3).normal(size=(2, 19))
    pins = [np.concatenate([m[0:3], m[7:10], m[13:16]]).reshape(3, 3) for m in motions]
    np.testing.assert_array_equal(body.frame(motions), frame_inputs(*pins, body.gravity))
