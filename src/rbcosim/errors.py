"""Exception types, split by phase: building a model versus running it."""


class RbcosimError(Exception):
    """Base of every error rbcosim raises on purpose; the CLI prints it without a traceback."""


class ScenarioError(RbcosimError, ValueError):
    """A scenario file or override is malformed; the message names the file and key path."""


class SimulationError(RbcosimError, RuntimeError):
    """A run failed numerically (non-finite state, singular constraints, continuity stop)."""


class LimitError(ScenarioError):
    """A scenario needs more than a run limit allows (`rbcosim.limits`); names the limit."""


class RunFailedError(SimulationError):
    """A run stopped by a SimulationError (non-finite state, Newton failure, continuity stop,
    ...); `partial` holds the Results rows computed before, summary status "failed"."""

    def __init__(self, message: str, partial=None):
        super().__init__(message)
        self.partial = partial


class SingularJacobianError(SimulationError):
    """The joints' Jacobian lost rank at a step (J M⁻¹ Jᵀ singular)."""


class DivergedError(SimulationError):
    """A run's state became non-finite or absurd (`rbcosim.maximal.divergence`); summary status
    "diverged"; `row`: the absurd (finite) results row that showed it, or None."""

    status = "diverged"

    def __init__(self, message: str, row=None):
        super().__init__(message)
        self.row = row


class UnknownKeyError(ScenarioError):
    """A scenario key or `--set` path that the format does not know (a typo, mostly)."""


class CaseTimeoutError(SimulationError):
    """A run went on past its wall-clock allowance (`rbcosim sweep --case-timeout`)."""
