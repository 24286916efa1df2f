"""The maximal-coordinate formulation: constraints, Newton–Euler dynamics with Lagrange multipliers, integrators, the rigid run loop, and the C core's Python side (`kernels`)."""
