"""FMI call sequences against an exported FMU, run in a child process so that a crash of the FMU
(SIGSEGV) fails a test instead of killing pytest (no tests here; see test_fmu_state_machine.py).

``python fmu_calls.py FMU CASE [SEED COUNT]`` runs one case of :data:`CASES` on the FMU and
prints its result as one JSON line; ``fuzz`` runs COUNT random sequences from SEED.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import sys
import tempfile
from pathlib import Path

from fmpy.fmi1 import FMICallException
from test_fmu_support import bits, open_fmu

OK = 0


class Harness:
    """One FMU instance under FMPy with every call's status (0 = OK) instead of exceptions."""

    def __init__(self, path: str, unzipdir: Path, initialize: bool = True) -> None:
        self.fmu = open_fmu(path, unzipdir, initialize=initialize)
        self.v = self.fmu.fmi_version
        md = self.fmu.description
        self.t0 = float(md.defaultExperiment.startTime)
        self.H = float(md.defaultExperiment.stepSize)
        reals = [x for x in md.modelVariables if x.type in ("Real", "Float64")]
        self.real_vrs = [x.valueReference for x in reals]
        self.inputs = [x.valueReference for x in reals if x.causality == "input"]
        self.outputs = [x.valueReference for x in reals if x.causality == "output"]
        self.parameters = [x.valueReference for x in reals if x.causality == "parameter"]
        self.unknown = max(x.valueReference for x in md.modelVariables) + 1
        self.forces = [x.valueReference for x in reals if x.name.endswith((".fx", ".fz"))]

    def status(self, call, *args, **kwargs) -> int:
        try:
            call(*args, **kwargs)
        except FMICallException as exc:
            return int(exc.status)
        return OK

    # -- calls by FMI 2 / FMI 3 name ---------------------------------------------------------

    def set_reals(self, vrs, values) -> int:
        s = self.fmu.slave
        return self.status(s.setReal if self.v == 2 else s.setFloat64, list(vrs), list(values))

    def get_reals(self, vrs) -> int:
        s = self.fmu.slave
        return self.status(s.getReal if self.v == 2 else s.getFloat64, list(vrs))

    def reals(self, vrs) -> list[float]:
        s = self.fmu.slave
        return (s.getReal if self.v == 2 else s.getFloat64)(list(vrs))

    def values(self) -> bytes:
        """Every Real variable, bit for bit (getters are allowed in every state)."""
        return bits(self.reals(self.real_vrs))

    def do_step(self, t, h) -> int:
        return self.status(self.fmu.do_step, t, h)

    def enter_init(self) -> int:
        s = self.fmu.slave
        if self.v == 2:
            return self.status(s.enterInitializationMode)
        return self.status(s.enterInitializationMode, startTime=self.t0)

    def exit_init(self) -> int:
        return self.status(self.fmu.slave.exitInitializationMode)

    def terminate(self) -> int:
        return self.status(self.fmu.slave.terminate)

    def get_state(self):
        try:
            return OK, self.fmu.get_state()
        except FMICallException as exc:
            return int(exc.status), None

    def set_state(self, state) -> int:
        return self.status(self.fmu.set_state, state)

    def serialize(self, state):
        return self.fmu.serialize(state)

    def deserialize(self, blob):
        """(status, state); a refused blob deserialises (pythonfmu cannot refuse it there)."""
        try:
            return OK, self.fmu.deserialize(blob)
        except FMICallException as exc:
            return int(exc.status), None

    def free(self) -> None:
        self.fmu.slave.freeInstance()


