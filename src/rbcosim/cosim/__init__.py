"""Co-simulation: interface points, the rigid side, continuity checks, the in-process master."""
