"""Run limits: what a scenario will need (estimated before any solver is built) against caps.

`estimate(scenario)` counts, from the parsed Scenario only (cheap: no matrices assembled):

* bodies: moving rigid bodies;
* constraint_rows: rows of Φ (fixed 6, revolute/prismatic 5, universal/cylindrical 4,
  spherical/planar 3, distance/driver 1);
* modal_coordinates: the flexible bodies' modes (a matrices body without `modes`: all of its
  coordinates, the dimension its M declares: the .mtx size line or the .npz member's header,
  rbcosim.flex.io.declared_size, read before any matrix is);
* steps_per_macro_step: co-simulation micro steps (1 for a rigid run);
* total_steps: integration steps of the whole run (t_end / dt, or macro steps × micro steps);
* memory_bytes: the dominant allocations, all float64 (8 B):
  results rows × columns × 8 × 2 (the list of rows and the final table) plus 112 B per row,
  the rigid solver's arrays, which grow linearly with the model (the maximal route's rows are
  sparse, the minimal route's recursions O(n)): 40 kB per body and 4 kB per constraint row,
  a bound on what was measured (a 10,000-link chain builds and steps in 76–174 MB, 8–17 kB
  per link),
  and per flexible body six dense N² matrices over its N finite-element DOFs (M, K, C, the
  Craig–Bampton basis and the eigen solver's work space) plus the arrays its structure
  files declare, as loaded (a .mtx as a dense matrix).

The defaults are generous for real models yet refuse a run that would not fit a workstation;
`--limit KEY=VALUE` raises one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from rbcosim.errors import LimitError, ScenarioError

if TYPE_CHECKING:  # rbcosim.flex loads numpy: `rbcosim serve` and `cosim` parse without it
    from rbcosim.flex.io.declared_size import DeclaredArray

ROWS_PER_JOINT = {"fixed": 6, "revolute": 5, "prismatic": 5, "universal": 4, "cylindrical": 4,
                  "spherical": 3, "planar": 3, "distance": 1, "driver": 1, "rolling_disk": 3,
                  "knife_edge": 1}
_ROW_OVERHEAD = 112  # bytes of a numpy row object besides its data
_FLEX_MATRICES = 6
_BODY_BYTES, _ROW_BYTES = 40_000, 4_000  # rigid solver, per body and per constraint row


@dataclass(frozen=True)
class RunLimits:
    """Largest sizes a run may have; the defaults refuse e.g. a 22 GiB build."""

    bodies: int = 20_000
    constraint_rows: int = 120_000
    modal_coordinates: int = 10_000
    steps_per_macro_step: int = 1_000_000
    total_steps: int = 100_000_000
    memory_bytes: int = 8 * 2**30

    @classmethod
    def from_items(cls, items: list[str]) -> RunLimits:
        """Defaults with KEY=VALUE items applied, e.g. ["bodies=20000"]."""
        known = [f.name for f in fields(cls)]
        changes = {}
        for item in items:
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in known:
                raise ScenarioError(f"--limit {item!r}: expected KEY=VALUE with KEY one of {known}")
            try:
                number = int(value.strip())
            except ValueError:
                raise ScenarioError(f"--limit {item!r}: expected a whole number, got "
                                    f"{value.strip()!r}") from None
            if number < 1:
                raise ScenarioError(f"--limit {item!r}: expected a positive number")
            changes[key] = number
        return cls(**changes)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class RunSize:
    """What a scenario will need, in the units of RunLimits."""

    bodies: int
    constraint_rows: int
    modal_coordinates: int
    steps_per_macro_step: int
    total_steps: int
    memory_bytes: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _flex_size(cfg: dict, base_dir: Path) -> tuple[int, int, int, int]:
    """(modes, finite-element DOFs, output columns, bytes its structure files declare) of one
    flexible body's raw table."""
    declared = 0
    if cfg.get("kind") == "beam":
        per_node = 3 if cfg.get("planar", True) is True else 6
        n_dof = per_node * (_count(cfg, "elements", 1) + 1)
        modes = _count(cfg, "modes", 0)
    else:
        files = _structure_files(cfg, base_dir)
        arrays = {path: _declared(path) for path in files.values()}
        declared = sum(a.nbytes for found in arrays.values() for a in found)
        mass = files.get("M")
        shapes = [a.shape for a in arrays.get(mass, ()) if a.name in ("M", "")]
        n_dof = shapes[0][0] if shapes and shapes[0] else 0
        modes = _count(cfg, "modes", n_dof)
    outputs = cfg.get("output_nodes", {})
    return (modes, n_dof, modes + 3 * (len(outputs) if isinstance(outputs, dict) else 0),
            declared)


