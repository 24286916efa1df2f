"""Send a sweep's cases to Dask and collect the results table (`<out>/sweep.csv`).

The table is rewritten after every finished case, so an interrupted sweep keeps its rows and a
second run of the same sweep only runs the cases whose key is not in the table yet.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from pathlib import Path

from rbcosim.errors import RbcosimError, ScenarioError, SimulationError, UnknownKeyError
from rbcosim.limits import RunLimits
from rbcosim.sweep.case_run import case_row, run_case
from rbcosim.sweep.cases import Case, grid_cases, sample_cases, scenario_digest

TABLE_NAME = "sweep.csv"


def sweep(scenario, *, grid: list[str] = (), sample: list[str] = (), samples: int = 0,
          seed: int = 0, overrides: dict[str, str] | None = None, out="sweep",
          scheduler: str | None = None, workers: int | None = None,
          probes: list[tuple[str, float]] = (), progress: bool = True, on_result=None,
          limits: RunLimits | None = None, case_timeout: float | None = None,
          cosim: bool = False):
    """Run every case of a grid (`grid`: "KEY=V1,V2,...") or of `samples` random draws
    (`sample`: "KEY=uniform(a, b)" ...) and return the table as a pandas DataFrame.

    `overrides` apply to every case; `scheduler` is a Dask scheduler address (default: a local
    cluster with `workers` processes, one per core); `probes` are (column, time) pairs read from
    each case's results; `on_result(row, client)` is called as each case finishes; a case
    over `limits` (default RunLimits()) fails with a LimitError row, one running longer than
    `case_timeout` s (None: no limit) with a case-timeout row; `cosim` runs each case as a
    multi-process co-simulation (`rbcosim cosim`'s server and flexible processes, on the Dask
    worker's host). The overrides' key paths, the probes' columns and times and, with `cosim`,
    the coupling are checked before the cluster starts (ScenarioError)."""
    require_sweep_extra()
    import pandas as pd

    path = Path(scenario)
    if not path.is_file():
        raise ScenarioError(f"{path}: no such scenario file")
    if bool(grid) == bool(sample):
        raise ScenarioError("give either --grid or --sample (with --samples)")
    digest = scenario_digest(path.read_bytes())
    cases = (grid_cases(digest, list(grid), overrides) if grid else
             sample_cases(digest, list(sample), samples, seed, overrides))
    check_before_start(path, cases[0], list(probes), cosim)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table_path = out / TABLE_NAME
    rows = _read_rows(table_path)
    done = {row["case"] for row in rows}
    todo = [c for c in cases if c.key not in done]
    if todo:
        rows += _run_on_dask(str(path.resolve()), todo, out, table_path, rows, scheduler,
                             workers, list(probes), progress, on_result,
                             limits or RunLimits(), case_timeout, cosim)
    wanted = {c.key for c in cases}
    table = pd.DataFrame([r for r in rows if r["case"] in wanted])
    return table


def require_sweep_extra() -> None:
    """RbcosimError naming the missing package and the extra when Dask or pandas is absent."""
    for module in ("pandas", "dask.distributed"):
        try:
            importlib.import_module(module)
        except ImportError:
            raise RbcosimError(f"sweeps need {module}, which is not installed: "
                               "pip install 'rbcosim[sweep]'") from None


def check_before_start(path: Path, case: Case, probes: list[tuple[str, float]],
                       cosim: bool = False) -> None:
    """ScenarioError for a key path no case can use (an unknown key, a misspelled table), a
    probe naming no results column or a time outside [0, t_end], or (`cosim`) a scenario the
    multi-process run does not do; checked on `case` (every case has the same keys). A bad
    value is left to its cases, which fail as rows."""
    from rbcosim.distributed.flex_solver import check_distributed
    from rbcosim.scenario.loader import load_scenario

    try:
        scenario = load_scenario(path, dict(case.parameters))
    except UnknownKeyError:
        raise
    except ScenarioError:
        return
    if cosim:
        check_distributed(scenario)
    if probes:
        _check_probes(scenario, probes)


def _check_probes(scenario, probes: list[tuple[str, float]]) -> None:
    """The probes against the columns of a one-step run of `scenario` and its t_end."""
    from dataclasses import replace

    from rbcosim.runner import run_scenario

    t_end = scenario.solver.t_end
    for column, t in probes:
        if not 0.0 <= t <= t_end:
            raise ScenarioError(f"--probe {column}@{t:g}: the time is outside the run "
                                f"(0 to solver.t_end = {t_end:g} s)")
    cosim = scenario.couplings or scenario.flex_bodies
    step = scenario.cosim.macro_step if cosim else scenario.solver.dt
    short = replace(scenario, solver=replace(scenario.solver, t_end=step, output_every=1))
    try:
        columns = run_scenario(short, progress=False).columns
    except SimulationError:
        return  # the cases will say why
    for column, t in probes:
        if column not in columns:
            close = difflib.get_close_matches(column, columns, n=3, cutoff=0.6)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ScenarioError(f"--probe {column}@{t:g}: no column {column!r} in the "
                                f"cases' results{hint}")


def _read_rows(table_path: Path) -> list[dict]:
    import pandas as pd

    if not table_path.is_file():
        return []
    try:
        frame = pd.read_csv(table_path, dtype={"case": str}, keep_default_na=False)
    except (ValueError, pd.errors.ParserError) as exc:
        raise ScenarioError(f"{table_path}: not a sweep table: {exc}") from None
    if "case" not in frame.columns:
        raise ScenarioError(f"{table_path}: not a sweep table (no 'case' column)")
    return frame.to_dict("records")


def _write_rows(table_path: Path, rows: list[dict]) -> None:
    """Write the table atomically (a temporary file renamed over the old one)."""
    import pandas as pd

    tmp = table_path.with_name(table_path.name + ".tmp")
    pd.DataFrame(rows).to_csv(tmp, index=False, float_format="%.17g")
    os.replace(tmp, table_path)


def _run_on_dask(scenario: str, todo: list[Case], out: Path, table_path: Path, rows: list[dict],
                 scheduler, workers, probes, progress, on_result,
                 limits: RunLimits, case_timeout: float | None, cosim: bool) -> list[dict]:
    from dask.distributed import Client, LocalCluster, as_completed
    from tqdm import tqdm

    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=":0")
        client = Client(cluster)
    new: list[dict] = []
    try:
        if client.dashboard_link and progress:
            print(f"Dask dashboard: {client.dashboard_link}", file=sys.stderr)
        futures = {client.submit(run_case, scenario, c.parameters, c.key, str(out.resolve()),
                                 probes, limits, case_timeout, cosim,
                                 key=f"rbcosim-case-{c.key}",
                                 pure=False,
                                 retries=2): c
                   for c in todo}
        with tqdm(total=len(todo), desc="cases", unit="case", file=sys.stderr,
                  disable=not progress) as bar:
            for future in as_completed(futures):
                try:
                    row = future.result()
                except Exception as exc:  # the task itself never raises: its workers died
                    case = futures[future]
                    row = {**case_row(case.key, case.parameters), "status": "failed",
                           "error": f"{type(exc).__name__}: {exc}", "results": "",
                           "wall_time": float("nan")}
                new.append(row)
                _write_rows(table_path, rows + new)
                bar.update(1)
                if on_result is not None:
                    on_result(row, client)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return new