def corruptions(blob: bytes):
    """(name, bytes) for many ways of spoiling a serialized FMU state."""
    n = len(blob)
    yield "empty", b""
    yield "truncated", blob[: n // 2]
    yield "one byte short", blob[:-1]
    yield "trailing byte", blob + b"\x00"
    yield "foreign", b"x" * n
    yield "old format tag", b"RBCFMUS1" + blob[8:]
    for position in (0, 8, 12, 20, 28, 40, n // 3, n // 2, n - 40, n - 1):
        spoiled = bytearray(blob)
        spoiled[position] ^= 0x10
        yield f"bit flip at {position}", bytes(spoiled)


def _sealed(state: dict) -> bytes:
    """A blob with a valid checksum around a state that is not this FMU's."""
    from rbcosim.fmu_export.runtime.fmustate import encode_state

    return encode_state(state)


def forged(blob: bytes):
    """(name, bytes) with a correct checksum but contents the FMU must refuse."""
    from rbcosim.fmu_export.runtime.fmustate import decode_state

    good = decode_state(blob)
    yield "values too short", _sealed({**good, "values": good["values"][:-1]})
    yield "time NaN", _sealed({**good, "values": [math.nan, *good["values"][1:]]})
    yield "output infinite", _sealed({**good, "values": [*good["values"][:-1], math.inf]})
    yield "unknown override", _sealed({**good, "overrides": {"no.such.key": "1.0"}})
    yield "unknown joint", _sealed({**good, "flex_reported": ["nowhere"]})
    yield "mode without solver", _sealed({**good, "solver": None})
    yield "solver bytes spoiled", _sealed({**good, "solver": good["solver"][: len(good["solver"]) // 2]})


# -- the findings, one case each ------------------------------------------------------


def case_step_after_refused_deserialisation(path, tmp):
    """A spoiled blob, then doStep: directly (the instance is untouched, it steps), and after
    trying to restore it (refused: the instance is in the error state)."""
    h = Harness(path, tmp / "u")
    h.do_step(h.t0, h.H)
    spoiled = bytearray(h.serialize(h.get_state()[1]))
    spoiled[len(spoiled) // 2] ^= 0xFF
    status, state = h.deserialize(bytes(spoiled))
    result = {"step": h.do_step(h.t0 + h.H, h.H)}
    result["restore"] = h.set_state(state) if state is not None else status
    result["step_after_restore"] = h.do_step(h.t0 + 2 * h.H, h.H)
    return result


def case_step_after_terminate(path, tmp):
    h = Harness(path, tmp / "u")
    h.do_step(h.t0, h.H)
    h.terminate()
    return {"step": h.do_step(h.t0 + h.H, h.H)}


def case_second_initialization(path, tmp):
    h = Harness(path, tmp / "u", initialize=False)
    if h.v == 2:
        h.fmu.slave.setupExperiment(startTime=h.t0)
    first = h.enter_init()
    twice = h.enter_init()
    return {"first": first, "twice": twice, "after_exit": Harness(path, tmp / "w").enter_init()}


def case_unknown_value_reference(path, tmp):
    h = Harness(path, tmp / "u")
    before = h.values()
    result = {"set": h.set_reals([h.unknown], [1.0]), "get": h.get_reals([h.unknown])}
    result["unchanged"] = h.values() == before
    result["step"] = h.do_step(h.t0, h.H)
    return result


def case_set_output(path, tmp):
    h = Harness(path, tmp / "u")
    before = h.values()
    result = {"set": h.set_reals([h.outputs[0]], [123.0])}
    result["unchanged"] = h.values() == before
    result["set_parameter_after_init"] = h.set_reals([h.parameters[0]], [123.0])
    return result


def case_odd_step_sizes(path, tmp):
    result = {}
    for name, factor in (("1.5H", 1.5), ("0.3H", 0.3), ("1000.5H", 1000.5)):
        h = Harness(path, tmp / name)
        before = h.values()
        result[name] = h.do_step(h.t0, factor * h.H)
        result[name + " unchanged"] = h.values() == before
    return result


def case_multiple_step(path, tmp, k=1000):
    """doStep(t, k H) is either refused or exactly k doSteps of H."""
    a, b = Harness(path, tmp / "a"), Harness(path, tmp / "b")
    for h in (a, b):
        h.set_reals(h.forces, [0.3] * len(h.forces))
    status = a.do_step(a.t0, k * a.H)
    for n in range(k):
        b.do_step(b.t0 + n * b.H, b.H)
    largest = max(abs(x) for x in a.reals(a.outputs))
    return {"status": status, "same_as_k_steps": a.values() == b.values(), "max_output": largest}


def case_corrupted_blobs(path, tmp):
    """Every spoiled blob is refused, changes nothing, and after restoring the saved state the
    FMU steps to the same bits as an untouched copy."""
    h, twin = Harness(path, tmp / "u"), Harness(path, tmp / "t")
    for x in (h, twin):
        x.set_reals(x.forces, [0.7] * len(x.forces))
        x.do_step(x.t0, x.H)
    saved = h.get_state()[1]
    blob = h.serialize(saved)
    accepted, changed, t = [], [], h.t0 + h.H
    for name, bad in itertools.chain(corruptions(blob), forged(blob)):
        before = h.values()
        status, state = h.deserialize(bad)
        if status == OK and h.set_state(state) == OK:
            accepted.append(name)
        if h.values() != before:
            changed.append(name)
        if h.do_step(t, h.H) == OK:
            accepted.append(name + " (then stepped)")
        h.set_state(saved)
    h.set_state(h.deserialize(blob)[1])
    for n in range(3):
        h.do_step(t + n * h.H, h.H)
        twin.do_step(t + n * twin.H, twin.H)
    return {"accepted": accepted, "changed": changed, "same_as_twin": h.values() == twin.values()}


CASES = {
    name[len("case_"):]: f for name, f in list(globals().items()) if name.startswith("case_")
}

# -- fuzz -----------------------------------------------------------------------------------


class Sequence:
    """A random sequence of FMI calls with random arguments on a fresh instance, checked
    against FMI's order: illegal calls must not return OK, refused ones must change nothing."""

    def __init__(self, path, unzipdir, rng: random.Random) -> None:
        self.h = Harness(path, unzipdir, initialize=False)
        self.rng = rng
        self.mode = "instantiated"
        self.t = self.h.t0
        self.saved: list[tuple[object, str, float]] = []
        self.calls: list[str] = []
        self.violations: list[str] = []

    def run(self, length: int) -> None:
        """``length`` random calls, most sequences after a regular initialization (so that
        step mode is explored, not only its entrance), doStep and state calls more often."""
        actions = [self.enter_init, self.exit_init, self.terminate, self.set_spoiled_state,
                   *[self.step] * 4, *[self.set_reals] * 2, self.get_reals, *[self.get_state] * 2,
                   *[self.set_state] * 2]
        if self.h.v == 2:
            actions.append(self.setup_experiment)
        if self.rng.random() < 0.7:
            if self.h.v == 2:
                self.setup_experiment()
            self.enter_init()
            self.exit_init()
            self.get_state()
        for _ in range(length):
            if self.mode == "error" and self.rng.random() < 0.5:
                self.set_state()  # FMI's way out of the error state
            else:
                self.rng.choice(actions)()
        self.h.free()

    def _check(self, name: str, legal: bool, status: int, before: bytes | None) -> None:
        self.calls.append(f"{name}->{status}")
        if status != OK:
            self.mode = "error"
            if not legal and before is not None and self.h.values() != before:
                self.violations.append(f"{' '.join(self.calls)}: refused call changed state")
        elif not legal:
            self.violations.append(f"{' '.join(self.calls)}: illegal call returned OK")

    def setup_experiment(self):
        before = self.h.values()
        status = self.h.status(self.h.fmu.slave.setupExperiment, startTime=self.h.t0)
        self._check("setupExperiment", self.mode == "instantiated", status, before)

    def enter_init(self):
        before = self.h.values()
        legal = self.mode == "instantiated"
        status = self.h.enter_init()
        self._check("enterInit", legal, status, before)
        if status == OK and legal:
            self.mode = "initialization"

    def exit_init(self):
        before = self.h.values()
        legal = self.mode == "initialization"
        status = self.h.exit_init()
        self._check("exitInit", legal, status, None)  # a legal exit builds the model
        if status == OK and legal:
            self.mode = "step"
        elif status != OK and self.h.values() != before:
            self.violations.append(f"{' '.join(self.calls)}: refused exit changed state")

    def step(self):
        H = self.h.H
        rng = self.rng
        t = self.t if rng.random() < 0.85 else rng.choice([self.t + H, self.t - H, math.nan])
        factor = 1.0 if rng.random() < 0.6 else rng.choice(
            [0.5, 2.0, 3.0, 1.5, 0.3, 0.0, -1.0, math.nan])
        h = factor * H
        legal = self.mode == "step" and t == self.t and factor in (1.0, 0.5, 2.0, 3.0)
        before = self.h.values()
        status = self.h.do_step(t, h)
        self._check(f"doStep({(t - self.t) / H:+}H, {factor}H)", legal, status, before)
        if status == OK:
            self.t += h

    def _vrs(self):
        h = self.h
        pool = [h.inputs, h.inputs, h.outputs, h.parameters, [h.unknown, 10**6]]
        kind = 0 if self.rng.random() < 0.6 else self.rng.randrange(len(pool))
        return kind, self.rng.sample(pool[kind], min(len(pool[kind]), self.rng.randint(1, 3)))

    def set_reals(self):
        kind, vrs = self._vrs()
        values = [self.rng.choice([0.0, 1.5, -2.0, 0.25, 1e3, math.nan]) for _ in vrs]
        allowed = {"instantiated": (0, 1, 3), "initialization": (0, 1, 3), "step": (0, 1)}
        legal = kind in allowed.get(self.mode, ())
        before = self.h.values()
        self._check("set", legal, self.h.set_reals(vrs, values), before)

    def get_reals(self):
        kind, vrs = self._vrs()
        before = self.h.values()
        self._check("get", kind != 4, self.h.get_reals(vrs), before)

    def terminate(self):
        before = self.h.values()
        legal = self.mode in ("step", "error")
        status = self.h.terminate()
        self._check("terminate", legal, status, before if not legal else None)
        if status == OK and legal:
            self.mode = "terminated"

    def get_state(self):
        before = self.h.values()
        status, state = self.h.get_state()
        self._check("getState", self.mode != "error", status, before)
        if status == OK and self.mode != "error":
            self.saved.append((state, self.mode, self.t))

    def set_state(self):
        if not self.saved:
            return
        state, mode, t = self.rng.choice(self.saved)
        if self.rng.random() < 0.5:  # through serialization
            state = self.h.deserialize(self.h.serialize(state))[1]
        status = self.h.set_state(state)
        self._check("setState", True, status, None)
        if status == OK:
            self.mode, self.t = mode, t

    def set_spoiled_state(self):
        if not self.saved:
            return
        blob = bytearray(self.h.serialize(self.saved[-1][0]))
        if blob and self.rng.random() < 0.7:
            blob[self.rng.randrange(len(blob))] ^= 1 << self.rng.randrange(8)
        else:
            blob = blob[: self.rng.randrange(len(blob))]
        before = self.h.values()
        status, state = self.h.deserialize(bytes(blob))
        if state is not None:
            status = self.h.set_state(state)
        self._check("setSpoiledState", False, status, before)


def fuzz(path, tmp, seed: int, count: int):
    rng = random.Random(seed)
    violations, calls = [], []
    for _ in range(count):
        sequence = Sequence(path, tmp / "u", rng)
        sequence.run(rng.randint(2, 20))
        calls += sequence.calls
        violations += sequence.violations
    return {
        "sequences": count,
        "calls": len(calls),
        "refused": sum(not c.endswith("->0") for c in calls),
        "steps": sum(c.startswith("doStep") and c.endswith("->0") for c in calls),
        "violations": violations[:20],
    }


def main(argv: list[str]) -> None:
    path, case = argv[1], argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if case == "fuzz":
            result = fuzz(path, tmp, int(argv[3]), int(argv[4]))
        else:
            result = CASES[case](path, tmp)
    print(json.dumps(result), flush=True)
    # Every FMU call above has returned and every instance is freed. Leave without the
    # interpreter's finalisation, where pythonfmu's embedded interpreter sometimes corrupts the
    # heap at exit (glibc aborts: "corrupted double-linked list"; the exit crash the FMU issue
    # tracks), so that a crash here always means a crash in an FMI call.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
