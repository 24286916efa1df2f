"""µs per RK4 step (dt = 1e-3 s): rbcosim's two routes against MuJoCo, the anchor benchmark.

    python benchmarks/bench_vs_mujoco.py [--quick] [--only NAME ...] [--rounds R]

Cases (NAME): double_pendulum (scenarios/double_pendulum.toml), chain10, chain100, chain1000,
chain10000 (scenarios/chain.toml with generators.chain.links = N) and free_body
(scenarios/free_body.toml). Each runs rbcosim's maximal route (rbcosim.maximal.simulate.RigidSimulation)
and minimal route (rbcosim.minimal.route.MinimalSimulation) each timed two ways: many steps per
call, as `rbcosim run` steps between output rows, against MuJoCo's `mj_step(model, data,
nstep=N)`; and one Python call per step, as a co-simulation or FMU steps, against one `mj_step`
per step. The ratio column divides by the matching MuJoCo line. Models are written here
as MJCF with the scenario's masses, inertias, lengths, hinge axes, gravity and initial state,
integrator RK4, timestep 1e-3 s, no contacts, no joint damping or armature. The double pendulum
also gets the plain-Python RK4 of its two-angle Lagrange equations that the seed compared with.

All timing happens in this one process. After building (from the text description to a
steppable state: TOML loading plus route construction for rbcosim, MJCF parsing plus MjData for
MuJoCo; seconds), every engine takes the same few warm-up steps from the same initial state and
the column |Δ| MuJoCo reports the largest difference of a centre of mass (m) or of an attitude
matrix entry against MuJoCo at that point: the models are the same. Then R rounds each time a
chunk of ~0.2 s of steps per engine, the order rotating between rounds so that load from other
processes hits all alike; the table gives the median over the rounds, µs per step, and its ratio
to MuJoCo's. An engine whose last warm-up step takes longer than 3 s is not timed, one that
raises an exception is left out (the table says which and why).

chain10000 first measures, in one child process per engine, the peak resident memory of building
the model and taking two steps (MB; the child's memory after its imports is subtracted), with the
address space capped at 60 % of the available memory and 60 s at most. An engine whose build
fails (the error is printed), whose child does not finish in time or whose step takes over 3 s
is not timed in the main process.

MJCF nests one <body> per link and MuJoCo's XML parser stops at 500 nested elements, so deeper
chains are given to MuJoCo through mujoco.MjSpec with the same elements and attributes (checked
against the parsed MJCF on chain10 at start-up). MuJoCo 4.0's compiler itself rejects trees
deeper than 1024 bodies ("depth limit exceeded in signature computation", after 4 s of compiling
1100 links); at 10,000 links its compile does not end within the 60 s.

--quick runs 3 rounds of ~0.05 s chunks and leaves chain10000 out unless --only names it.
Benchmarks print figures; they are not tests.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from rbcosim.maximal.simulate import RigidSimulation
from rbcosim.minimal.route import MinimalSimulation
from rbcosim.scenario.loader import load_scenario
from rbcosim.spatial import quaternion as quat

DT = 1e-3  # s
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
SKIP_SECONDS = 3.0  # s: an engine whose warm-up step takes longer is not timed
MEMORY_SHARE = 0.6  # of MemAvailable: the address-space cap of the memory children
PROBE_SECONDS = 60.0  # s: a memory child that has not built and stepped by then is stopped
ENGINES = ("rbcosim maximal", "rbcosim minimal", "MuJoCo, nstep",
           "rbcosim maximal, one call per step", "rbcosim minimal, one call per step", "MuJoCo")
#: the anchor of each engine: many steps per call against mj_step(nstep=N), one call per step
#: against one mj_step per step
ANCHOR = {"rbcosim maximal": "MuJoCo, nstep", "rbcosim minimal": "MuJoCo, nstep",
          "MuJoCo, nstep": "MuJoCo, nstep"}
MJCF_OPTION = ('<compiler angle="radian"/>'
               '<option timestep="{dt}" integrator="RK4" gravity="{gravity}">'
               '<flag contact="disable"/></option>')


@dataclass
class Engine:
    """A built model: `step()` advances it by DT, `poses()` gives the centres of mass (n, 3), m,
    and attitude matrices (n, 3, 3) of its moving bodies (None: no poses to compare)."""

    step: Callable[[], None]
    poses: Callable[[], tuple[np.ndarray, np.ndarray]] | None
    build_s: float
    #: many steps in one call (what `rbcosim run` does between output rows), when not None
    steps: Callable[[int], None] | None = None


# --- MuJoCo models ---------------------------------------------------------------------------
def chain_mjcf(n: int, length: float, mass: float, axial: float, gravity: str) -> str:
    """MJCF of n uniform rods (length m, mass kg, transverse inertia m l²/12, axial kg·m²)
    hanging from the origin, each hinged about Y at its top end, rod k+1 at rod k's tip."""
    transverse = mass * length**2 / 12
    links = "".join(
        f'<body name="link{k}" pos="0 0 {-length if k > 1 else 0.0}">'
        f'<joint name="hinge{k}" type="hinge" axis="0 1 0"/>'
        f'<inertial pos="0 0 {-length / 2}" mass="{mass}" '
        f'diaginertia="{transverse!r} {transverse!r} {axial!r}"/>'
        for k in range(1, n + 1))
    return (f'<mujoco model="chain{n}">{MJCF_OPTION.format(dt=DT, gravity=gravity)}'
            f'<worldbody>{links}{"</body>" * n}</worldbody></mujoco>')


