"""A scenario's flexible side: one FlexEndpoint per flexible body, with all its couplings.

A body with one coupling is the compiled one-node FlexBody (grounded or floating); a body with
several is a grounded MultiNodeBody, a chord-frame rod (rbcosim.flex.runtime.chord_body) or a
floating body in 3D (rbcosim.flex.runtime.floating_multi_body); each is a
:class:`~rbcosim.cosim.flex_endpoint.FlexEndpoint` over its nodes in coupling order. The same
endpoints run in process, in a flexible-solver process and in a flexible-body FMU.
"""

from __future__ import annotations

from rbcosim.cosim.flex_endpoint import FlexEndpoint
from rbcosim.errors import ScenarioError
from rbcosim.flex.modelling.chord import ChordModel
from rbcosim.flex.modelling.interface_nodes import Interface, released_components
from rbcosim.flex.runtime.body import FlexBody
from rbcosim.flex.runtime.chord_body import ChordBody
from rbcosim.flex.runtime.floating_multi_body import FloatingMultiBody
from rbcosim.flex.runtime.multi_body import MultiNodeBody
from rbcosim.scenario.flex_config import flex_model_from_config
from rbcosim.scenario.loader import Scenario
from rbcosim.scheme import scheme_named


def body_couplings(scenario: Scenario) -> dict[str, list]:
    """Flexible body -> its couplings, bodies in the order of their first coupling."""
    by_body: dict[str, list] = {}
    for c in scenario.couplings:
        by_body.setdefault(c.flex_body, []).append(c)
    return by_body


def build_endpoints(scenario: Scenario, H: float) -> dict[str, FlexEndpoint]:
    """{key: endpoint}, one per flexible body in `body_couplings` order; the key is the joint
    name for a one-coupling body (it keys its state), the body's name otherwise."""
    by_body = body_couplings(scenario)
    unused = sorted(set(scenario.flex_bodies) - set(by_body))
    if unused:
        raise ScenarioError(f"{scenario.source}: flex_bodies.{unused[0]}: no coupling uses it; "
                            f"add a [couplings.NAME] with flex_body = {unused[0]!r}")
    endpoints: dict[str, FlexEndpoint] = {}
    for name, couplings in by_body.items():
        where = f"{scenario.source}: flex_bodies.{name}"
        interfaces = [Interface(c.node, released_components(c.type, c.axis),
                                f"{scenario.source}: couplings.{c.name}") for c in couplings]
        model = flex_model_from_config(scenario.flex_bodies[name], scenario.base_dir, where,
                                       interfaces)
        options = {"gravity": scenario.model.gravity, "micro_steps": scenario.cosim.micro_steps}
        if len(couplings) == 1:
            body = FlexBody(model, **options)
            endpoints[couplings[0].name] = FlexEndpoint(couplings[0], body, scenario.cosim, H)
            continue
        _check_multi_node(scenario, name, couplings)
        # a chord-frame rod (its two pins checked by rbcosim.scenario.chord_spring), a floating
        # body in 3D (rbcosim.flex.modelling.floating_multi) or a grounded body
        kind = (ChordBody if isinstance(model, ChordModel) else FloatingMultiBody
                if model.attachment == "floating" else MultiNodeBody)
        endpoints[name] = FlexEndpoint(couplings, kind(model, **options), scenario.cosim, H)
    return endpoints


def _check_multi_node(scenario: Scenario, name: str, couplings: list) -> None:
    """ScenarioError for what a body with several couplings cannot do."""
    if scheme_named(scenario.cosim.scheme).jacobian:
        raise ScenarioError(
            f"{scenario.source}: cosim.scheme: {scenario.cosim.scheme!r} couples one point per "
            f"flexible body; {name!r} has {len(couplings)} couplings "
            f"({', '.join(c.name for c in couplings)}): use jacobi, gauss_seidel_* or "
            "iterative")
    if name in {c.name for c in scenario.couplings}:
        raise ScenarioError(f"{scenario.source}: flex_bodies.{name}: a body with several "
                            "couplings needs a name no coupling has (it keys its state)")
