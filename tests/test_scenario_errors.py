"""Bad scenario files and bad overrides: exit 1 (2 for command-line usage), a message naming the
file and the key path, never a traceback. Every case runs `rbcosim check` in process."""

from __future__ import annotations

import pytest

from rbcosim.cli.main import main

pytestmark = pytest.mark.unit

BASE = """\
title = "two links"

[world]
gravity = [0.0, 0.0, -9.81]

[bodies.link1]
mass = 1.0
inertia = [0.02, 0.02, 1e-4]
position = [0.0, 0.0, -0.25]
[bodies.link1.markers.tip]
position = [0.0, 0.0, -0.25]

[bodies.link2]
mass = 1.0
inertia = [0.02, 0.02, 1e-4]
position = [0.0, 0.0, -0.75]
[bodies.link2.markers.top]
position = [0.0, 0.0, 0.25]

[joints.shoulder]
type = "revolute"
body1 = "ground"
body2 = "link1"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]

[joints.elbow]
type = "revolute"
marker1 = "link1.tip"
marker2 = "link2.top"

[solver]
integrator = "rk4"
dt = 1e-3
t_end = 1.0
output_every = 10
"""


def edit(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


DRIVER = '\n[joints.spin]\ntype = "driver"\njoint = "{joint}"\nmotion = {{ {motion} }}\n'
BALL = '\n[joints.ball]\ntype = "spherical"\nbody1 = "ground"\nbody2 = "link2"\nat = [0.0, 0.0, -1.0]\n'

# id: (file text, extra command-line arguments, fragments the message must contain)
CASES = {
    "invalid TOML": (
        edit(
            "mass = 1.0\ninertia = [0.02, 0.02, 1e-4]\nposition = [0.0, 0.0, -0.75]",
            "mass = 1.0\ninertia = [0.02, 0.02, 1e-4\nposition = [0.0, 0.0, -0.75]",
        ),
        [],
        ["invalid TOML: Unclosed array (at line 16"],
    ),
    "unknown key": (
        edit("mass = 1.0\n", 'mass = 1.0\ncolour = "red"\n'),
        [],
        ["bodies.link1.colour: unknown key", "known keys here"],
    ),
    "unknown top-level table": (BASE + "\n[solvr]\ndt = 1e-3\n", [], ["solvr: unknown key"]),
    "missing mass": (
        edit("[bodies.link2]\nmass = 1.0\n", "[bodies.link2]\n"),
        [],
        ["bodies.link2.mass: missing (required)"],
    ),
    "negative mass": (
        edit("mass = 1.0\n", "mass = -1.0\n"),
        [],
        ["bodies.link1.mass: expected a positive number, got -1.0"],
    ),
    "string where a number is expected": (
        edit("mass = 1.0\n", 'mass = "heavy"\n'),
        [],
        ["bodies.link1.mass: expression 'heavy': unknown name 'heavy'"],
    ),
    "inertia with two numbers": (
        edit(
            "inertia = [0.02, 0.02, 1e-4]\nposition = [0.0, 0.0, -0.75]",
            "inertia = [0.02, 0.02]\nposition = [0.0, 0.0, -0.75]",
        ),
        [],
        ["bodies.link2.inertia: expected 3 or 3x3 numbers, got 2"],
    ),
    "inertia not positive definite": (
        edit("inertia = [0.02, 0.02, 1e-4]", "inertia = [0.02, 0.02, -1e-4]"),
        [],
        ["bodies.link1.inertia: expected a positive definite tensor"],
    ),
    "inertia not symmetric": (
        edit(
            "inertia = [0.02, 0.02, 1e-4]",
            "inertia = [[0.02, 0.001, 0.0], [0.0, 0.02, 0.0], [0.0, 0.0, 0.01]]",
        ),
        [],
        ["bodies.link1.inertia: expected a symmetric matrix"],
    ),
    "inertia breaks the triangle inequality": (
        edit("inertia = [0.02, 0.02, 1e-4]", "inertia = [0.01, 0.01, 0.03]"),
        [],
        ["bodies.link1.inertia:", "triangle inequality"],
    ),
    "body named ground": (
        edit("[bodies.link1]\n", "[bodies.ground]\n"),
        [],
        ["bodies.ground: 'ground' is reserved"],
    ),
    "unknown body reference": (
        edit('body2 = "link1"', 'body2 = "link9"'),
        [],
        ["joints.shoulder.body2: no body 'link9'; valid names: ['ground', 'link1', 'link2']"],
    ),
    "unknown marker reference": (
        edit('marker2 = "link2.top"', 'marker2 = "link2.bottom"'),
        [],
        [
            (
                "joints.elbow.marker2: no marker 'link2.bottom'; valid names: "
                "['link1.tip', 'link2.top']"
            )
        ],
    ),
    "unknown joint type": (
        edit('type = "revolute"\nbody1', 'type = "hinge"\nbody1'),
        [],
        ["joints.shoulder.type: expected one of ['fixed', 'revolute',", "got 'hinge'"],
    ),
    "joint between a body and itself": (
        edit('body1 = "ground"\nbody2 = "link1"', 'body1 = "link1"\nbody2 = "link1"'),
        [],
        ["joints.shoulder.body2: a joint must connect two different bodies"],
    ),
    "zero joint axis": (
        edit("axis = [0.0, 1.0, 0.0]", "axis = [0.0, 0.0, 0.0]"),
        [],
        ["joints.shoulder.axis: expected a non-zero axis"],
    ),
    "driver on a spherical joint": (
        BASE + BALL + DRIVER.format(joint="ball", motion="polynomial = [0.0, 1.0]"),
        [],
        ["joints.spin.joint: a driver needs a revolute or prismatic joint", "spherical"],
    ),
    "driver on an unknown joint": (
        BASE + DRIVER.format(joint="knee", motion="polynomial = [0.0, 1.0]"),
        [],
        ["joints.spin.joint: no joint 'knee'; valid names: ['shoulder', 'elbow']"],
    ),
    "driver motion of no known kind": (
        BASE + DRIVER.format(joint="elbow", motion="ramp = 2.0"),
        [],
        ["joints.spin.motion: expected exactly one of polynomial"],
    ),
    "driver table with decreasing times": (
        BASE + DRIVER.format(joint="elbow", motion="table = [[0.0, 0.0], [1.0, 1.0], [0.5, 2.0]]"),
        [],
        ["joints.spin.motion.table: expected at least two rows with strictly increasing"],
    ),
    "non-unit quaternion": (
        edit(
            "position = [0.0, 0.0, -0.25]\n[bodies",
            "position = [0.0, 0.0, -0.25]\norientation = { quaternion = [1.0, 0.1, 0.0, 0.0] }"
            "\n[bodies",
        ),
        [],
        ["bodies.link1.orientation.quaternion: expected a unit quaternion, norm is 1.00499"],
    ),
    "bad integrator name": (
        edit('integrator = "rk4"', 'integrator = "euler"'),
        [],
        ["solver.integrator: expected one of ['rk4', 'sdirk2',", "got 'euler'"],
    ),
    "non-integer output_every": (
        edit("output_every = 10", "output_every = 2.5"),
        [],
        ["solver.output_every: expected an integer, got 2.5"],
    ),
    "unknown force type": (
        BASE + '\n[forces.push]\ntype = "rocket"\nbody = "link1"\n',
        [],
        ["forces.push.type: expected one of ['load', 'spring_damper',"],
    ),
    "load table row of the wrong width": (
        BASE + '\n[forces.push]\ntype = "load"\nbody = "link1"\ntable = [[0.0, 1.0, 2.0]]\n',
        [],
        ["forces.push.table[0]: expected 7 numbers, got 3"],
    ),
    "torsional spring on a missing joint": (
        BASE + '\n[forces.twist]\ntype = "torsional_spring_damper"\njoint = "wrist"\n'
        "stiffness = 1.0\n",
        [],
        ["forces.twist.joint: no revolute joint 'wrist'; valid names: ['shoulder', 'elbow']"],
    ),
    "chain generator with bodies": (
        BASE + "\n[generators.chain]\nlinks = 3\n",
        [],
        ["bodies: cannot be combined with [generators.chain]"],
    ),
    "bad --set syntax": (
        BASE,
        ["--set", "bodies.link1.mass"],
        ["--set 'bodies.link1.mass': expected KEY=VALUE"],
    ),
    "--set into a value": (
        BASE,
        ["--set", "bodies.link1.mass.unit=2"],
        ["--set bodies.link1.mass.unit: bodies.link1.mass is a value, not a table"],
    ),
    "--set a wrong type": (
        BASE,
        ["--set", "bodies.link1.mass=heavy"],
        ["bodies.link1.mass: expression 'heavy': unknown name 'heavy'"],
    ),
    "--set an unknown key": (BASE, ["--set", "solver.step=0.01"], ["solver.step: unknown key"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_scenario_gives_a_clear_error(case, tmp_path, capsys):
    text, extra, fragments = CASES[case]
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    code = main(["check", str(path), *extra])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert "Traceback" not in out + err
    assert err.startswith(f"rbcosim check: error: {path}: "), err
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in {err!r}"
    assert len(err.strip().splitlines()) == 1, err


def test_base_scenario_is_valid(tmp_path, capsys):
    path = tmp_path / "good.toml"
    path.write_text(BASE, encoding="utf-8")
    assert main(["check", str(path)]) == 0, capsys.readouterr()


def test_missing_file(tmp_path, capsys):
    path = tmp_path / "nowhere.toml"
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}: no such scenario file" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["run", "x.toml", "--integrator", "euler"],
        ["run", "x.toml", "--dt", "fast"],
        ["launch", "x.toml"],
    ],
    ids=["no scenario", "bad --integrator", "non-numeric --dt", "unknown command"],
)
def test_command_line_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "usage: rbcosim" in err and "Traceback" not in err
