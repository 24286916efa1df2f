"""The C core's flexible-solver loop (rbcosim._core.flex_loop) with bodies it does not step in C
(multi-node, chord-frame): it carries each step's request and reply and calls the endpoints'
own Python once per phase of the scheme. Every step goes through it against rbcosim's server,
`rbcosim cosim` keeps `rbcosim run`'s bits, and a body's error reaches the caller as Python's
step path raises it, with the client's message counter where that path leaves it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zmq
from service_helpers import running_server
from test_distributed_multi import assert_bitwise

from rbcosim import _core
from rbcosim.cli.main import main
from rbcosim.client import Client
from rbcosim.distributed import flex_solver
from rbcosim.distributed.flex_solver import _Side, endpoints_for, run_flex_solver
from rbcosim.errors import SimulationError
from rbcosim.flex.runtime.chord_body import ChordBody
from rbcosim.results import Results
from rbcosim.scenario.loader import load_scenario
from rbcosim.service import Service

ROOT = Path(__file__).resolve().parents[1]
CRANK = ROOT / "scenarios" / "flexible_slider_crank.toml"
SLIDERS = ROOT / "scenarios" / "pinned_beam_two_sliders.toml"
SCHEMES = ["gauss_seidel_flex_first", "jacobi", "gauss_seidel_rigid_first"]


def _sets(scheme: str, steps: int, path: Path) -> list[str]:
    H = load_scenario(path).cosim.macro_step
    return [f"solver.t_end={steps * H!r}", f'cosim.scheme="{scheme}"', "solver.output_every=5"]


def _drive(path: Path, sets: list[str]):
    """run_flex_solver on every joint of `path` against rbcosim's server (in a thread): (its
    results or the exception it raised, the client's next msg_id number, the session's
    step)."""
    scenario = load_scenario(path, sets)
    joints = [c.name for c in scenario.couplings]
    with running_server(Service()) as server, Client(server.address) as client:
        session = client.create_session(path, overrides=dict(s.split("=", 1) for s in sets),
                                        wait_for_joints=True)["session"]
        try:
            outcome = run_flex_solver(scenario, joints, client, session)
        except Exception as exc:  # noqa: BLE001 (the outcome under test)
            outcome = exc
        return outcome, client.next_id, client.heartbeat()["step"]


@pytest.mark.parametrize("path", [CRANK, SLIDERS], ids=["chord", "multi_node"])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_with_the_real_server_every_step_goes_through_the_loop(monkeypatch, path, scheme):
    """Python's step and reply reading never run: the loop recognises every reply and calls
    the bodies' Python itself (the path off, every step would go through `_Side.step`)."""
    def python_path(*args, **kwargs):
        raise AssertionError("a step went through Python's step path")

    monkeypatch.setattr(_Side, "step", python_path)
    monkeypatch.setattr(_Side, "_complete", python_path)
    monkeypatch.setattr(Client, "finish_step", python_path)
    results, _, step = _drive(path, _sets(scheme, 12, path))
    assert step == 12
    assert next(iter(results.values())).steps == [0, 5, 10, 12]


@pytest.mark.parametrize("scheme", ["gauss_seidel_rigid_first"])
def test_rbcosim_cosim_of_a_multi_node_body_with_the_rigid_side_first_is_bitwise(tmp_path,
                                                                                  scheme):
    """The third phase (the bodies' step after the reply, to its motions) keeps `rbcosim
    run`'s bits; the other two: tests/test_distributed_multi.py."""
    sets = [a for s in _sets(scheme, 60, SLIDERS) for a in ("--set", s)]
    ref, got = tmp_path / "run.csv", tmp_path / "cosim.csv"
    assert main(["run", str(SLIDERS), "--out", str(ref), "--quiet", *sets]) == 0
    assert main(["cosim", str(SLIDERS), "--out", str(got), "--quiet", *sets]) == 0
    reference, results = Results.read_csv(ref), Results.read_csv(got)
    assert np.abs(reference.data[:, reference.columns.index("beam.eta1")]).max() > 0
    assert_bitwise(results.columns, results.data, reference)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_body_error_reaches_the_caller_as_pythons_step_path_raises_it(monkeypatch, scheme):
    """The chord body fails at its 4th step (before the request with the flexible side
    first, while the rigid side steps with Jacobi, after the reply with the rigid side
    first): the same error, the same requests sent and the same session step as a side
    whose every step goes through Python's step path."""
    original_step, original_init = ChordBody.step, _Side.__init__
    calls = []

    def failing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise SimulationError("chord body: non-finite modal state (the test's)")
        return original_step(self, *args, **kwargs)

    def python_only(self, endpoints):
        original_init(self, endpoints)
        self._now = None  # every step through Python's step path

    monkeypatch.setattr(ChordBody, "step", failing)
    outcomes = []
    for init in (original_init, python_only):
        monkeypatch.setattr(_Side, "__init__", init)
        calls.clear()
        outcome, next_id, step = _drive(CRANK, _sets(scheme, 12, CRANK))
        outcomes.append((type(outcome), str(outcome), next_id, step))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][:2] == (SimulationError,
                               "chord body: non-finite modal state (the test's)")


def test_a_polynomial_of_the_wrong_size_is_refused_with_its_sizes():
    """The loop checks what the bodies' callback returns before encoding it."""
    side = _Side(endpoints_for(load_scenario(CRANK), ["pin_crank", "pin_wrist"]))
    context = zmq.Context()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind("tcp://127.0.0.1:0")
    try:
        client = Client(sock.getsockopt_string(zmq.LAST_ENDPOINT))
        client.session, client.client_id = "s-1", "c-1"
        bodies = (lambda t: np.zeros((2, 5)), side._loop_finish, side._kinematics,
                  side._energies, side._end)
        code, k, _, next_id, _, error = _core.flex_loop(
            *client.step_wire(2), bodies, 2, 2, 1e-3, 0, 0.0, np.zeros((2, 19)), 5, 7)
        client.close_socket()
    finally:
        sock.close(0)
        context.term()
    assert (code, k, next_id) == (flex_solver._RAISED, 0, 7)  # nothing sent
    assert isinstance(error, ValueError)
    assert str(error) == ("flex_loop: the wrench polynomial has 10 values, expected "
                          "(2, 1..4, 6)")


def test_a_signal_while_the_bodies_step_reaches_python():
    """SIGINT during a long run (whether it lands in the bodies' Python or in the loop's
    wait): KeyboardInterrupt out of run_flex_solver, after some steps."""
    import os
    import signal
    import threading

    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    sets = _sets("gauss_seidel_flex_first", 10**6, CRANK)
    scenario = load_scenario(CRANK, sets)
    with running_server(Service()) as server, Client(server.address) as client:
        session = client.create_session(CRANK, overrides=dict(s.split("=", 1) for s in sets),
                                        wait_for_joints=True)["session"]
        try:
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                run_flex_solver(scenario, ["pin_crank", "pin_wrist"], client, session)
        finally:
            timer.cancel()
        assert client.step_index > 1
