"""`rbcosim cosim`: the coupled run across processes.

The rigid side runs in an `rbcosim serve` process (started here on a free loopback port, or a
running server given by address, possibly on another host); each flexible body runs in its own
`rbcosim flex` process (one client for all the body's joints) (or external solvers attach themselves). This process only creates the
session, starts and watches the others (one flexible process per flexible body, driving
all that body's joints as one client), shows progress, and merges the server's rigid-side
result rows with each flexible process's columns into the table `rbcosim run` writes for the
same scenario — the same columns, in the same order, with the same numbers.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import zmq

from rbcosim.client import Client, ServiceError, ServiceTimeout
from rbcosim.cosim.rigid_side import rigid_formulation
from rbcosim.distributed.flex_solver import (
    FlexResults,
    body_joints,
    check_distributed,
    macro_steps,
    read_results,
)
from rbcosim.distributed.placement import chosen_cpu, descendants, pin_processes
from rbcosim.distributed.processes import (
    CosimError,
    CosimOptions,
    ExitWatch,
    FlexProcess,
    ServerProcess,
    describe_exit,
    start_flex,
    stop_processes,
    tail,
)
from rbcosim.endpoints import is_loopback
from rbcosim.errors import RbcosimError
from rbcosim.progress import Progress
from rbcosim.results import Results
from rbcosim.scenario.loader import Scenario, load_scenario

WATCH_INTERVAL = 0.1  # s between the watcher's heartbeats (progress, a lost server or session)
FIRST_SESSION_WAIT = 60.0  # s a create_session may wait for a server's (restarted) fork server


@dataclass
class CosimRun:
    """A finished multi-process run."""

    results: Results
    address: str
    session: str
    processes: dict[str, int] = field(default_factory=dict)
    """joint -> pid of the flexible solver driving it (empty when external solvers drove the
    session)."""


# --- results ------------------------------------------------------------------------------


def merge_results(scenario: Scenario, server_results: dict,
                  flex_results: dict[str, FlexResults] | None) -> tuple[list[str], np.ndarray]:
    """The server's rigid-side rows and each flexible body's columns (body -> FlexResults,
    from all the flexible processes), in the in-process master's column order (rigid side,
    then each body in the order of its first coupling); None for flex_results keeps the rigid
    columns only (external solvers keep their own)."""
    columns = list(server_results["columns"])
    steps = list(server_results["row_steps"])
    blocks = [np.asarray(server_results["rows"], dtype=np.float64).reshape(len(steps), -1)]
    for body in body_joints(scenario) if flex_results is not None else ():
        fr = flex_results[body]
        if fr.steps != steps:
            raise CosimError(
                f"the flexible solver of body {body!r} wrote rows at {len(fr.steps)} steps "
                f"and the server at {len(steps)}; they must agree (same scenario and overrides?)"
            )
        columns += fr.columns
        blocks.append(fr.table())
    return columns, np.hstack(blocks)


def diagnostics(scenario: Scenario, server_results: dict, n_steps: int, wall_time: float,
                address: str, session: str, processes: dict[str, int]) -> dict:
    """The in-process master's summary keys, with the run's wall time and processes."""
    d = dict(server_results.get("diagnostics") or {})
    joints = d.pop("joints", {})
    violations = d.pop("continuity_violations", 0)
    cs = scenario.cosim
    d["wall_time_s"] = wall_time
    d.update(formulation=f"{rigid_formulation(scenario)} (rigid side)", scheme=cs.scheme, macro_step=cs.macro_step,
             micro_steps=cs.micro_steps, extrapolation=cs.extrapolation, macro_steps=n_steps,
             iterations_total=n_steps, iterations_max=1 if n_steps else 0)
    d["joints"] = joints
    d["continuity_violations"] = violations
    d["distributed"] = {"server": address, "session": session, "flex_processes": processes}
    return d


# --- the run ------------------------------------------------------------------------------


def _say(options: CosimOptions, text: str) -> None:
    if options.log is not None:
        options.log(text)
    else:
        print(text, file=sys.stderr, flush=True)


def _connect(address: str, options: CosimOptions) -> Client:
    try:
        client = Client(address, timeout=options.connect_timeout,
                        curve_server_key=options.curve_server_key,
                        curve_client_secret_file=options.curve_secret)
    except zmq.ZMQError as exc:
        raise CosimError(f"cannot connect to {address!r}: {exc}") from None
    try:
        client.hello("rbcosim cosim")
    except ServiceTimeout:
        client.close_socket()
        raise CosimError(
            f"no rbcosim server answers at {address} (waited {options.connect_timeout:g} s): "
            "is `rbcosim serve` running there, and does the address (and CURVE key) match?"
        ) from None
    except ServiceError as exc:
        client.close_socket()
        raise CosimError(f"the server at {address} refused the handshake: {exc}") from None
    client.timeout = options.timeout
    return client


def run_distributed(scenario_path: str | Path, overrides: list[str] | None = None,
                    options: CosimOptions | None = None, server: ServerProcess | None = None,
                    early: list[FlexProcess] | None = None) -> CosimRun:
    """Run the scenario's co-simulation across processes; returns the merged results.

    server: a server started ahead for this run (`ServerProcess`, e.g. by the command line
    before it loaded anything): the run asks it to end when it ends (`terminate`), and the
    caller then waits for it (`stop`), e.g. after writing the results; None starts one here
    (and stops it) unless options.connect names one.

    early: flexible solvers started ahead, before their joints were known (`start_flex` with
    joints None, the same overrides and options): the run gives them the bodies' joints in
    order, starts more if there are more bodies, and stops them all when it ends."""
    options = options or CosimOptions()
    scenario_path = Path(scenario_path)
    overrides = list(overrides or [])
    ours = server is None
    try:
        # Every process starts at once: the server first (its start-up is the longest), then
        # the flexible solvers, which load their bodies while the server starts and the
        # session is created, and then get both on their stdin.
        if server is None and options.connect is None:
            server = ServerProcess(options.bind, options.barrier_timeout,
                                   scenario_path.resolve().parent)
        scenario = load_scenario(scenario_path, overrides)
        check_distributed(scenario)
        with tempfile.TemporaryDirectory(prefix="rbcosim-cosim-") as tmp:
            return _run(scenario, scenario_path, overrides, options, server, Path(tmp),
                        list(early or []))
    finally:
        stop_processes(early or [])
        if server is not None:
            server.stop() if ours else server.terminate()


def _run(scenario: Scenario, scenario_path: Path, overrides: list[str], options: CosimOptions,
         server: ServerProcess | None, workdir: Path, early: list[FlexProcess]) -> CosimRun:
    """`run_distributed` once its server runs (or is named) and its scenario is loaded."""
    n_steps = macro_steps(scenario)
    flex: list[FlexProcess] = []
    client = None
    try:
        if not options.serve_external:
            bodies = list(body_joints(scenario).values())
            flex = early[:len(bodies)] + [
                start_flex(None, None, None, scenario_path.resolve(), overrides, workdir,
                           options) for _ in bodies[len(early):]]
            for f, joints in zip(flex, bodies):
                f.assign(joints)
        address = options.connect if server is None else server.wait_address()
        client = _connect(address, options)
        info = _create_session(client, scenario_path, overrides, address, options,
                               local=server is not None)
        session = info["session"]
        start = time.perf_counter()
        if options.serve_external:
            _announce(options, address, session, scenario, scenario_path, overrides)
        for f in flex:
            f.hand(address, session)
        _place(options, server, flex)
        try:
            _watch(client, flex, n_steps, options, server)
        except CosimError as exc:
            raise _diagnosed(exc, scenario) from None
        wall = time.perf_counter() - start
        res = client.results()
        flex_results = None if options.serve_external else {
            body: r for f in flex for body, r in read_results(f.out).items()}
        columns, data = merge_results(scenario, res, flex_results)
        processes = {j: f.proc.pid for f in flex for j in f.joints}
        diag = diagnostics(scenario, res, n_steps, wall, address, session, processes)
        try:
            client.close()
        except (ServiceError, ServiceTimeout):
            pass
        return CosimRun(Results(columns, data, diag), address, session, processes)
    finally:
        stop_processes(flex)
        if client is not None:
            client.close_socket()


def _place(options: CosimOptions, server: ServerProcess | None,
           flex: list[FlexProcess]) -> None:
    """The processes this run started onto one CPU (`CosimOptions.pin`) as they begin to step:
    with auto, only a run whose server and flexible solvers are all its own."""
    ours = server is not None and bool(flex)
    cpu = chosen_cpu(options.pin) if ours or isinstance(options.pin, int) else None
    if cpu is None:
        return
    roots = [f.proc.pid for f in flex] + ([] if server is None else [server.proc.pid])
    try:
        pin_processes(descendants(roots), cpu)
    except OSError as exc:  # e.g. a CPU a cgroup withholds: the run goes on unplaced
        _say(options, f"--pin {options.pin}: cannot place the processes on CPU {cpu} ({exc}); "
                      "they run where the OS puts them")


def _create_session(client: Client, scenario_path: Path, overrides: list[str], address: str,
                    options: CosimOptions, local: bool) -> dict:
    """A session of the scenario: by path on a server started here (it sees our files), as
    inline text on another one (base_dir only when that one is on this host)."""
    pairs = (item.split("=", 1) for item in overrides)
    kwargs = {"overrides": {k.strip(): v.strip() for k, v in pairs},
                  "barrier_timeout": options.barrier_timeout,
                  "snapshot_every": options.checkpoint_every or None, "wait_for_joints": True}
    # A server whose fork server died builds sessions again once a new one has loaded the
    # core (a fresh server says its address only then).
    timeout, client.timeout = client.timeout, max(client.timeout or 0.0, FIRST_SESSION_WAIT)
    try:
        if local:
            return client.create_session(scenario_path.resolve(), **kwargs)
        base = str(scenario_path.resolve().parent) if is_loopback(address) else None
        return client.create_session(text=scenario_path.read_text(), base_dir=base, **kwargs)
    except ServiceError as exc:
        raise CosimError(f"the server at {address} refused the scenario: {exc.message}") from None
    except ServiceTimeout:
        raise CosimError(f"the server at {address} created no session within "
                         f"{client.timeout:g} s") from None
    finally:
        client.timeout = timeout


def _announce(options: CosimOptions, address: str, session: str, scenario: Scenario,
              scenario_path: Path, overrides: list[str]) -> None:
    _say(options, f"serving session {session} on {address}; waiting for flexible solvers "
                  "(one per flexible body, driving all its joints):")
    sets = "".join(f" --set {item}" for item in overrides)
    points = {c.name: c.point for c in scenario.couplings}
    for body, joints in body_joints(scenario).items():
        where = ", ".join(f"{j} at point {points[j]}" for j in joints)
        _say(options, f"  body {body} (joints {where}): rbcosim flex --connect {address} "
                      f"--session {session} --body {body} --scenario {scenario_path}{sets}")


def _watch(client: Client, flex: list[FlexProcess], n_steps: int, options: CosimOptions,
           server: ServerProcess | None) -> None:
    """Until every flexible solver has finished (or, external, the session reached t_end):
    a heartbeat every `WATCH_INTERVAL` s, and at once when a flexible solver ends."""
    with Progress(n_steps, enabled=options.progress, label="cosim") as bar, \
            ExitWatch([f.proc for f in flex]) as exits:
        while True:
            failed = [m for f in flex if (m := f.failure())]
            if failed:
                raise CosimError("\n".join(failed) + _server_view(client))
            if server is not None and server.proc.poll() is not None:
                raise CosimError(f"the rbcosim server {describe_exit(server.proc.returncode)}: "
                                 f"{tail(server.log_path)}")
            try:
                hb = client.heartbeat()
            except ServiceTimeout:
                raise CosimError(f"the server at {client.address} stopped answering") from None
            except ServiceError as exc:
                raise CosimError(f"the server lost the session: {exc}") from None
            if hb.get("failed"):
                raise CosimError(f"the session failed: {hb['failed']}")
            bar.update(min(int(hb["step"]), n_steps))
            if flex and all(f.proc.poll() == 0 for f in flex):
                return
            if not flex and hb["step"] >= n_steps and hb.get("last_row_step") == n_steps \
                    and not hb.get("waiting"):
                return
            exits.wait(WATCH_INTERVAL)


def _diagnosed(error: CosimError, scenario: Scenario) -> CosimError:
    """`error`, with the likely cause (rbcosim.maximal.divergence.cosim_cause) appended to its line
    that says the run diverged (a failed process's error may be followed by the server's
    view of the session)."""
    lines = str(error).split("\n")
    at = next((i for i, line in enumerate(lines) if "diverged" in line), None)
    if at is None:
        return error
    from rbcosim.cosim.flex_bodies import build_endpoints
    from rbcosim.maximal.divergence import cosim_cause

    H = scenario.cosim.macro_step
    lines[at] += f"; {cosim_cause(scenario, build_endpoints(scenario, H).values(), H)}"
    return CosimError("\n".join(lines))


def _server_view(client: Client) -> str:
    try:
        hb = client.heartbeat()
    except RbcosimError:
        return ""
    return (f"\nthe server's session: step {hb.get('step')}, clients {hb.get('clients')}, "
            f"waiting {hb.get('waiting')}, orphans {hb.get('orphans')}")