def _structure_files(cfg: dict, base_dir: Path) -> dict[str, Path]:
    """A matrices body's files by key: {"M": the .npz} (file = ...) or its .mtx files."""
    files = cfg.get("files") if isinstance(cfg.get("files"), dict) else {"M": cfg.get("file")}
    return {k: base_dir / f for k, f in files.items() if isinstance(f, str)}


def _declared(path: Path) -> list[DeclaredArray]:
    from rbcosim.flex.io.declared_size import DeclaredSizeError, declared_arrays

    try:
        return declared_arrays(path)
    except (OSError, DeclaredSizeError):
        return []  # the loader reports the file


def _count(cfg: dict, key: str, default: int) -> int:
    """cfg[key] if it is a whole number (else `default`: the loader refuses other values)."""
    v = cfg.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _steps(t_end: float, step: float) -> int:
    """Whole steps of `step` s to `t_end` s, saturated at 2**62 (dt = 1e-300 is not a crash)."""
    n = t_end / step
    return round(n) if n < 2**62 else 2**62


def estimate(scenario) -> RunSize:
    """The sizes `scenario` will need (see the module docstring for the basis)."""
    model, solver, cosim = scenario.model, scenario.solver, scenario.cosim
    n = len(model.bodies)
    m = sum(ROWS_PER_JOINT[j.kind] for j in model.joints)
    flex = [_flex_size(cfg, scenario.base_dir) for cfg in scenario.flex_bodies.values()]
    coupled = bool(scenario.couplings or scenario.flex_bodies)
    micro = cosim.micro_steps if coupled else 1
    outer = _steps(solver.t_end, cosim.macro_step if coupled else solver.dt)
    total = outer * micro
    rows = outer // solver.output_every + 1
    columns = 3 + 13 * n + sum(c for _, _, c, _ in flex)
    memory = (rows * (columns * 8 * 2 + _ROW_OVERHEAD) + _BODY_BYTES * n + _ROW_BYTES * m
              + sum(_FLEX_MATRICES * d * d * 8 + b for _, d, _, b in flex))
    return RunSize(n, m, sum(k for k, _, _, _ in flex), micro, int(total), int(memory))


def enforce(scenario, limits: RunLimits) -> RunSize:
    """The estimate, or LimitError naming the first limit it exceeds and how to raise it (for
    modes and memory, with what the structure files declare)."""
    size = estimate(scenario)
    for key, cap in limits.as_dict().items():
        value = getattr(size, key)
        if value > cap:
            files = (_structure_declarations(scenario)
                     if key in ("modal_coordinates", "memory_bytes") else "")
            raise LimitError(f"{scenario.source}: the run needs {key} = {value}{files}, over the "
                             f"limit {cap}; raise it with --limit {key}={value} if the machine "
                             "has room (see `rbcosim check` for the estimate)")
    return size


def _structure_declarations(scenario) -> str:
    """What the matrices bodies' files declare, for an error message: " (flex_bodies.NAME file
    big.npz declares M 40000x40000, K 40000x40000; ...)", or "" without such files."""
    notes = []
    for name, cfg in scenario.flex_bodies.items():
        if cfg.get("kind") == "beam":
            continue
        for path in _structure_files(cfg, scenario.base_dir).values():
            arrays = [a.describe() for a in _declared(path) if a.shape]
            if arrays:
                notes.append(f"flex_bodies.{name} file {path.name} declares {', '.join(arrays)}")
    return f" ({'; '.join(notes)})" if notes else ""


def format_bytes(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"
