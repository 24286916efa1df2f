"""Result tables: named columns over time, written as CSV with a JSON summary beside."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rbcosim.model import Model

BODY_FIELDS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")


def body_columns(model: Model) -> list[str]:
    """`<body>.x .y .z .q0 .. .q3 .vx .vy .vz .wx .wy .wz` for every moving body."""
    return [f"{b}.{f}" for b in model.body_names for f in BODY_FIELDS]


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

    def write(self, path) -> list[Path]:
        """Write CSV (or .npz by suffix) and `<path>.summary.json`; returns the paths."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".npz":
            np.savez(path, columns=np.array(self.columns), data=self.data)
        else:
            with path.open("w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(self.columns)
                for row in self.data:
                    writer.writerow([repr(float(x)) for x in row])
        summary = path.with_name(path.name + ".summary.json")
        summary.write_text(json.dumps(self.diagnostics, indent=2, default=float) + "\n")
        return [path, summary]

    @classmethod
    def read_csv(cls, path) -> Results:
        with open(path) as f:
            columns = next(csv.reader(f))
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        return cls(columns, data)
