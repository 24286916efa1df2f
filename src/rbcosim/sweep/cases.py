"""Cases of a sweep: `--set` override sets from a grid or from random samples.

A case's key is a hash of the scenario file's bytes and its overrides, so a sweep run again
recognises the cases it already finished, and a changed scenario never reuses old results.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass

import numpy as np

from rbcosim.errors import ScenarioError

_DIST = re.compile(r"^\s*(uniform|normal|loguniform)\s*\(\s*([^,()]+)\s*,\s*([^,()]+)\s*\)\s*$")


@dataclass(frozen=True)
class Case:
    """One run: its overrides (dotted key -> TOML value text) and its key (hex)."""

    key: str
    overrides: tuple[tuple[str, str], ...]

    @property
    def parameters(self) -> dict[str, str]:
        return dict(self.overrides)


def make_case(scenario_digest: str, overrides: dict[str, str]) -> Case:
    """A case from its overrides; the key hashes the scenario digest and the overrides."""
    items = tuple(sorted(overrides.items()))
    text = json.dumps([scenario_digest, items])
    return Case(hashlib.sha256(text.encode()).hexdigest()[:16], items)


def scenario_digest(data: bytes) -> str:
    """SHA-256 of the scenario file's bytes."""
    return hashlib.sha256(data).hexdigest()


def _split(spec: str, option: str) -> tuple[str, str]:
    if "=" not in spec:
        raise ScenarioError(f"{option} {spec!r}: expected KEY=VALUES, e.g. "
                            "bodies.link1.mass=1,2,3")
    key, value = (part.strip() for part in spec.split("=", 1))
    if not key or not value:
        raise ScenarioError(f"{option} {spec!r}: empty key or value")
    return key, value


def grid_cases(digest: str, grids: list[str], base: dict[str, str] | None = None) -> list[Case]:
    """The full product of `KEY=V1,V2,...` specs (each value TOML text), in spec order."""
    axes = []
    for spec in grids:
        key, values = _split(spec, "--grid")
        items = [v.strip() for v in values.split(",")]
        if not all(items):
            raise ScenarioError(f"--grid {spec!r}: empty value in the list")
        axes.append([(key, v) for v in items])
    keys = [axis[0][0] for axis in axes]
    if len(set(keys)) != len(keys):
        raise ScenarioError(f"--grid: a key is given twice: {keys}")
    return [make_case(digest, {**(base or {}), **dict(combo)})
            for combo in itertools.product(*axes)]


def sample_cases(digest: str, samples: list[str], count: int, seed: int,
                 base: dict[str, str] | None = None) -> list[Case]:
    """`count` cases with each `KEY=DIST` drawn independently (numpy PCG64 from `seed`).

    DIST is uniform(a, b), normal(mean, std) or loguniform(a, b) with 0 < a < b."""
    if count < 1:
        raise ScenarioError(f"--samples: expected a positive integer, got {count}")
    rng = np.random.default_rng(seed)
    draws = {}
    for spec in samples:
        key, dist = _split(spec, "--sample")
        match = _DIST.match(dist)
        if match is None:
            raise ScenarioError(f"--sample {spec!r}: expected uniform(a, b), normal(mean, std) "
                                "or loguniform(a, b)")
        name = match.group(1)
        try:
            a, b = float(match.group(2)), float(match.group(3))
        except ValueError:
            raise ScenarioError(f"--sample {spec!r}: the two arguments must be numbers") from None
        if name == "uniform" and not a < b:
            raise ScenarioError(f"--sample {spec!r}: uniform(a, b) needs a < b")
        if name == "normal" and not b > 0:
            raise ScenarioError(f"--sample {spec!r}: normal(mean, std) needs std > 0")
        if name == "loguniform" and not 0 < a < b:
            raise ScenarioError(f"--sample {spec!r}: loguniform(a, b) needs 0 < a < b")
        if name == "uniform":
            values = rng.uniform(a, b, count)
        elif name == "normal":
            values = rng.normal(a, b, count)
        else:
            values = np.exp(rng.uniform(np.log(a), np.log(b), count))
        draws[key] = values
    return [make_case(digest, {**(base or {}), **{k: repr(float(v[i])) for k, v in draws.items()}})
            for i in range(count)]
