"""Coupling schemes: the order in which the rigid and the flexible side exchange per macro step.

A :class:`Scheme` is named by the scenario's ``cosim.scheme`` and owns that order; the
in-process master (:mod:`rbcosim.cosim.master`), the flexible solver in its own process
(:mod:`rbcosim.distributed.flex_solver`) and the flexible-body FMU read it from here, and no
other module compares scheme names. Per macro step [t, t + H], with the rigid points' motions
at t known:

  jacobi                    both sides step from the values at t (inputs extrapolated);
  gauss_seidel_rigid_first  the rigid side steps, the flexible side then follows its motion
                            interpolated between t and t + H;
  gauss_seidel_flex_first   the flexible side steps, the rigid side then uses its wrench
                            interpolated between t and t + H;
  iterative                 both step in two halves, exchange the mid-step and end values,
                            restore and repeat until the wrenches converge;
  interface_jacobian        Jacobi, plus the flexible side's ∂W/∂x, ∂W/∂v (one interface node
                            per flexible body).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    """One coupling scheme (module docstring)."""

    name: str
    #: the flexible side steps first, in inputs_for_rigid (its end wrench is interpolated)
    flex_first: bool = False
    #: the flexible side steps after the rigid side, with the rigid motion at t + H
    rigid_first: bool = False
    #: the flexible side hands ∂W/∂x, ∂W/∂v with the wrench (after re-synchronising to x_n)
    jacobian: bool = False
    #: restore and repeat each macro step (in process only: both sides must be restored)
    iterative: bool = False
    #: the scheme's code in the C batch of macro steps (librbcosim/cosim/coupled.h), or None
    batch_code: int | None = None

    @property
    def overlaps(self) -> bool:
        """True when the flexible side may step while the rigid side takes the same step."""
        return not (self.flex_first or self.rigid_first or self.iterative)

    @property
    def distributed(self) -> bool:
        """True when a flexible solver in its own process can run it (no restore-and-repeat)."""
        return not self.iterative

    def __str__(self) -> str:
        return self.name


JACOBI = Scheme("jacobi", batch_code=0)
SCHEMES: dict[str, Scheme] = {s.name: s for s in (
    JACOBI,
    Scheme("gauss_seidel_rigid_first", rigid_first=True, batch_code=1),
    Scheme("gauss_seidel_flex_first", flex_first=True, batch_code=2),
    Scheme("iterative", iterative=True),
    Scheme("interface_jacobian", jacobian=True),
)}
#: what a flexible solver in its own process can run, by name
DISTRIBUTED_SCHEMES = tuple(name for name, s in SCHEMES.items() if s.distributed)


def scheme_named(name: str | Scheme) -> Scheme:
    """The Scheme of a ``cosim.scheme`` value (ValueError naming the valid ones otherwise)."""
    if isinstance(name, Scheme):
        return name
    try:
        return SCHEMES[name]
    except (KeyError, TypeError):
        raise ValueError(f"cosim.scheme: {name!r} is not a coupling scheme; valid: "
                         f"{list(SCHEMES)}") from None