def chain_spec(n: int, length: float, mass: float, axial: float, gravity: str) -> mujoco.MjModel:
    """The model of chain_mjcf, built element by element through mujoco.MjSpec."""
    spec = mujoco.MjSpec.from_string(
        f'<mujoco model="chain{n}">{MJCF_OPTION.format(dt=DT, gravity=gravity)}'
        '<worldbody/></mujoco>')
    transverse = mass * length**2 / 12
    parent = spec.worldbody
    for k in range(1, n + 1):
        parent = parent.add_body(name=f"link{k}", pos=[0.0, 0.0, -length if k > 1 else 0.0],
                                 mass=mass, ipos=[0.0, 0.0, -length / 2],
                                 inertia=[transverse, transverse, axial], explicitinertial=True)
        parent.add_joint(name=f"hinge{k}", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 1, 0])
    return spec.compile()


def chain_model(n: int, *args) -> mujoco.MjModel:
    """MuJoCo model of chain_mjcf: parsed from the MJCF, or through MjSpec when too deep."""
    try:
        return mujoco.MjModel.from_xml_string(chain_mjcf(n, *args))
    except ValueError as exc:
        if "XML_ELEMENT_DEPTH_EXCEEDED" not in str(exc):
            raise
        return chain_spec(n, *args)


FREE_BODY_MJCF = (f'<mujoco model="free_body">{MJCF_OPTION.format(dt=DT, gravity="0 0 0")}'
                  '<worldbody><body name="racket"><freejoint/>'
                  '<inertial pos="0 0 0" mass="1" diaginertia="1 2 3"/></body>'
                  '</worldbody></mujoco>')


def mujoco_engine(make_model: Callable[[], mujoco.MjModel], qpos, qvel) -> Engine:
    """MuJoCo model from `make_model`, started at qpos, qvel (MuJoCo's joint coordinates)."""
    start = time.perf_counter()
    model = make_model()
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = qpos, qvel
    mujoco.mj_forward(model, data)
    build = time.perf_counter() - start

    def poses():
        mujoco.mj_kinematics(model, data)  # mj_step leaves the poses of its last stage
        return data.xipos[1:].copy(), data.ximat[1:].reshape(-1, 3, 3).copy()

    return Engine(lambda: mujoco.mj_step(model, data), poses, build,
                  lambda n: mujoco.mj_step(model, data, nstep=n))


# --- rbcosim ---------------------------------------------------------------------------------
def rbcosim_engine(route: str, path: Path, overrides: dict) -> Engine:
    """rbcosim's maximal or minimal route on a scenario file with --set style overrides."""
    start = time.perf_counter()
    scenario = load_scenario(path, overrides)
    if route == "maximal":
        sim = RigidSimulation(scenario.model, scenario.solver)

        def poses():
            return sim.state.r.copy(), quat.to_matrix(sim.state.q)
    else:
        sim = MinimalSimulation(scenario.model, scenario.solver)

        def poses():
            state = sim.system.body_state(sim.t, sim.system.kinematics(sim.y))
            return state.r.copy(), quat.to_matrix(state.q)

    build = time.perf_counter() - start
    if route == "maximal":
        def steps(n: int) -> None:
            sim.advance(sim.state.t + DT * np.arange(n + 1), DT)
    else:
        def steps(n: int) -> None:
            k0 = round(sim.t / DT)
            sim.run(k0, n, DT)

    return Engine(lambda: sim.step(DT), poses, build, steps)


