"""Result tables: named columns over time, written as CSV, .npz or HDF5 (.h5, .hdf5) by
suffix, with the run's summary beside in `<stem>.summary.json` (`out.csv` -> `out.summary.json`).

Every run (`run`, `cosim`, finished or failed) has the same summary layout: `status` ("ok",
"failed" or "diverged": a non-finite or absurd state, `rbcosim.maximal.divergence`), `error` (the error text or null), `rows` and `t_last_row` (s) of the table, the
run's figures, then `joints` (per coupling joint gaps; {} in rigid runs),
`continuity_violations` and `distributed` (the processes of `rbcosim cosim`; null in process).
"""

from __future__ import annotations

import csv
import json
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rbcosim.columns import describe, match_columns
from rbcosim.errors import RbcosimError, RunFailedError, ScenarioError
from rbcosim.model import Model

BODY_FIELDS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
#: results file suffixes written as HDF5 (h5py, the `hdf5` extra)
HDF5_SUFFIXES = (".h5", ".hdf5")
#: summary keys every run has after its own figures, with their value when a run has none
SUMMARY_TAIL = (("joints", dict), ("continuity_violations", int), ("distributed", type(None)))
_SUMMARY_HEAD = ("status", "error", "rows", "t_last_row")


def body_columns(model: Model) -> list[str]:
    """`<body>.x .y .z .q0 .. .q3 .vx .vy .vz .wx .wy .wz` for every moving body."""
    return [f"{b}.{f}" for b in model.body_names for f in BODY_FIELDS]


def summary_path(path) -> Path:
    """The summary file of a results file: `out.csv` -> `out.summary.json`."""
    path = Path(path)
    return path.with_name(path.stem + ".summary.json")


