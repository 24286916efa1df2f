"""A flexible body's file: its C core arrays, for C programs that run without Python.

The C examples (``interfaces/c/examples``) and the FMU hosts (``fmu/native/host``) step a
scenario's flexible body with the library's own kernels (``librbcosim/flex``) read from this
file (``librbcosim/flex/body_file.h``, a model file of :mod:`rbcosim.model_file`):

    tag "RBCFLEX2", u32 n_arrays, i32 attachment (0 floating, 1 grounded), i64 micro_steps,
    f64 H (s; grounded: the macro step of the propagator, floating: 0), then the records:
    the body's handle (FlexBody's "flex_floating" / "flex_grounded" arrays), the propagator
    for H (grounded), the output nodes' positions and rows, the grounded reference position
    and the unstressed interior map (see body_file.h).

``rbcosim export-body SCENARIO --body NAME -o FILE`` writes it for a scenario's body.
"""

from __future__ import annotations

import struct

import numpy as np

from rbcosim.flex.runtime.body import FlexBody
from rbcosim.model_file import array_records

TAG = b"RBCFLEX2"  # 2: a floating body carries its moment invariants (RBCFLEX1: export again)


def body_file_bytes(body: FlexBody, H: float,
                    grounded_reference: np.ndarray | None = None) -> bytes:
    """The body file of ``body`` (not yet initialised: the C side places it at the rigid
    point's motion, as FlexEndpoint.initialize does) for macro steps of ``H`` s;
    ``grounded_reference`` (3,) m: a grounded body's unstressed reference position (the
    coupling's), or None."""
    model = body.model
    grounded = model.attachment == "grounded"
    k, nb = model.n_modes, model.n_boundary
    if grounded and model.structure_axes != "inertial":
        raise ValueError("body file: a grounded body's structure axes must be inertial "
                         f"(imported matrices), not {model.structure_axes!r}")
    if not (np.isfinite(H) and H > 0):
        raise ValueError(f"H: expected a positive finite macro step, got {H!r}")
    empty = np.zeros(0)
    reference = unstressed = empty
    if grounded:
        body._update_axes()  # inertial axes: r0 = I, the gravity terms fixed
        p = body._propagator(float(H))
        if grounded_reference is not None:
            reference = np.asarray(grounded_reference, dtype=float).reshape(3)
            rows = model.output_rows.reshape(-1, model.mass.shape[0])
            if rows.size and k:
                # start_unstressed_interior: eta = lstsq(rows_e, -rows_b u_b), linear in u_b
                unstressed = np.linalg.lstsq(rows[:, nb:], -rows[:, :nb], rcond=None)[0]
    else:
        p = empty
    positions = np.asarray(model.output_positions, dtype=float).reshape(-1, 3)
    out_rows = np.asarray(model.output_rows, dtype=float).reshape(positions.shape[0], 3, nb + k)
    arrays = [*body._handle.leaves, p, positions, out_rows, reference, unstressed]
    header = TAG + struct.pack("=Iiqd", len(arrays), int(grounded), int(body.micro_steps),
                               float(H) if grounded else 0.0)
    return header + array_records(arrays)