# --- the seed's reference: plain-Python RK4 of the double pendulum's two angles --------------
def two_angle_engine(length: float = 0.5, g: float = 9.81) -> Engine:
    """θ1 = 60°, θ2 = 30° from the downward vertical, at rest; uniform rods of equal mass:
    T = ½ m l² [4/3 θ̇1² + θ̇1 θ̇2 cos(θ1 − θ2) + 1/3 θ̇2²],
    V = −m g l [3/2 cos θ1 + 1/2 cos θ2]."""

    def rates(t1, t2, w1, w2):
        c, s = math.cos(t1 - t2), math.sin(t1 - t2)
        m11, m12, m22 = 4.0 / 3.0, 0.5 * c, 1.0 / 3.0
        f1 = -0.5 * s * w2 * w2 - 1.5 * g / length * math.sin(t1)
        f2 = 0.5 * s * w1 * w1 - 0.5 * g / length * math.sin(t2)
        det = m11 * m22 - m12 * m12
        return w1, w2, (m22 * f1 - m12 * f2) / det, (m11 * f2 - m12 * f1) / det

    y = [(math.radians(60), math.radians(30), 0.0, 0.0)]

    def step():
        h, y0 = DT, y[0]
        k1 = rates(*y0)
        k2 = rates(*(a + 0.5 * h * b for a, b in zip(y0, k1)))
        k3 = rates(*(a + 0.5 * h * b for a, b in zip(y0, k2)))
        k4 = rates(*(a + h * b for a, b in zip(y0, k3)))
        y[0] = tuple(a + h / 6 * (b + 2 * c + 2 * d + e)
                     for a, b, c, d, e in zip(y0, k1, k2, k3, k4))

    return Engine(step, None, 0.0)


# --- cases -----------------------------------------------------------------------------------
@dataclass
class Case:
    """One model for every engine; `warmup` steps before timing (and before comparing)."""

    name: str
    scenario: Path
    overrides: dict
    mujoco_model: Callable[[], mujoco.MjModel]
    qpos: list
    qvel: list
    warmup: int = 10
    memory: bool = False

    def build(self, engine: str) -> Engine:
        if engine.startswith("MuJoCo"):
            built = mujoco_engine(self.mujoco_model, self.qpos, self.qvel)
            if engine == "MuJoCo":
                built.steps = None
            return built
        if engine == "plain Python, two angles":
            return two_angle_engine()
        built = rbcosim_engine(engine.split()[1].rstrip(","), self.scenario, self.overrides)
        if engine.endswith("one call per step"):
            built.steps = None
        return built

    @property
    def engines(self) -> tuple[str, ...]:
        extra = ("plain Python, two angles",) if self.name == "double_pendulum" else ()
        return ENGINES + extra


def chain_case(n: int) -> Case:
    """scenarios/chain.toml: rods 0.1 m, 0.1 kg, axial inertia 1e-6 of the transverse, all
    straight at 30° from the downward vertical towards +X (MuJoCo: hinge 1 at −30° about Y)."""
    axial = 1e-6 * 0.1 * 0.1**2 / 12
    return Case(f"chain{n}", SCENARIOS / "chain.toml", {"generators.chain.links": str(n)},
                lambda: chain_model(n, 0.1, 0.1, axial, "0 0 -9.81"),
                [-math.radians(30)] + [0.0] * (n - 1), [0.0] * n,
                warmup=2 if n > 1000 else 10, memory=n > 1000)


CASES = {
    # two 0.5 m, 1 kg rods, axial inertia 1e-8 kg·m², 60° and 30° from the downward vertical
    # towards +X: MuJoCo's hinges at −60° and +30° (relative) about Y
    "double_pendulum": Case("double_pendulum", SCENARIOS / "double_pendulum.toml", {},
                            lambda: chain_model(2, 0.5, 1.0, 1e-8, "0 0 -9.81"),
                            [-math.radians(60), math.radians(30)], [0.0, 0.0]),
    **{f"chain{n}": chain_case(n) for n in (10, 100, 1000, 10000)},
    # diag(1, 2, 3) kg·m², ω^b = (0.01, 2, 0.01) rad/s (MuJoCo's free joint: ω in body axes)
    "free_body": Case("free_body", SCENARIOS / "free_body.toml", {},
                      lambda: mujoco.MjModel.from_xml_string(FREE_BODY_MJCF),
                      [0, 0, 0, 1, 0, 0, 0], [0, 0, 0, 0.01, 2.0, 0.01]),
}


