"""The rigid side's share of a chord-frame flexible body: the chord's axial spring.

A chord-frame body (``frame = "chord"``, :mod:`rbcosim.flex.modelling.chord`) leaves its stretch's
stiffness EA/L to the rigid side: a spring ``NAME.stretch`` (free length L, no damping)
between its two couplings' interface points joins the scenario's spring–dampers, so the stiff
axial mode (EA/L against the bodies at the pins) is integrated by the rigid solver instead of
through the exchanged forces, which would make explicit coupling unstable at any macro step.
"""

from __future__ import annotations

from rbcosim.model import InterfacePoint, Marker, SpringDamper
from rbcosim.scenario.flex_chord_config import check_couplings, frame_of, stretch_spring
from rbcosim.settings import Coupling


def chord_springs(flex: dict, couplings: list[Coupling], points: list[InterfacePoint],
                  source: str) -> list[SpringDamper]:
    """One SpringDamper per chord-frame body of ``flex`` (ScenarioError on bad couplings)."""
    at = {p.name: p for p in points}
    springs = []
    for name, cfg in flex.items():
        where = f"{source}: flex_bodies.{name}"
        if cfg.get("kind") != "beam" or frame_of(cfg, where) != "chord":
            continue  # (imported matrices refuse a frame key when they are read)
        mine = [c for c in couplings if c.flex_body == name]
        check_couplings(mine, source, name)
        stiffness, length = stretch_spring(cfg, where)
        a, b = (at[c.point] for c in mine)
        springs.append(SpringDamper(f"{name}.stretch", Marker(a.body, a.position, a.axes),
                                    Marker(b.body, b.position, b.axes), stiffness, 0.0, length))
    return springs
