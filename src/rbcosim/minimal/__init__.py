"""Minimal (joint) coordinates: trees by the articulated-body algorithm, closed loops by
coordinate partitioning. See docs/minimal-coordinates.md."""

from rbcosim.minimal.route import (
    coordinate_names,
    degrees_of_freedom,
    is_tree,
    rate_names,
    simulate_minimal,
)

__all__ = ["coordinate_names", "degrees_of_freedom", "is_tree", "rate_names", "simulate_minimal"]
