"""`rbcosim check SCENARIO`: degrees of freedom, redundant constraints, initial consistency."""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from rbcosim.cli.options import add_limit_option, load_with_options
from rbcosim.errors import LimitError, SimulationError
from rbcosim.limits import RunLimits, enforce, estimate, format_bytes
from rbcosim.maximal.accuracy import LINEARIZE_MAX_BODIES, fastest_rate
from rbcosim.maximal.checks import CONSISTENCY_TOL, check_model
from rbcosim.maximal.divergence import fastest_time_scale, flex_time_scale
from rbcosim.minimal.route import coordinate_names, degrees_of_freedom, is_tree, suits_minimal


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="check a model: degrees of freedom, redundancy, consistency",
                       description="Load a scenario and report its bodies, degrees of freedom "
                                   "(rank of Φ_q next to the Grübler–Kutzbach count), redundant "
                                   "constraints, and how far the initial state is from the "
                                   "constraint manifold, and the run's estimated size (steps, "
                                   "memory) against the run limits, then a verdict. Exit 1 when "
                                   "the model is unusable, over a limit, or its initial state "
                                   "violates the joints beyond the tolerance (with --assemble, "
                                   "which prints a consistent one, exit 0).")
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (TOML)")
    p.add_argument("--set", dest="overrides", metavar="KEY=VALUE", action="append", default=[],
                   help="override a scenario key by dotted path (repeatable)")
    p.add_argument("--assemble", action="store_true",
                   help="print a consistent initial state (projected) as TOML to paste back")
    add_limit_option(p)
    p.set_defaults(handler=run, formulation=None)


def run(args: argparse.Namespace) -> int:
    scenario = load_with_options(args)
    model = scenario.model
    report = check_model(model)
    _print_model(scenario, report)
    _print_bodies(model)
    limits = RunLimits.from_items(args.limits)
    groups = _print_couplings(scenario, limits)
    if args.assemble:
        _print_assembled(model, report.assembled)
    report.problems.extend(_print_size(scenario, limits))
    if report.usable:
        _print_time_scale(scenario, groups)
    inconsistent = max(report.phi_initial, report.phidot_initial) > CONSISTENCY_TOL
    if inconsistent and report.usable and not args.assemble:
        report.problems.append(
            f"the initial state violates the joints (‖Φ‖∞ = {report.phi_initial:.3g}, "
            f"‖Φ_q v + Φ_t‖∞ = {report.phidot_initial:.3g}, tolerance {CONSISTENCY_TOL:g}): "
            "`rbcosim check --assemble` prints a consistent one (a run with "
            "solver.projection starts from its projection instead)")
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    if not report.usable:
        print("verdict: not usable as written")
    elif inconsistent:
        print("verdict: usable from the consistent initial state printed above")
    else:
        print("verdict: consistent and within the limits")
    return 0 if report.usable else 1


def _print_model(scenario, report) -> None:
    """Print the scenario, formulation, topology, counts, degrees of freedom, redundant rows,
    initial consistency and (minimal formulation) the generalized coordinates; a minimal
    formulation that cannot take the model is added to report.problems."""
    model = scenario.model
    print(f"scenario: {scenario.source}" + (f" ({scenario.title})" if scenario.title else ""))
    formulation = scenario.solver.formulation
    drivers = sum(j.kind == "driver" for j in model.joints)
    # drivers prescribe a coordinate and close no loop
    tree = is_tree(replace(model, joints=tuple(j for j in model.joints if j.kind != "driver")))
    if formulation == "auto":
        formulation = "minimal" if suits_minimal(model) else "maximal"
    print(f"formulation: {formulation}" + (" (auto)" if scenario.solver.formulation == "auto" else "")
          + f"; topology: {'tree' if tree else 'closed loops'}"
          + (f", {drivers} driver{'s' if drivers > 1 else ''}" if drivers else ""))
    print(f"bodies: {report.n_bodies} moving, joints: {len(model.joints)}, "
          f"interface points: {len(model.points)}, flexible bodies: {len(scenario.flex_bodies)}")
    print(f"constraint equations: {report.n_equations}, rank of Φ_q: {report.rank}")
    print(f"degrees of freedom: {report.dof} (from the rank), "
          f"Grübler–Kutzbach count: {report.gruebler_dof}")
    if report.nonholonomic:
        print(f"non-holonomic constraints: {report.nonholonomic} (velocity rows, no Φ); "
              f"velocity degrees of freedom: {report.velocity_dof}")
    if model.planar_normal is not None:
        print(f"planar mode: normal {model.planar_normal.tolist()}, 3 degrees of freedom per "
              "body before the joints")
    if report.redundant:
        print(f"redundant constraints ({len(report.redundant)}, dropped by the solver):")
        for label in report.redundant:
            print(f"  {label}")
    print(f"initial ‖Φ‖∞ = {report.phi_initial:.3e}, ‖Φ_q v + Φ_t‖∞ = {report.phidot_initial:.3e}"
          f" (tolerance {CONSISTENCY_TOL:g})")
    if report.phi_initial > CONSISTENCY_TOL:
        print(f"after assembly ‖Φ‖∞ = {report.phi_assembled:.3e}"
              " (runs project the initial state when solver.projection is on)")
    if formulation == "minimal":
        try:
            names = coordinate_names(model)
            print(f"generalized coordinates ({len(names)}; {degrees_of_freedom(model)} degrees "
                  f"of freedom): {', '.join(names)}")
        except SimulationError as exc:
            report.problems.append(f"minimal formulation: {exc}")


