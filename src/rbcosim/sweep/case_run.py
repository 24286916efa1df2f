"""Run one case (on a Dask worker or in process) and return its row of the results table."""

from __future__ import annotations

import math
import time
import traceback
from pathlib import Path

from rbcosim.errors import RbcosimError
from rbcosim.limits import RunLimits, enforce
from rbcosim.progress import deadline


def flat_figures(diagnostics: dict, prefix: str = "") -> dict[str, float | str]:
    """The run summary's scalar figures by dotted name (running sums starting `_` left out)."""
    out: dict[str, float | str] = {}
    for key, value in diagnostics.items():
        if key.startswith("_"):
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat_figures(value, name + "."))
        elif isinstance(value, (bool, int, float)):
            out[name] = float(value)
        elif isinstance(value, str):
            out[name] = value
    return out


def probe(results, column: str, t: float) -> float:
    """`column` at the first row with time ≥ t (NaN past the end)."""
    times = results.t
    index = int((times < t - 1e-12 * max(1.0, abs(t))).sum())
    return float(results[column][index]) if index < len(times) else math.nan


def case_row(case_key: str, overrides: dict[str, str]) -> dict:
    """The start of a case's row: its key and `param.<key>` per override."""
    return {"case": case_key, **{f"param.{k}": v for k, v in overrides.items()}}


def run_case(scenario_path: str, overrides: dict[str, str], case_key: str, out_dir: str,
             probes: list[tuple[str, float]], limits: RunLimits | None = None,
             timeout: float | None = None, cosim: bool = False) -> dict:
    """Load and run the scenario with `overrides`; write `<out_dir>/cases/<key>.csv`.
    `timeout` (s, None: none): the case fails with a case-timeout error past it. `cosim`: run
    it as `rbcosim cosim` does (a server and one flexible process per flexible body, started
    on this host) instead of in process; the results are the same bits.

    Never raises: a failure (a diverged run, a timeout, ...) becomes a row with status
    "failed" and the error message."""
    from rbcosim.runner import run_scenario
    from rbcosim.scenario.loader import load_scenario

    row = case_row(case_key, overrides)
    start = time.perf_counter()
    try:
        scenario = load_scenario(scenario_path, dict(overrides))
        enforce(scenario, limits or RunLimits())
        with deadline(timeout):
            results = (_distributed(scenario_path, overrides) if cosim else
                       run_scenario(scenario, progress=False))
        path = Path(out_dir) / "cases" / f"{case_key}.csv"
        results.write(path)
        row.update(flat_figures(results.diagnostics))
        for column, t in probes:
            row[f"{column}@{t:g}"] = probe(results, column, t)
        row.update(status="ok", error="", results=str(path))
    except RbcosimError as exc:
        row.update(status="failed", error=str(exc), results="")
    except Exception as exc:  # a solver bug must not end the sweep: keep its trace in the row
        row.update(status="failed", error=f"{type(exc).__name__}: {exc}\n"
                                          f"{traceback.format_exc(limit=5)}", results="")
    row["wall_time"] = time.perf_counter() - start
    return row


def _distributed(scenario_path: str, overrides: dict[str, str]):
    """The case's results from a multi-process co-simulation on this host (quiet)."""
    from rbcosim.distributed.driver import CosimOptions, run_distributed

    # pin none: the sweep's cases run side by side, and one CPU each is not ours to choose
    options = CosimOptions(progress=False, log=lambda text: None, pin="none")
    sets = [f"{key}={value}" for key, value in overrides.items()]
    return run_distributed(scenario_path, sets, options).results
