"""Record the conformance transcript of an rbcosim client: a real server (inproc: no direct endpoint), requests packed by
Python's msgpack in the key order the C client documents (interfaces/c/rbcosim_client.h).

    PYTHONPATH=src python interfaces/conformance/make_transcripts.py [OUT_DIR]

Writes into OUT_DIR (default: this folder):

- ``exchange.txt``: one line per message, ``> CONN HEX`` for a request, ``< CONN HEX`` for
  its reply: CONN is the connection (1: the driving client, 2: a second client that moves the
  session ahead so that the first one's next step is stale), HEX the header frame's bytes
  (the empty delimiter frame is not written; arrays are inline, so there are no other frames).
- ``exchange.json``: the same exchange decoded (bins as hex, arrays as float lists), and
  ``expect``: the inputs the client is given and the values its API must return.
- ``exchange.expect``: ``expect`` as lines a C program reads without a JSON parser:
  ``num KEY N V1 ... VN`` (floats written with Python's repr, exact through strtod) or
  ``str KEY HEX`` (UTF-8 bytes as hex).

The server runs in this process with the toy rigid side (tests/toy_side.py); its reply
ids, session and client ids vary per run, but the transcript holds the bytes it sent, and a
replay answers with exactly those.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgpack
import numpy as np
import zmq

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # the toy rigid side
from service_helpers import running_server, toy_service  # noqa: E402

VERSION = "1.3"  # the protocol version the C client speaks (RBC_PROTOCOL_VERSION)
HERE = Path(__file__).resolve().parent

SCENARIO = """[toy]
points = ["tip"]
macro_step = 0.01
substeps = 4
mass = 1.0
inertia = 0.1
"""


def descriptor(values, shape) -> dict:
    a = np.ascontiguousarray(np.asarray(values, dtype="<f8").reshape(shape))
    return {"dtype": "<f8", "shape": list(shape), "data": a.tobytes()}


def values_of(d: dict) -> list[float]:
    return np.frombuffer(d["data"], dtype="<f8").tolist()


def plain(value):
    """A decoded header as JSON: bins as hex, array descriptors as float lists."""
    if isinstance(value, dict):
        if value.get("dtype") == "<f8" and "data" in value:
            return {"shape": value["shape"], "values": values_of(value)}
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return {"bin": value.hex()}
    return value


class Recorder:
    """Two DEALER connections to one server; every request and reply written down."""

    def __init__(self, address: str, context: zmq.Context | None = None) -> None:
        self._own_context = context is None
        self.context = context or zmq.Context()
        self.sockets = {}
        self.ids = {}
        for conn in (1, 2):
            s = self.context.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(address)
            self.sockets[conn] = s
            self.ids[conn] = 0
        self.lines: list[str] = []
        self.messages: list[dict] = []

    def close(self) -> None:
        for s in self.sockets.values():
            s.close(0)
        if self._own_context:
            self.context.term()

    def request(self, conn: int, call: str, msg_type: str, session, content: dict,
                error: bool = False) -> dict:
        """Send one request (keys: version, msg_id, msg_type, session, content) and return
        the decoded reply; its status must be "error" if `error`, else "ok"."""
        self.ids[conn] += 1
        header = {
            "version": VERSION,
            "msg_id": self.ids[conn],
            "msg_type": msg_type,
            "session": session,
            "content": content,
        }
        data = msgpack.packb(header, use_bin_type=True)
        sock = self.sockets[conn]
        sock.send_multipart([b"", data])
        if not sock.poll(10000):
            raise RuntimeError(f"no reply to {msg_type}")
        frames = sock.recv_multipart()
        assert frames[0] == b"" and len(frames) == 2, frames
        reply = msgpack.unpackb(frames[1], raw=False)
        assert reply["parent_id"] == header["msg_id"], reply
        self.lines.append(f"> {conn} {data.hex()}")
        self.lines.append(f"< {conn} {frames[1].hex()}")
        self.messages.append(
            {"conn": conn, "call": call, "request": plain(header), "reply": plain(reply)}
        )
        if reply["status"] != ("error" if error else "ok"):
            raise RuntimeError(f"{msg_type} ({call}) was answered {reply['status']!r}: "
                               f"{reply.get('error')}")
        return reply


def spring(kinematics: list[float], k: int) -> list[float]:
    """A deterministic flexible-side wrench from the rigid point's kinematics."""
    x = kinematics
    return [-40.0 * x[0] + 0.5 * k, -40.0 * x[1], -40.0 * x[2] + 3.0, -0.5 * x[10], 0.25, 0.0]


