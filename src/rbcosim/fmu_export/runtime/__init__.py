"""FMU runtime: what runs inside an exported FMU (the FMI 2/3 slaves, their FMI-independent cores, values, state)."""
