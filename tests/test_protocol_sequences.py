"""Fuzzed message *sequences* (not single messages): thousands of seeded random sessions of
hello, create, attach, detach, step, report, added mass, state, save, restore, outputs,
results, heartbeat and close, with valid and broken arguments mixed, on the toy rigid side and
on the real one. After every request: no internal error, every reply encodes and follows the
envelope rules, and a request refused on its own leaves its session exactly as it was (step,
time, rigid state bytes, clients, barrier, snapshots) — except a step that fails numerically,
which marks the session failed, as PROTOCOL.md says."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from service_helpers import TOY_TWO_POINTS, message, toy_service

from rbcosim.service.core import Service
from rbcosim.service.errors import ERROR_CODES
from rbcosim.service.wire import encode

pytestmark = pytest.mark.protocol

TWO_MASS = Path(__file__).resolve().parents[1] / "scenarios" / "two_mass_oscillator.toml"
TOY_SEQUENCES = 4000
REAL_SEQUENCES = 150
ODD_VALUES = (None, True, -1, 0, 2**64 - 1, 1e300, float("nan"), "", "x" * 300, b"\x00",
              [], [[1.0, 2.0], [3.0]], {}, {"dtype": "<f8", "shape": [1], "data": b"12"})


class Fuzz:
    """One random session: remembers ids so that most requests are plausible."""

    def __init__(self, svc: Service, rng: random.Random, scenario: dict, motions: bool):
        self.svc, self.rng, self.scenario, self.motions = svc, rng, scenario, motions
        self.session: str | None = None
        self.points: list[str] = []
        self.joints: list[str] = []
        self.clients: dict[str, tuple[list[str], list[str]]] = {}
        self.blob: bytes | None = None
        self.n = 0
        self.requests = 0

    def odd(self):
        return self.rng.choice(ODD_VALUES)

    def array(self, shape: tuple[int, ...]):
        r = self.rng.random()
        if r < 0.85:
            return np.round(np.array([self.rng.uniform(-1, 1) for _ in range(int(np.prod(shape)))
                                      ]).reshape(shape), 3)
        if r < 0.9:
            return np.full(shape, np.nan)
        return self.odd()

    def state_blob(self):
        """A state from get_state, as it is or corrupted (bytes flipped, cut or appended)."""
        rng = self.rng
        if not self.blob or rng.random() < 0.2:
            return self.odd()
        blob = bytearray(self.blob)
        r = rng.random()
        if r < 0.3:
            for _ in range(rng.randint(1, 4)):
                blob[rng.randrange(len(blob))] ^= 1 << rng.randrange(8)
        elif r < 0.5:
            del blob[rng.randrange(len(blob)):]
        elif r < 0.6:
            blob += bytes(rng.randrange(1, 9))
        return bytes(blob)

    def request(self) -> dict:
        rng = self.rng
        kinds = ["hello", "heartbeat", "create_session"] if self.session is None else [
            "attach", "attach", "step", "step", "step", "report", "set_added_mass", "detach",
            "get_state", "set_state", "save", "restore", "outputs", "results", "heartbeat",
            "close", "create_session", "nonsense"]
        kind = rng.choice(kinds)
        if self.session is not None and not self.clients and rng.random() < 0.7:
            kind = "attach"
        elif self.clients and rng.random() < 0.4:
            kind = "step"
        content: dict = {}
        client = rng.choice(list(self.clients)) if self.clients else None
        pts, jts = self.clients.get(client, ([], []))
        if kind == "create_session":
            content = dict(self.scenario)
            if rng.random() < 0.2:
                content["overrides"] = {rng.choice(["toy.mass", "cosim.macro_step", "x.y"]):
                                        rng.choice(["-1", "0.002", "[1", "2"])}
        elif kind == "attach":
            free_p = [p for p in self.points if all(p not in c[0] for c in self.clients.values())]
            free_j = [j for j in self.joints if all(j not in c[1] for c in self.clients.values())]
            every = rng.random() < 0.7
            content = {"points": free_p if every else rng.sample(free_p, rng.randint(0, len(free_p))),
                       "joints": free_j if every else rng.sample(free_j, rng.randint(0, len(free_j))),
                       "motions": self.motions and rng.random() < 0.5}
            if rng.random() < 0.1:
                content[rng.choice(["points", "joints", "force"])] = self.odd()
        elif kind in ("step", "report"):
            step = self.svc.sessions[self.session].step if self.session in self.svc.sessions \
                else 0
            content = {"client": client, "step": step + rng.choice([0, 0, 0, 0, -1, 1])}
            if pts and (kind == "step" or rng.random() < 0.5):
                content["wrench"] = self.array((len(pts), 6))
            if jts:
                content["flex_kinematics"] = self.array((len(jts), 13))
            if rng.random() < 0.1:
                content[rng.choice(list(content) or ["client"])] = self.odd()
        elif kind == "set_added_mass":
            content = {"client": client, "added_mass": self.array((len(pts), 6, 6))}
        elif kind in ("detach", "heartbeat"):
            content = {"client": client if rng.random() < 0.9 else self.odd()}
        elif kind == "set_state":
            content = {"state": self.state_blob(), "step": rng.choice([0, 1, 5, -3, 2**60])}
        elif kind in ("save", "restore"):
            content = {"name": rng.choice(["a", "b", "default", 7])}
        self.n += 1
        return message(kind, self.session if rng.random() < 0.95 else "s-nope",
                       msg_id=f"m{self.n}", **content)

    def observe(self) -> tuple | None:
        s = self.svc.sessions.get(self.session) if self.session else None
        if s is None:
            return None
        return (s.step, s.rigid.time, bytes(s.rigid.get_state()), sorted(s.clients),
                sorted(s.pending), sorted(s.snapshots), s.failed)

    def run(self, length: int) -> None:
        for _ in range(length):
            msg = self.request()
            before = self.observe()
            replies = self.svc.handle(msg, peer=msg["msg_id"])
            self.requests += 1
            for _, reply in replies:
                encode(reply)  # every reply is sendable
                assert reply["status"] in ("ok", "error")
                assert reply["content"] is not None
                if reply["status"] == "error":
                    assert reply["error"]["code"] in ERROR_CODES
                    assert reply["error"]["code"] != "internal_error", (msg, reply)
            own = [r for p, r in replies if p == msg["msg_id"]]
            if len(replies) == 1 and own and own[0]["status"] == "error":
                if own[0]["error"]["code"] == "simulation_error":
                    # the documented exception: a failed step marks the session failed
                    assert self.observe()[-1] is not None
                else:
                    assert self.observe() == before, (msg, own[0]["error"])
            self.learn(msg, replies)

    def learn(self, msg: dict, replies) -> None:
        for _, r in replies:
            if r["status"] != "ok":
                continue
            c = r["content"]
            t = r["msg_type"]
            if t == "create_session_reply":
                self.session, self.points, self.joints = c["session"], c["points"], c["joints"]
                self.clients = {}
            elif t == "attach_reply":
                self.clients[c["client"]] = (c["points"], c["joints"])
            elif t == "detach_reply":
                self.clients.pop(c["client"], None)
            elif t == "get_state_reply":
                self.blob = c["state"]
            elif t == "close_reply":
                self.session = None


@pytest.mark.parametrize("seed_block", range(4))
def test_random_sequences_on_the_toy_side(seed_block):
    requests = 0
    for seed in range(seed_block * TOY_SEQUENCES // 4, (seed_block + 1) * TOY_SEQUENCES // 4):
        rng = random.Random(seed)
        f = Fuzz(toy_service(), rng, {"text": TOY_TWO_POINTS}, motions=True)
        f.run(rng.randint(5, 25))
        requests += f.requests
    print(f"{TOY_SEQUENCES // 4} toy sequences, {requests} requests")


def test_random_sequences_on_the_real_rigid_side():
    requests = 0
    svc = Service()
    for seed in range(REAL_SEQUENCES):
        rng = random.Random(10_000 + seed)
        f = Fuzz(svc, rng, {"scenario": str(TWO_MASS)}, motions=True)
        f.run(rng.randint(5, 20))
        requests += f.requests
        for sid in list(svc.sessions):  # keep the service small
            svc.handle(message("close", sid))
    print(f"{REAL_SEQUENCES} real-side sequences, {requests} requests")
