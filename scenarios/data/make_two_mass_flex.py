"""Write the flexible side of the two-mass oscillator: scenarios/two_mass_flex.npz, and the same
M, K, C as Matrix Market files in scenarios/data/two_mass/ (read by the C and Fortran examples
and by scenarios/two_mass_oscillator_mtx.toml).

Coordinates [u_b, x2]: u_b is a massless boundary DOF at the interface point (follows the point
along inertial X), x2 the displacement of mass m2 along X. The coupling spring kc and damper dc
join u_b to m2, the spring k2 joins m2 to ground:

    M = diag(0, m2),  K = [[kc, -kc], [-kc, kc + k2]],  C = [[dc, -dc], [-dc, dc]]

with m2 = 1 kg, k2 = 1000 N/m, kc = 100 N/m, dc = 1 N·s/m. Output node "m2" = the second DOF.

Run: python scenarios/data/make_two_mass_flex.py  (writes next to the scenarios).
"""

from pathlib import Path

import numpy as np
import scipy.io

M2, K2, KC, DC = 1.0, 1000.0, 100.0, 1.0


def main() -> None:
    out = Path(__file__).resolve().parent.parent / "two_mass_flex.npz"
    rows = np.zeros((1, 3, 2))
    rows[0, 0, 1] = 1.0  # m2 moves along X by x2
    np.savez(
        out,
        M=np.diag([0.0, M2]),
        K=np.array([[KC, -KC], [-KC, KC + K2]]),
        C=np.array([[DC, -DC], [-DC, DC]]),
        n_boundary=np.int64(1),
        boundary_dofs=np.array(["x"]),
        output_names=np.array(["m2"]),
        output_rows=rows,
        output_positions=np.zeros((1, 3)),
    )
    print(f"wrote {out}")
    folder = Path(__file__).resolve().parent / "two_mass"
    folder.mkdir(exist_ok=True)
    for name, matrix in (("M", np.diag([0.0, M2])), ("K", np.array([[KC, -KC], [-KC, KC + K2]])),
                         ("C", np.array([[DC, -DC], [-DC, DC]]))):
        scipy.io.mmwrite(folder / f"{name.lower()}.mtx", matrix, precision=17,
                         comment=f"two-mass oscillator, {name} (SI), coordinates [u_b, x2]")
    print(f"wrote {folder}/{{m,k,c}}.mtx")


if __name__ == "__main__":
    main()
