"""A misspelled key or table name is reported as an unknown key naming the typo, with the
closest valid name, before any "missing (required)" error it causes."""

from __future__ import annotations

from rbcosim.cli.main import main


def _run(capsys, *argv) -> tuple[int, str]:
    code = main(["check", *argv])
    return code, capsys.readouterr().err.strip()


def test_a_misspelled_body_key_is_named_not_the_required_one(scenarios_dir, tmp_path, capsys):
    text = (scenarios_dir / "double_pendulum.toml").read_text()
    path = tmp_path / "dp.toml"
    path.write_text(text.replace("mass = 1.0", "masss = 1.0", 1))
    code, err = _run(capsys, str(path))
    assert code == 1
    assert err == (f"rbcosim check: error: {path}: bodies.rod1.masss: unknown key "
                   "(did you mean 'mass'?)")


def test_a_misspelled_table_in_set_is_named_with_the_close_name(scenarios_dir, capsys):
    path = str(scenarios_dir / "double_pendulum.toml")
    code, err = _run(capsys, path, "--set", "bodies.rdo1.mass=2")
    assert code == 1 and "missing (required)" not in err
    assert f"{path}: --set bodies.rdo1.mass: unknown key 'rdo1' in bodies (did you mean 'rod1'?)" in err


def test_a_misspelled_force_key_is_named(tmp_path, capsys):
    spring = ('\n[forces.k1]\ntype = "spring_damper"\nbody1 = "ground"\npoint1 = [0.3, 0.0, 0.0]'
              '\nbody2 = "rod2"\nstifness = 10.0\nfree_length = 0.05\n')
    from pathlib import Path

    text = (Path(__file__).parents[1] / "scenarios" / "double_pendulum.toml").read_text()
    path = tmp_path / "f.toml"
    path.write_text(text + spring)
    code, err = _run(capsys, str(path))
    assert code == 1 and err.endswith("forces.k1.stifness: unknown key (did you mean 'stiffness'?)")


def test_a_misspelled_force_table_in_set_is_named(tmp_path, capsys):
    spring = ('\n[forces.spring]\ntype = "spring_damper"\nbody1 = "ground"\n'
              'point1 = [0.3, 0.0, 0.0]\nbody2 = "rod2"\nstiffness = 10.0\nfree_length = 0.05\n')
    from pathlib import Path

    text = (Path(__file__).parents[1] / "scenarios" / "double_pendulum.toml").read_text()
    path = tmp_path / "f.toml"
    path.write_text(text + spring)
    code, err = _run(capsys, str(path), "--set", "forces.sprnig.stiffness=20")
    assert code == 1
    assert "--set forces.sprnig.stiffness: unknown key 'sprnig' in forces (did you mean 'spring'?)" in err


def test_a_missing_key_is_not_blamed_on_its_numbered_sibling(scenarios_dir, tmp_path, capsys):
    """A joint without body1 has body2, which is not a typo of body1: still 'missing'."""
    text = (scenarios_dir / "double_pendulum.toml").read_text()
    path = tmp_path / "j.toml"
    path.write_text(text.replace('body1 = "ground"\n', "", 1))
    code, err = _run(capsys, str(path))
    assert code == 1 and err.endswith("joints.shoulder.body1: missing (required)"), err
