"""The rigid side's share of a chord-frame flexible body, or of a floating body with several
interface nodes (:mod:`rbcosim.flex.modelling.floating_multi`): the axial spring between two points.

A chord-frame body (``frame = "chord"``, :mod:`rbcosim.flex.modelling.chord`) leaves its stretch's
stiffness EA/L to the rigid side: a spring ``NAME.stretch`` (free length L, no damping)
between its two couplings' interface points joins the scenario's spring–dampers, so the stiff
axial mode (EA/L against the bodies at the pins) is integrated by the rigid solver instead of
through the exchanged forces, which would make explicit coupling unstable at any macro step.
"""

from __future__ import annotations

from pathlib import Path

from rbcosim.flex.modelling.interface_nodes import Interface, released_components
from rbcosim.model import InterfacePoint, Marker, SpringDamper
from rbcosim.scenario.flex_chord_config import check_couplings, frame_of, stretch_spring
from rbcosim.scenario.flex_config import flex_model_from_config
from rbcosim.settings import Coupling


def chord_springs(flex: dict, couplings: list[Coupling], points: list[InterfacePoint],
                  source: str, base_dir: Path = Path(".")) -> list[SpringDamper]:
    """One SpringDamper per chord-frame body of ``flex`` (ScenarioError on bad couplings) and
    per floating body with several couplings (its first two)."""
    at = {p.name: p for p in points}
    springs = []
    for name, cfg in flex.items():
        where = f"{source}: flex_bodies.{name}"
        mine = [c for c in couplings if c.flex_body == name]
        if cfg.get("kind") == "beam" and frame_of(cfg, where) == "chord":
            check_couplings(mine, source, name)
            stiffness, length = stretch_spring(cfg, where)
        elif (len(mine) > 1 and cfg.get("attachment", "floating" if cfg.get("kind") == "beam"
                                         else "grounded") == "floating"):
            stiffness, length = multi_stretch_spring(cfg, mine, base_dir, where, source)
        else:
            continue  # (imported matrices refuse a frame key when they are read)
        a, b = (at[c.point] for c in mine)
        springs.append(SpringDamper(f"{name}.stretch", Marker(a.body, a.position, a.axes),
                                    Marker(b.body, b.position, b.axes), stiffness, 0.0, length))
    return springs


def multi_stretch_spring(cfg: dict, couplings, base_dir, where: str,
                         source: str) -> tuple[float, float]:
    """(stiffness N/m, free length m) of the rigid side's spring ``NAME.stretch`` of a floating
    body with several couplings (``couplings``, in order): the model's ``stretch_stiffness``
    and its interface nodes' distance (the model is built here once more)."""
    interfaces = [Interface(c.node, released_components(c.type, c.axis),
                            f"{source}: couplings.{c.name}") for c in couplings]
    model = flex_model_from_config(cfg, base_dir, where, interfaces)
    return model.stretch_stiffness, float(model.interface_positions[1, 0])