def flex_of(kinematics: list[float], k: int) -> list[float]:
    """The flexible node's kinematics: the rigid point's, shifted a little in x."""
    flex = list(kinematics)
    flex[0] += 1e-4 * (k + 1)
    return flex


def record_exchange(address: str, context: zmq.Context | None = None
                    ) -> tuple[Recorder, dict]:
    r = Recorder(address, context)
    expect: dict = {"scenario_text": SCENARIO, "client_name": "conformance"}

    def take(prefix: str, content: dict, gaps: bool = True) -> None:
        expect[f"{prefix}.step"] = [content["step"]]
        expect[f"{prefix}.time"] = [content["time"]]
        expect[f"{prefix}.kinematics"] = values_of(content["kinematics"])
        expect[f"{prefix}.motions"] = values_of(content["motions"])
        if gaps:
            expect[f"{prefix}.gaps"] = values_of(content["gaps"])

    def error_of(prefix: str, reply: dict) -> None:
        expect[f"{prefix}.code"] = reply["error"]["code"]
        expect[f"{prefix}.message"] = reply["error"]["message"]

    c = r.request(
        1, "rbc_hello", "hello", None, {"protocol_version": VERSION, "client_name": "conformance"}
    )["content"]
    expect["hello.protocol_version"] = c["protocol_version"]

    overrides = {"toy.mass": "2.0"}
    expect["create.override_keys"] = "toy.mass"
    expect["create.override_values"] = "2.0"
    expect["create.barrier_timeout"] = [5.0]
    c = r.request(
        1,
        "rbc_create_session",
        "create_session",
        None,
        {"text": SCENARIO, "overrides": overrides, "barrier_timeout": 5.0},
    )["content"]
    session = c["session"]
    expect["session"] = session

    c = r.request(
        1,
        "rbc_attach",
        "attach",
        session,
        {
            "points": ["tip"],
            "joints": ["tip"],
            "name": "conformance",
            "force": False,
            "motions": True,
        },
    )["content"]
    client = c["client"]
    expect["client"] = client
    take("attach", c, gaps=False)
    coupling = c.get("coupling") or {}
    expect["coupling.scheme"] = coupling.get("scheme", "")
    for key in ("extrapolation", "micro_steps", "macro_step", "t_end", "n_steps", "output_every"):
        expect[f"coupling.{key}"] = [coupling.get(key, 0)]
    expect["coupling.added_mass"] = [1 if coupling.get("added_mass") else 0]

    mass = (np.eye(6) * 0.5 + 0.01).reshape(-1).tolist()
    expect["added_mass"] = mass
    error_of(
        "added_mass",
        r.request(
            1,
            "rbc_set_added_mass",
            "set_added_mass",
            session,
            {"client": client, "added_mass": descriptor(mass, (1, 6, 6))},
            error=True,
        ),
    )

    kin = expect["attach.kinematics"]
    expect["report.wrench"] = spring(kin, 0)
    expect["report.flex"] = flex_of(kin, 0)
    c = r.request(
        1,
        "rbc_report",
        "report",
        session,
        {
            "client": client,
            "step": 0,
            "flex_kinematics": descriptor(expect["report.flex"], (1, 13)),
            "wrench": descriptor(expect["report.wrench"], (1, 6)),
        },
    )["content"]
    take("report", c)

    kin = expect["report.kinematics"]
    expect["step0.wrench"] = spring(kin, 1) + [0.5, -0.5, 0.0, 0.0, 0.0, 0.125]  # 2 terms
    expect["step0.flex"] = flex_of(kin, 1)
    c = r.request(
        1,
        "rbc_step",
        "step",
        session,
        {
            "client": client,
            "step": 0,
            "flex_kinematics": descriptor(expect["step0.flex"], (1, 13)),
            "wrench_polynomial": descriptor(expect["step0.wrench"], (1, 2, 6)),
        },
    )["content"]
    take("step0", c)

    kin = expect["step0.kinematics"]
    expect["step1.wrench"] = spring(kin, 2)
    expect["step1.flex"] = flex_of(kin, 2)
    c = r.request(
        1,
        "rbc_step_send+rbc_step_wait",
        "step",
        session,
        {
            "client": client,
            "step": 1,
            "flex_kinematics": descriptor(expect["step1.flex"], (1, 13)),
            "wrench": descriptor(expect["step1.wrench"], (1, 6)),
            "flex_kinematics_at": "end",
        },
    )["content"]
    take("step1", c)

    c = r.request(1, "rbc_save", "save", session, {"name": "snap"})["content"]
    expect["save.step"] = [c["step"]]

    # A second client joins and moves the session to step 5: the first one's step 2 is stale.
    c = r.request(2, "rbc_join_session", "heartbeat", session, {})["content"]
    expect["join.step"] = [c["step"]]
    c = r.request(2, "rbc_get_state", "get_state", session, {})["content"]
    state = c["state"]
    expect["state"] = state.hex()
    expect["state.step"] = [c["step"]]
    expect["state.time"] = [c["time"]]
    expect["set_state.step"] = [5]
    c = r.request(2, "rbc_set_state", "set_state", session, {"state": state, "step": 5})["content"]
    expect["set_state.reply_step"] = [c["step"]]

    kin = expect["step1.kinematics"]
    expect["stale.wrench"] = spring(kin, 3)
    expect["stale.flex"] = flex_of(kin, 3)
    stale_content = {
        "client": client,
        "step": 2,
        "flex_kinematics": descriptor(expect["stale.flex"], (1, 13)),
        "wrench": descriptor(expect["stale.wrench"], (1, 6)),
    }
    error_of("stale", r.request(1, "rbc_step", "step", session, stale_content, error=True))

    c = r.request(1, "rbc_get_state", "get_state", session, {})["content"]
    expect["get_state.step"] = [c["step"]]
    expect["get_state.time"] = [c["time"]]
    c = r.request(1, "rbc_restore", "restore", session, {"name": "snap"})["content"]
    expect["restore.step"] = [c["step"]]
    expect["restore.time"] = [c["time"]]

    stale_content = dict(stale_content, step=2)
    c = r.request(1, "rbc_step", "step", session, stale_content)["content"]
    take("step2", c)

    c = r.request(1, "rbc_heartbeat", "heartbeat", session, {"client": client})["content"]
    expect["heartbeat.step"] = [c["step"]]
    r.request(1, "rbc_detach", "detach", session, {"client": client})
    c = r.request(1, "rbc_close_session", "close", session, {})["content"]
    expect["close.step"] = [c["step"]]
    return r, expect


def expect_lines(expect: dict) -> list[str]:
    lines = []
    for key, value in expect.items():
        if isinstance(value, str):
            lines.append(f"str {key} {value.encode().hex()}")
        else:
            lines.append(f"num {key} {len(value)} " + " ".join(repr(float(v)) for v in value))
    return lines


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else HERE
    out.mkdir(parents=True, exist_ok=True)
    # An inproc server offers no direct endpoint (PROTOCOL.md §1a): the whole exchange stays on
    # one connection, so that a replay needs one fake server only.
    context = zmq.Context()
    with running_server(toy_service(), bind="inproc://rbcosim-conformance",
                        context=context) as server:
        recorder, expect = record_exchange(server.address, context)
        recorder.close()
    context.term()
    (out / "exchange.txt").write_text("\n".join(recorder.lines) + "\n")
    (out / "exchange.expect").write_text("\n".join(expect_lines(expect)) + "\n")
    doc = {
        "protocol_version": VERSION,
        "connections": {"1": "the client under test", "2": "a second client of the session"},
        "messages": recorder.messages,
        "expect": expect,
    }
    (out / "exchange.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(recorder.lines)} messages to {out / 'exchange.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