# --- measurement -----------------------------------------------------------------------------
def probe(case_name: str, engine: str, cap_bytes: int, conn) -> None:
    """Child process: build, then two steps, under an address-space cap. Sends the build's
    seconds, then peak RSS above the imports (MB) and the second step's seconds; or the
    exception that stopped it."""
    resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))
    baseline = peak_rss_mb()
    try:
        built = CASES[case_name].build(engine)
        conn.send({"build_s": built.build_s})
        step_s = [per_step(built, 1) for _ in range(2)][-1]  # the first may compile
    except Exception as exc:  # reported to the parent: MemoryError, MuJoCo's model limits
        conn.send({"error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"})
        return
    peak = peak_rss_mb()
    conn.send({"peak_MB": peak - baseline, "imports_MB": baseline, "step_s": step_s})


def peak_rss_mb() -> float:
    """This process's peak resident memory, MB: VmHWM of /proc/self/status (unlike ru_maxrss,
    it does not carry the parent's peak over a fork and exec)."""
    return _proc_field("/proc/self/status", "VmHWM:") / 2**20


def available_bytes() -> int:
    """MemAvailable from /proc/meminfo, bytes."""
    return _proc_field("/proc/meminfo", "MemAvailable:")


def _proc_field(path: str, key: str) -> int:
    """A `key: N kB` line of a /proc file, bytes."""
    for line in Path(path).read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} in {path}")


def memory_report(case: Case) -> dict[str, str]:
    """Peak RSS per engine (one fresh child each, at most PROBE_SECONDS); returns, for the
    engines not to be timed in this process, why."""
    cap = int(MEMORY_SHARE * available_bytes())
    print(f"{case.name}: peak resident memory of build + 2 steps, one child process per engine, "
          f"address space capped at {cap / 2**30:.1f} GiB, {PROBE_SECONDS:.0f} s at most",
          flush=True)
    context = multiprocessing.get_context("spawn")
    excluded = {}
    for engine in ENGINES:
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=probe, args=(case.name, engine, cap, send))
        child.start()
        deadline = time.perf_counter() + PROBE_SECONDS
        result: dict = {}
        while "error" not in result and "step_s" not in result:
            if not receive.poll(max(0.0, deadline - time.perf_counter())):
                result["error"] = (f"{'steps' if 'build_s' in result else 'build'} not "
                                   f"finished within {PROBE_SECONDS:.0f} s")
                child.terminate()
                break
            result.update(receive.recv())
        child.join()
        build = f"build {result['build_s']:.1f} s; " if "build_s" in result else ""
        if "error" in result:
            excluded[engine] = "not timed: " + result["error"]
            text = build + result["error"]
        else:
            text = (f"{result['peak_MB']:6.0f} MB (imports {result['imports_MB']:.0f} MB); "
                    f"{build}second step {result['step_s']:.2f} s")
            if result["step_s"] > SKIP_SECONDS:
                excluded[engine] = (f"not timed: one step took {result['step_s']:.1f} s "
                                    f"(> {SKIP_SECONDS:.0f} s)")
        print(f"  {engine:26s} {text}", flush=True)
    return excluded


def difference(a: Engine, b: Engine) -> float:
    """Largest |Δ| of centre-of-mass coordinates (m) and attitude-matrix entries."""
    (ra, Ra), (rb, Rb) = a.poses(), b.poses()
    return float(max(np.max(np.abs(ra - rb)), np.max(np.abs(Ra - Rb))))


def per_step(engine: Engine, steps: int) -> float:
    """Wall time of `steps` steps, s per step (in one call where the engine has one)."""
    start = time.perf_counter()
    if engine.steps is not None:
        engine.steps(steps)
    else:
        for _ in range(steps):
            engine.step()
    return (time.perf_counter() - start) / steps


@dataclass
class Row:
    engine: str
    build_s: float = math.nan
    us: float = math.nan
    diff: float = math.nan
    note: str = ""


