"""The README's commands against what they describe: its test command is the line .ci/run
runs, with the two steps .ci/run adds (Debian packages, RBCOSIM_REQUIRE_NATIVE) named; its
extras paragraph names every subcommand, and only extras pyproject.toml defines."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from rbcosim.cli.main import SUBCOMMANDS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_test_command_is_the_ci_line_with_its_extra_steps_named():
    ci = (ROOT / ".ci" / "run").read_text()
    ci_line = next(line for line in ci.splitlines() if "pytest" in line)
    block = README.split("## Two commands on a fresh machine", 1)[1].split("\n## ", 1)[0]
    readme_line = next(line for line in block.splitlines() if "pytest" in line)
    assert readme_line == ci_line
    packages = re.search(r'NATIVE_PACKAGES="([^"]+)"', ci).group(1).split()
    comment = block.split("# 2.", 1)[1].split(readme_line, 1)[0]
    assert all(p in comment for p in packages), packages
    assert "RBCOSIM_REQUIRE_NATIVE=1" in comment and "export RBCOSIM_REQUIRE_NATIVE=1" in ci


def test_the_extras_paragraph_names_every_command_and_only_defined_extras():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                 ["optional-dependencies"])
    paragraph = next(p for p in README.split("\n\n") if p.startswith("Extras ("))
    named = set(re.findall(r"`(\w+)` for", paragraph))
    assert named and named <= extras, named - extras
    for command in SUBCOMMANDS:
        assert f"`{command}" in paragraph, command
