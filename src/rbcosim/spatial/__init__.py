"""Spatial math in Python: quaternions (scalar first), rotation matrices, batched 3-vector products."""