def run_case(case: Case, rounds: int, chunk_s: float) -> list[Row]:
    """Build, warm up, compare with MuJoCo, then interleaved timing rounds."""
    excluded = memory_report(case) if case.memory else {}
    rows, built = [], {}
    for name in case.engines:
        if name in excluded:
            rows.append(Row(name, note=excluded[name]))
            continue
        try:
            engine = case.build(name)
            last = [per_step(engine, 1) for _ in range(case.warmup)][-1]  # after MuJoCo's and the caches' first-call costs
        except Exception as exc:  # an engine that cannot run this model: say why, go on
            rows.append(Row(name, note=f"failed: {type(exc).__name__}: {exc}"))
            continue
        row = Row(name, engine.build_s)
        rows.append(row)
        if last > SKIP_SECONDS:
            row.note = f"not timed: one step took {last:.1f} s (> {SKIP_SECONDS:.0f} s)"
            continue
        built[name] = (engine, row, max(1, round(chunk_s / last)))
    anchor = built.get("MuJoCo") or built.get("MuJoCo, nstep")
    for engine, row, _ in built.values():
        if anchor and engine.poses and anchor[0].poses:
            row.diff = difference(engine, anchor[0])
    times = {name: [] for name in built}
    order = list(built)
    for r in range(rounds if order else 0):
        for name in order[r % len(order):] + order[:r % len(order)]:
            engine, row, steps = built[name]
            if row.note:
                continue
            try:
                times[name].append(per_step(engine, steps))
            except Exception as exc:  # e.g. an explicit step that turns unstable: say so
                row.note = f"failed while timed: {type(exc).__name__}: {exc}"
    for name, (_, row, _) in built.items():
        if times[name]:
            row.us = statistics.median(times[name]) * 1e6
    return rows


def print_table(case: Case, rows: list[Row]) -> None:
    """µs per step and the ratio to the engine's anchor: MuJoCo's mj_step(nstep=N) for many
    steps per call, one mj_step per call for one call per step."""
    us_of = {r.engine: r.us for r in rows}
    print(f"{case.name} (warm-up {case.warmup} steps)")
    print(f"  {'engine':36s} {'build s':>9s} {'µs/step':>11s} {'/ MuJoCo':>9s} {'|Δ| MuJoCo':>11s}")
    for r in rows:
        mujoco_us = us_of.get(ANCHOR.get(r.engine, "MuJoCo"), math.nan)
        ratio = f"{r.us / mujoco_us:9.1f}" if math.isfinite(r.us / mujoco_us) else f"{'':9s}"
        diff = f"{r.diff:11.1e}" if math.isfinite(r.diff) else f"{'':11s}"
        us = f"{r.us:11.1f}" if math.isfinite(r.us) else f"{'':11s}"
        build = f"{r.build_s:9.3f}" if math.isfinite(r.build_s) else f"{'':9s}"
        print(f"  {r.engine:36s} {build} {us} {ratio} {diff}  {r.note}".rstrip(), flush=True)


def check_spec_builder() -> None:
    """chain_spec builds the same model as the parsed chain_mjcf (on 10 links)."""
    args = (10, 0.1, 0.1, 1e-12, "0 0 -9.81")
    parsed, built = mujoco.MjModel.from_xml_string(chain_mjcf(*args)), chain_spec(*args)
    for field in ("body_mass", "body_inertia", "body_ipos", "body_pos", "body_quat",
                  "jnt_axis", "jnt_pos", "dof_damping", "dof_armature", "opt.gravity",
                  "opt.timestep", "opt.integrator"):
        a, b = parsed, built
        for part in field.split("."):
            a, b = getattr(a, part), getattr(b, part)
        if not np.array_equal(a, b):
            raise SystemExit(f"MjSpec chain differs from the MJCF chain in {field}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 rounds of ~0.05 s chunks; chain10000 only with --only")
    parser.add_argument("--only", nargs="+", choices=list(CASES), metavar="NAME",
                        help=f"run these cases only: {', '.join(CASES)}")
    parser.add_argument("--rounds", type=int, help="timing rounds (default 7, quick 3)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 7)
    chunk_s = 0.05 if args.quick else 0.2
    names = args.only or [n for n in CASES if not (args.quick and n == "chain10000")]
    check_spec_builder()
    print(f"RK4, dt = {DT} s; median of {rounds} interleaved rounds of ~{chunk_s} s per engine; "
          f"MuJoCo {mujoco.__version__}, Python {sys.version.split()[0]}")
    measured = {}
    for name in names:
        measured[name] = run_case(CASES[name], rounds, chunk_s)
        print_table(CASES[name], measured[name])
    if "chain100" in measured and "chain1000" in measured:  # ~10 for O(n), ~100 for O(n²)
        for small, large in zip(measured["chain100"], measured["chain1000"]):
            if math.isfinite(large.us / small.us):
                print(f"growth chain1000 / chain100, {small.engine}: {large.us / small.us:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
