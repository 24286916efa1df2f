"""The flexible side of a scenario as groups: one group per flexible body and its couplings.

A body with one coupling is a :class:`~rbcosim.cosim.flex_endpoint.FlexEndpoint` (the compiled
one-node FlexBody, grounded or floating) behind :class:`SingleJoint`; a body with several
couplings is a :class:`~rbcosim.cosim.multi_endpoint.MultiFlexEndpoint` (grounded). Both give
the group API the master uses (values keyed by joint, see :mod:`.multi_endpoint`).
"""

from __future__ import annotations

from rbcosim.cosim.flex_endpoint import FlexEndpoint
from rbcosim.cosim.multi_endpoint import MultiFlexEndpoint
from rbcosim.errors import ScenarioError
from rbcosim.flex.body import FlexBody
from rbcosim.flex.chord import ChordModel
from rbcosim.flex.chord_body import ChordBody
from rbcosim.flex.config import flex_model_from_config
from rbcosim.flex.floating_multi_body import FloatingMultiBody
from rbcosim.flex.interfaces import Interface, released_components
from rbcosim.flex.multi_body import MultiNodeBody
from rbcosim.scenario import Scenario


class SingleJoint:
    """The group API over one FlexEndpoint (one flexible body, one coupling)."""

    def __init__(self, endpoint: FlexEndpoint):
        self.endpoint = endpoint
        self.body = endpoint.body
        self.joint = endpoint.joint
        self.joints = (self.joint,)
        self.couplings = (endpoint.coupling,)
        self.flex_body = endpoint.coupling.flex_body
        self.needs_end_motion = endpoint.needs_end_motion

    def initialize(self, t, motions):
        return {self.joint: self.endpoint.initialize(t, motions[self.joint])}

    def report(self):
        return {self.joint: self.endpoint.report()}

    def polynomials(self, t, ends=None):
        return {self.joint: self.endpoint.polynomial(t, None if ends is None else ends[self.joint])}

    def iteration_polynomials(self, t, guesses):
        return {self.joint: self.endpoint.iteration_polynomial(t, *guesses[self.joint])}

    def inputs_for_rigid(self, t, motions):
        return {self.joint: self.endpoint.inputs_for_rigid(t, motions[self.joint])}

    def finish(self, t, motions, ends=None):
        self.endpoint.finish(t, motions[self.joint], ends.get(self.joint) if ends else None)

    def advance_in_halves(self, t, motions, mids, ends):
        j = self.joint
        return {j: self.endpoint.advance_in_halves(t, motions[j], mids[j], ends[j])}

    def rigid_inputs(self):
        return self.endpoint.rigid_input().reshape(1, 6)

    def commit(self, motions):
        self.endpoint.commit(motions[self.joint])

    def get_state(self) -> bytes:
        return self.endpoint.get_state()

    def set_state(self, blob: bytes) -> None:
        self.endpoint.set_state(blob)

    def columns(self):
        return self.endpoint.columns(self.flex_body)

    def row(self):
        return self.endpoint.row()


def refuse_multi_node(scenario: Scenario) -> None:
    """ScenarioError naming the first flexible body with several couplings: the drivers that
    take one coupling per FMU (the FMU export) need one-node bodies."""
    joints: dict[str, list[str]] = {}
    for c in scenario.couplings:
        joints.setdefault(c.flex_body, []).append(c.name)
    for body, names in joints.items():
        if len(names) > 1:
            raise ScenarioError(
                f"{scenario.source}: flex_bodies.{body}: coupled by {len(names)} couplings "
                f"({', '.join(names)}); a multi-node flexible body runs in process (rbcosim run) "
                "or in its own process (rbcosim cosim, rbcosim flex --body), not in an FMU")


def build_groups(scenario: Scenario, H: float) -> dict[str, SingleJoint | MultiFlexEndpoint]:
    """{key: group}: per flexible body (in the order of its first coupling) its couplings;
    the key is the joint name for a one-coupling body, the body's name otherwise."""
    by_body: dict[str, list] = {}
    for c in scenario.couplings:
        by_body.setdefault(c.flex_body, []).append(c)
    unused = sorted(set(scenario.flex_bodies) - set(by_body))
    if unused:
        raise ScenarioError(f"{scenario.source}: flex_bodies.{unused[0]}: no coupling uses it; "
                            f"add a [couplings.NAME] with flex_body = {unused[0]!r}")
    groups: dict[str, SingleJoint | MultiFlexEndpoint] = {}
    for name, couplings in by_body.items():
        where = f"{scenario.source}: flex_bodies.{name}"
        interfaces = [Interface(c.node, released_components(c.type, c.axis),
                                f"{scenario.source}: couplings.{c.name}") for c in couplings]
        model = flex_model_from_config(scenario.flex_bodies[name], scenario.base_dir, where,
                                       interfaces)
        options = {"gravity": scenario.model.gravity, "micro_steps": scenario.cosim.micro_steps}
        if len(couplings) == 1:
            ep = FlexEndpoint(couplings[0], FlexBody(model, **options), scenario.cosim, H)
            groups[couplings[0].name] = SingleJoint(ep)
            continue
        if scenario.cosim.scheme == "interface_jacobian":
            raise ScenarioError(
                f"{scenario.source}: cosim.scheme: 'interface_jacobian' couples one point per "
                f"flexible body; {name!r} has {len(couplings)} couplings "
                f"({', '.join(c.name for c in couplings)}): use jacobi, gauss_seidel_* or "
                "iterative")
        if name in {c.name for c in scenario.couplings}:
            raise ScenarioError(f"{scenario.source}: flex_bodies.{name}: a body with several "
                                "couplings needs a name no coupling has (it keys its state)")
        # a chord-frame rod (its two pins checked by rbcosim.scenario_chord), a floating body
        # (rbcosim.flex.floating_multi) or a grounded body
        kind = (ChordBody if isinstance(model, ChordModel) else FloatingMultiBody
                if model.attachment == "floating" else MultiNodeBody)
        groups[name] = MultiFlexEndpoint(couplings, kind(model, **options),
                                         scenario.cosim, H)
    return groups