@dataclass
class Results:
    """A table of results: `columns` names, `data` (rows, columns), run `diagnostics`."""

    columns: list[str]
    data: np.ndarray
    diagnostics: dict = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.data[:, self.columns.index(name)]
        except ValueError:
            raise KeyError(f"no column {name!r}; valid names: {self.columns}") from None

    @property
    def t(self) -> np.ndarray:
        return self["t"]

    def body(self, name: str) -> dict[str, np.ndarray]:
        """Columns of one body: {'x': ..., 'q0': ..., ...}."""
        return {f: self[f"{name}.{f}"] for f in BODY_FIELDS}

    def select(self, patterns: list[str] | None) -> Results:
        """`t` and the columns matching `patterns` (names or shell-style patterns, see
        rbcosim.columns.match_columns); all columns without patterns."""
        if not patterns:
            return self
        data_columns = [c for c in self.columns if c != "t"]
        keep = ["t", *match_columns(data_columns, patterns, "in this run's results")]
        index = [self.columns.index(c) for c in keep]
        return replace(self, columns=keep, data=self.data[:, index])

    def summary(self) -> dict:
        """The summary layout of the module docstring, from `diagnostics` and the table."""
        d = {k: v for k, v in self.diagnostics.items() if k not in _SUMMARY_HEAD}
        tail = {key: d.pop(key, empty()) for key, empty in SUMMARY_TAIL}
        last = float(self.data[-1, 0]) if len(self.data) else None
        return {"status": self.diagnostics.get("status", "ok"),
                "error": self.diagnostics.get("error"), "rows": len(self.data),
                "t_last_row": last, **d, **tail}

    def write(self, path) -> list[Path]:
        """Write the table (CSV, .npz or .h5/.hdf5 by suffix) and its summary file; returns
        both paths."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        summary = self.summary()
        if path.suffix == ".npz":
            np.savez(path, columns=np.array(self.columns), data=self.data)
        elif path.suffix in HDF5_SUFFIXES:
            self._write_hdf5(path, summary)
        else:
            with path.open("w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(self.columns)
                for row in self.data:
                    writer.writerow([repr(float(x)) for x in row])
        beside = summary_path(path)
        beside.write_text(json.dumps(summary, indent=2, default=float) + "\n")
        return [path, beside]

    def _write_hdf5(self, path: Path, summary: dict) -> None:
        """Group `columns` with one float64 dataset per column (attributes `units`,
        `description`); file attributes `columns` (the order) and `summary` (JSON text)."""
        h5py = _h5py()
        names = set(self.columns)
        with h5py.File(path, "w") as f:
            f.attrs["columns"] = self.columns
            f.attrs["summary"] = json.dumps(summary, default=float)
            group = f.create_group("columns")
            for i, name in enumerate(self.columns):
                dataset = group.create_dataset(name, data=np.ascontiguousarray(self.data[:, i]))
                dataset.attrs["units"], dataset.attrs["description"] = describe(name, names)

    @classmethod
    def read_csv(cls, path) -> Results:
        with open(path) as f:
            columns = next(csv.reader(f))
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        return cls(columns, data)


def _h5py():
    try:
        import h5py
    except ImportError:
        raise RbcosimError("HDF5 results need h5py: pip install 'rbcosim[hdf5]'") from None
    return h5py


def _read_hdf5(path: Path) -> Results:
    with _h5py().File(path, "r") as f:
        columns = [str(c) for c in f.attrs["columns"]]
        data = np.column_stack([f["columns"][c][()] for c in columns]) if columns else np.empty((0, 0))
        summary = json.loads(f.attrs["summary"]) if "summary" in f.attrs else {}
    return Results(columns, np.asarray(data, float), summary)


def read_results(path: str | Path) -> Results:
    """A results file (CSV, .npz or .h5/.hdf5 by suffix) with its summary as diagnostics (the
    HDF5 file's own, else `<stem>.summary.json` when present). ScenarioError names a missing
    or unreadable file."""
    path = Path(path)
    if not path.is_file():
        raise ScenarioError(f"{path}: no such results file")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an empty table is reported below, not warned about
            if path.suffix == ".npz":
                with np.load(path) as f:
                    results = Results([str(c) for c in f["columns"]], np.asarray(f["data"], float))
            elif path.suffix in HDF5_SUFFIXES:
                results = _read_hdf5(path)
            else:
                results = Results.read_csv(path)
    except (OSError, ValueError, KeyError, StopIteration) as exc:
        raise ScenarioError(f"{path}: not a readable results file ({exc})") from None
    if ("t" not in results.columns or results.data.ndim != 2
            or results.data.shape[1] != len(results.columns) or not len(results.data)):
        raise ScenarioError(f"{path}: not a results table (needs a header with a 't' column "
                            f"and at least one row with one value per column)")
    summary = summary_path(path)
    if not results.diagnostics and summary.is_file():
        try:
            results.diagnostics = json.loads(summary.read_text())
        except (OSError, ValueError) as exc:
            raise ScenarioError(f"{summary}: not a readable summary ({exc})") from None
    return results


def failure(columns: list[str], rows: list, diagnostics: dict, error: Exception) -> RunFailedError:
    """`error` as a RunFailedError carrying the rows computed before it, with status
    "failed" (or the error's own, "diverged") and the error text in their summary."""
    data = np.array(rows, dtype=float).reshape(len(rows), len(columns))
    status = getattr(error, "status", "failed")
    out = RunFailedError(str(error), Results(
        columns, data, {**diagnostics, "status": status, "error": str(error)}))
    out.status = status
    return out


def format_summary(summary: dict, indent: str = "") -> str:
    """Human-readable lines of a summary (nested tables indented; `_` keys left out): what
    `run` and `cosim` print."""
    lines = []
    for key, value in summary.items():
        if key.startswith("_"):
            continue
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:" + ("" if value else " none"))
            lines.append(format_summary(value, indent + "  "))
        else:
            lines.append(f"{indent}{key}: {_fmt(value)}")
    return "\n".join(line for line in lines if line)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
