"""Run an SSP package in libcosim's fixed-step (Jacobi) master; a subprocess of test_fmu_ssp.

    python ssp_master.py PACKAGE.ssp STEP STEPS OUT.npz COMPONENT:VARIABLE ...

writes OUT.npz with `t` and one array per COMPONENT:VARIABLE, each read after every step. It
leaves with os._exit: the FMUs' embedded interpreter is finalised by nobody (see fmu_calls.py).
"""

import os
import sys

import numpy as np
from libcosimpy.CosimExecution import CosimExecution
from libcosimpy.CosimObserver import CosimObserver


def main(package: str, step: str, steps: str, out: str, *names: str) -> None:
    h = float(step)
    execution = CosimExecution.from_ssp_file(ssp_path=package, step_size=round(h * 1e9))
    observer = CosimObserver.create_last_value()
    execution.add_observer(observer)
    reads = []
    for name in names:
        component, variable = name.split(":", 1)
        index = execution.slave_index_from_instance_name(component)
        refs = {v.name.decode(): v.reference for v in execution.slave_variables(index)}
        reads.append((index, refs[variable]))
    rows = []
    for k in range(int(steps)):
        if not execution.step():
            raise SystemExit(f"libcosim step {k} failed")
        rows.append([observer.last_real_values(slave_index=i, variable_references=[r])[0]
                     for i, r in reads])
    values = np.array(rows)
    np.savez(out, t=h * np.arange(1, int(steps) + 1),
             **{name: values[:, j] for j, name in enumerate(names)})


if __name__ == "__main__":
    try:
        main(*sys.argv[1:])
        code = 0
    except BaseException as exc:  # noqa: BLE001 - report, then leave without finalisation
        print(f"ssp_master: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
