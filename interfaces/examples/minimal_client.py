#!/usr/bin/env python3
"""A minimal flexible-side client of the rbcosim protocol, written from interfaces/PROTOCOL.md.

It uses only pyzmq and msgpack (plus the standard library): no rbcosim import. Its "flexible
body" is a spring-damper tying each interface point to where the point started; its node moves
with the point, so it reports the point's own kinematics for the continuity check.

    python minimal_client.py tcp://127.0.0.1:5555 --scenario scenarios/rigid_flex_pendulum.toml --steps 100
    python minimal_client.py ipc:///tmp/rb.sock --text-file my_scenario.toml --set coupling.macro_step=0.002

Prints one line per 10 % of the run and a final ``done STEPS TIME`` line; exit code 0 on
success, 1 on an error reply (printed with its code), 2 on no reply.
"""

import argparse
import struct
import sys

import msgpack
import zmq

PROTOCOL_VERSION = "1.3"
STIFFNESS = 50.0  # N/m and N·m/rad of the stand-in flexible body
DAMPING = 2.0  # N·s/m and N·m·s/rad


class ErrorReply(Exception):
    pass


class Connection:
    """One DEALER socket; one request at a time; replies matched by parent_id."""

    def __init__(self, address, timeout_s):
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(address)
        self.timeout_ms = int(timeout_s * 1000)
        self.next_id = 0
        self.session = None

    def request(self, msg_type, content):
        self.next_id += 1
        msg_id = str(self.next_id)
        header = {
            "version": PROTOCOL_VERSION,
            "msg_id": msg_id,
            "msg_type": msg_type,
            "session": self.session,
            "content": content,
        }
        # Frame 0: the empty delimiter; frame 1: the msgpack header (section 1).
        self.sock.send_multipart([b"", msgpack.packb(header, use_bin_type=True)])
        while True:
            if not self.sock.poll(self.timeout_ms):
                raise TimeoutError(f"no reply to {msg_type} within {self.timeout_ms} ms")
            frames = self.sock.recv_multipart()
            reply = msgpack.unpackb(frames[1], raw=False)
            if reply["parent_id"] == msg_id:
                break
        if reply["status"] != "ok":
            raise ErrorReply(f"{msg_type}: {reply['error']['code']}: {reply['error']['message']}")
        return reply["content"]


def pack_array(rows, width):
    """Rows of floats -> array descriptor, little-endian float64, inline bytes (section 4)."""
    flat = [v for row in rows for v in row]
    return {
        "dtype": "<f8",
        "shape": [len(rows), width],
        "data": struct.pack(f"<{len(flat)}d", *flat),
    }


def unpack_array(desc):
    """Array descriptor (2-D, inline) -> list of rows of floats."""
    n, width = desc["shape"]
    flat = struct.unpack(f"<{n * width}d", desc["data"])
    return [list(flat[i * width : (i + 1) * width]) for i in range(n)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--scenario", help="scenario path as the server sees it")
    source.add_argument("--text-file", help="send this TOML file's text inline")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a reply")
    args = parser.parse_args(argv)

    conn = Connection(args.address, args.timeout)
    try:
        hello = conn.request(
            "hello", {"protocol_version": PROTOCOL_VERSION, "client_name": "minimal_client"}
        )
        print(f"server {hello['server']}, protocol {hello['protocol_version']}")

        content = {"overrides": dict(item.split("=", 1) for item in args.set)}
        if args.scenario:
            content["scenario"] = args.scenario
        else:
            with open(args.text_file, encoding="utf-8") as f:
                content["text"] = f.read()
        created = conn.request("create_session", content)
        conn.session = created["session"]
        points, joints = created["points"], created["joints"]
        joint_points = created.get("joint_points", {})
        print(
            f"session {conn.session}: points {points}, joints {joints}, H = {created['macro_step']} s"
        )

        attached = conn.request(
            "attach", {"points": points, "joints": joints, "name": "minimal_client"}
        )
        client = attached["client"]
        kinematics = unpack_array(attached["kinematics"])
        anchors = [row[0:3] for row in kinematics]

        step = attached["step"]
        last = None
        for i in range(args.steps):
            wrench = []
            for row, anchor in zip(kinematics, anchors):
                force = [-STIFFNESS * (row[k] - anchor[k]) - DAMPING * row[7 + k] for k in range(3)]
                moment = [-DAMPING * row[10 + k] for k in range(3)]
                wrench.append(force + moment)
            # The node of the stand-in body moves with the point: report the point's kinematics
            # at each joint (joint_points says which point a joint couples).
            by_point = dict(zip(points, kinematics))
            flex = [by_point[joint_points.get(j, j)] for j in joints]
            request = {"client": client, "step": step, "wrench": pack_array(wrench, 6)}
            if joints:
                request["flex_kinematics"] = pack_array(flex, 13)
            last = conn.request("step", request)
            step = last["step"]
            kinematics = unpack_array(last["kinematics"])
            if args.steps >= 10 and (i + 1) % (args.steps // 10) == 0:
                gaps = unpack_array(last["gaps"]) if joints else []
                print(
                    f"step {step} t = {last['time']:.6g} s  x = {kinematics[0][0:3]}  gaps = {gaps}"
                )
        closed = conn.request("close", {})
        print(f"done {closed['step']} {closed['time']!r}")
        return 0
    except ErrorReply as exc:
        print(f"error reply: {exc}", file=sys.stderr)
        return 1
    except TimeoutError as exc:
        print(f"no reply: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
