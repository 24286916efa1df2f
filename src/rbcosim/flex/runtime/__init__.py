"""Running a flexible body: its solvers (grounded, floating, chord frame, several nodes), the interface frame and exchanged data."""
