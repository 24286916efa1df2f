"""Pick the route for a scenario: rigid maximal, rigid minimal, or co-simulation."""

from __future__ import annotations

from rbcosim.derived import check_cosimulation, derived_columns, with_derived
from rbcosim.errors import ScenarioError
from rbcosim.maximal.simulate import simulate
from rbcosim.results import Results
from rbcosim.scenario.loader import Scenario


def run_scenario(scenario: Scenario, *, progress: bool = True, checkpoint=None,
                 checkpoint_every: int = 0, resume=None) -> Results:
    """Run a scenario in process and return its results (checkpoints: co-simulations only);
    with solver.reactions, the joint reaction columns of `rbcosim.reactions` appended, then
    the joint coordinate, sensor and acceleration columns of `rbcosim.derived`."""
    if scenario.couplings or scenario.flex_bodies:
        if scenario.solver.reactions:
            raise ScenarioError("solver.reactions: rigid runs only, not co-simulations")
        check_cosimulation(scenario)
        from rbcosim.cosim.master import run_cosimulation

        return with_derived(scenario, run_cosimulation(
            scenario, progress=progress, checkpoint=checkpoint,
            checkpoint_every=checkpoint_every, resume=resume))
    formulation = scenario.solver.formulation
    if formulation in ("minimal", "auto"):
        from rbcosim.minimal.route import NO_CHECKPOINTS, simulate_minimal, suits_minimal

        if checkpoint or resume:
            raise ScenarioError(NO_CHECKPOINTS)

        if formulation == "minimal" or suits_minimal(scenario.model):
            results = simulate_minimal(scenario.model, scenario.solver, progress=progress)
            return _post_run(scenario, results, minimal=True)
    results = simulate(scenario.model, scenario.solver, progress=progress, checkpoint=checkpoint,
                       checkpoint_every=checkpoint_every, resume=resume)
    return _post_run(scenario, results, minimal=False)


def _post_run(scenario: Scenario, results: Results, *, minimal: bool) -> Results:
    """The reaction and derived columns the scenario asks for, appended to `results`."""
    solver = scenario.solver
    if not (solver.reactions or derived_columns(scenario)):
        return results
    system = None
    if minimal:
        from rbcosim.minimal.route import make_system

        system = make_system(scenario.model)
    if solver.reactions:
        from rbcosim.reactions import with_reactions

        results = with_reactions(scenario.model, results, system)
    return with_derived(scenario, results, system)
