"""Bounds on the numbers read from input files (scenario files, structure files, ``--set``).

Numbers are finite and at most MAX_MAGNITUDE in size: a product of three of them (an energy
m·v², a moment I·ω²) stays far inside float64 (1.8e308), so inputs alone cannot overflow the
physics.
"""

#: Largest |x| of any number in a scenario or structure file.
MAX_MAGNITUDE = 1e100