def _print_bodies(model) -> None:
    """One line per body: mass (kg) and principal moments of inertia (kg·m²)."""
    for k, (name, body) in enumerate(zip(model.body_names, model.bodies), start=1):
        if k in model.point_masses:
            print(f"body {name}: point mass {body.mass:g} kg")
            continue
        eig = np.linalg.eigvalsh(body.inertia)
        print(f"body {name}: mass {body.mass:g} kg, principal moments "
              f"{', '.join(f'{e:.6g}' for e in eig)} kg·m² (valid)")


def _print_couplings(scenario, limits: RunLimits) -> list:
    """Print every coupling with its flexible body's modes; returns the built flexible groups
    (none when the scenario has none or is over `limits`)."""
    if not (scenario.couplings or scenario.flex_bodies):
        return []
    if not _fits(scenario, limits):
        print("flexible bodies: not built (over the run limits, see below)")
        return []
    from rbcosim.cosim.flex_bodies import build_endpoints

    groups = list(build_endpoints(scenario, scenario.cosim.macro_step).values())
    for group in groups:
        fm = group.body.model
        freqs = ", ".join(f"{f:.6g}" for f in fm.frequencies_hz)
        for c in group.couplings:
            print(f"coupling {c.name}: point {c.point} <-> flexible body {c.flex_body} "
                  f"({fm.attachment}, {c.type}, {fm.n_boundary} boundary DOFs over "
                  f"{fm.n_interfaces} interface nodes, {fm.n_modes} modes; "
                  f"fixed-interface frequencies {freqs} Hz)")
    return groups


def _print_assembled(model, s) -> None:
    """The consistent (projected) initial state `s` as TOML to paste back."""
    print("\n# consistent initial state (centre of mass position, quaternion, velocities)")
    for i, name in enumerate(model.body_names):
        print(f"[bodies.{name}]  # replace center_of_mass/orientation keys accordingly")
        print(f"position = {s.r[i].tolist()}")
        if i + 1 not in model.point_masses:
            print(f"orientation = {{ quaternion = {s.q[i].tolist()} }}")
        print(f"velocity = {s.v[i].tolist()}")
        if i + 1 not in model.point_masses:
            print(f"angular_velocity = {s.w[i].tolist()}")


def _fits(scenario, limits: RunLimits) -> bool:
    """Whether the estimate (from the structure files' declared sizes) is within `limits`:
    the flexible bodies are built only then."""
    try:
        enforce(scenario, limits)
    except LimitError:
        return False
    return True


def _print_time_scale(scenario, groups: list) -> None:
    """Print the fastest time scale of the linearized rigid model and of the flexible bodies'
    modes (1/(2π f) of the highest fixed-interface frequency), and warn when the step (dt, or
    a co-simulation's macro step) exceeds it."""
    model, solver = scenario.model, scenario.solver
    parts, rigid = [], None
    if model.n_bodies > LINEARIZE_MAX_BODIES:
        parts.append(f"rigid side not estimated (more than {LINEARIZE_MAX_BODIES} bodies)")
    else:
        try:
            rate = fastest_rate(model, solver.baumgarte)
            rigid = 1.0 / rate if rate > 0 else np.inf
            parts.append(f"rigid side {rigid:.3g} s: largest |eigenvalue| {rate:.3g} 1/s of the "
                         "equations linearized at the initial state")
        except SimulationError as exc:
            parts.append(f"rigid side not estimated ({exc})")
    flex = flex_time_scale(groups)
    if flex is not None:
        parts.append(f"flexible modes {flex:.3g} s: 1/(2π f), f = {1 / (2 * np.pi * flex):.6g} Hz "
                     "the highest fixed-interface frequency")
    scale = fastest_time_scale(rigid, flex)
    step, name = ((scenario.cosim.macro_step, "macro step") if groups else (solver.dt, "dt"))
    head = "not estimated" if scale is None else f"{scale:.3g} s"
    print(f"fastest time scale: {head} ({'; '.join(parts)}), {name} = {step:g} s")
    if scale is not None and step > scale:
        print(f"WARNING: {name} = {step:g} s is above the model's fastest time scale "
              f"{scale:.3g} s: the run will be inaccurate or unstable")


def _print_size(scenario, limits: RunLimits) -> list[str]:
    """Print the estimated size next to the limits; the problem if one is exceeded."""
    size = estimate(scenario)
    print(f"estimate: {size.total_steps} steps ({size.steps_per_macro_step} per macro step), "
          f"memory {format_bytes(size.memory_bytes)}, {size.constraint_rows} constraint rows, "
          f"{size.modal_coordinates} modal coordinates")
    print("limits: " + ", ".join(f"{k}={v}" for k, v in limits.as_dict().items()))
    try:
        enforce(scenario, limits)
    except LimitError as exc:
        return [str(exc)]
    return []
