"""The protocol document and schema agree with the code, and a client written only from the
document completes a run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from service_helpers import (
    TOY_TWO_POINTS,
    message,
    running_server,
    spring_inputs,
    toy_service,
)

from rbcosim import PROTOCOL_VERSION
from rbcosim.service import ERROR_CODES, MESSAGE_TYPES
from rbcosim.service.wire import Limits, encode, unpack_header

pytestmark = pytest.mark.protocol

INTERFACES = Path(__file__).resolve().parents[1] / "interfaces"
DOC = INTERFACES / "PROTOCOL.md"
SCHEMA = INTERFACES / "protocol.schema.json"
MINIMAL = INTERFACES / "examples" / "minimal_client.py"


def test_document_quotes_the_code_version():
    text = DOC.read_text(encoding="utf-8")
    title = re.search(r"^# .*version (\d+\.\d+)$", text, re.MULTILINE)
    assert title and title.group(1) == PROTOCOL_VERSION
    assert f"**Protocol version: `{PROTOCOL_VERSION}`**" in text
    assert (
        re.search(r'^PROTOCOL_VERSION = "(.*)"$', MINIMAL.read_text(), re.MULTILINE).group(1)
        == PROTOCOL_VERSION
    )
    assert json.loads(SCHEMA.read_text())["x-protocol-version"] == PROTOCOL_VERSION


def test_document_covers_every_message_type_and_error_code():
    text = DOC.read_text(encoding="utf-8")
    headings = set(re.findall(r"^### (.+)$", text, re.MULTILINE))
    documented = {name.strip() for h in headings for name in h.split("/")}
    assert set(MESSAGE_TYPES) <= documented
    table = set(
        re.findall(
            r"^\| `([a-z_]+)` \|",
            text.split("## 8. Error codes")[1].split("## 9.")[0],
            re.MULTILINE,
        )
    )
    assert table == set(ERROR_CODES)


def test_schema_enums_match_the_code():
    schema = json.loads(SCHEMA.read_text())
    assert schema["$defs"]["msg_type"]["enum"] == list(MESSAGE_TYPES)
    assert schema["$defs"]["error_code"]["enum"] == list(ERROR_CODES)
    for t in MESSAGE_TYPES:
        assert f"request_{t}" in schema["$defs"] and f"reply_{t}" in schema["$defs"]


def test_real_messages_validate_against_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    svc = toy_service()

    def wire(msg: dict) -> dict:
        return unpack_header(encode(msg)[0], Limits())

    def call(msg: dict) -> dict:
        validator.validate(wire(msg))
        replies = svc.handle(msg)
        for _, reply in replies:
            validator.validate(wire(reply))
        return replies[-1][1]

    sid = call(message("create_session", text=TOY_TWO_POINTS, overrides={"toy.mass": "2.0"}))[
        "content"
    ]["session"]
    cid = call(message("attach", sid, points=["a", "b"], joints=["a", "b"], name="t"))["content"][
        "client"
    ]
    wrench, flex = spring_inputs(np.zeros((2, 13)), 0)
    assert (
        call(message("step", sid, client=cid, step=0, wrench=wrench, flex_kinematics=flex))[
            "status"
        ]
        == "ok"
    )
    assert (
        call(message("step", sid, client=cid, step=0, wrench=wrench, flex_kinematics=flex))[
            "status"
        ]
        == "error"
    )
    blob = call(message("get_state", sid))["content"]["state"]
    for msg in [
        message("hello", client_name="x"),
        message("set_state", sid, state=blob, step=1),
        message("save", sid, name="n"),
        message("restore", sid, name="n"),
        message("outputs", sid),
        message("results", sid),
        message("heartbeat", sid, client=cid),
        message("heartbeat"),
        message("detach", sid, client=cid),
        message("close", sid),
    ]:
        assert call(msg)["status"] == "ok", msg["msg_type"]
    bad = call(message("outputs", sid))
    assert bad["status"] == "error"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**wire(bad), "error": {"code": "not_a_code", "message": ""}})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(wire(message("step", sid, client=cid)))


def test_minimal_client_from_the_document_completes_a_run(tmp_path):
    source = MINIMAL.read_text()
    assert not re.search(r"^\s*(import|from)\s+rbcosim", source, re.MULTILINE)
    scenario = tmp_path / "toy.toml"
    scenario.write_text(TOY_TWO_POINTS)
    with running_server(bind=f"ipc://{tmp_path}/rb.sock") as server:
        proc = subprocess.run(  # noqa: PLW1510 - the return code is asserted
            [
                sys.executable,
                str(MINIMAL),
                server.address,
                "--text-file",
                str(scenario),
                "--steps",
                "50",
                "--set",
                "toy.mass=3.0",
                "--timeout",
                "30",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[-1].split()[:2] == ["done", "50"]
        proc = subprocess.run(  # noqa: PLW1510 - the return code is asserted
            [
                sys.executable,
                str(MINIMAL),
                server.address,
                "--scenario",
                str(scenario),
                "--steps",
                "5",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        proc = subprocess.run(  # noqa: PLW1510 - the return code is asserted
            [
                sys.executable,
                str(MINIMAL),
                server.address,
                "--scenario",
                str(tmp_path / "missing.toml"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 1 and "scenario_error" in proc.stderr


def _doc_section(text: str, msg_type: str) -> str:
    """The text of the ``### msg_type`` section (``save / restore`` holds both)."""
    for part in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        heading = part.splitlines()[0]
        if msg_type in {h.strip() for h in heading.split("/")}:
            return part
    raise AssertionError(f"no section for {msg_type}")


def test_every_schema_field_is_documented_and_every_sent_field_is_in_the_schema():
    """Document and schema are checked against each other and against what the server sends:
    a field in the schema appears in backticks in its message's section, and every content
    key of a real reply is a property of that reply's schema."""
    text = DOC.read_text(encoding="utf-8")
    defs = json.loads(SCHEMA.read_text())["$defs"]
    for t in MESSAGE_TYPES:
        section = _doc_section(text, t)
        for kind in ("request", "reply"):
            for key in defs[f"{kind}_{t}"].get("properties", {}):
                assert f"`{key}`" in section, f"{kind} field {key!r} of {t} is not documented"
    for key in defs["coupling"]["properties"]:
        assert f"`{key}`" in _doc_section(text, "attach"), key
    svc = toy_service()
    sent: dict[str, set] = {}

    def call(msg: dict) -> dict:
        for _, reply in svc.handle(msg):
            if reply["status"] == "ok":
                sent.setdefault(reply["msg_type"][: -len("_reply")], set()).update(
                    reply["content"])
        return reply

    sid = call(message("create_session", text=TOY_TWO_POINTS))["content"]["session"]
    cid = call(message("attach", sid, points=["a", "b"], joints=["a", "b"]))["content"]["client"]
    wrench, flex = spring_inputs(np.zeros((2, 13)), 0)
    call(message("step", sid, client=cid, step=0, wrench=wrench, flex_kinematics=flex))
    blob = call(message("get_state", sid))["content"]["state"]
    for msg in (message("hello"), message("set_state", sid, state=blob, step=1),
                message("save", sid), message("restore", sid), message("outputs", sid),
                message("results", sid), message("heartbeat", sid, client=cid),
                message("detach", sid, client=cid), message("close", sid)):
        call(msg)
    for t, keys in sent.items():
        unknown = keys - set(defs[f"reply_{t}"].get("properties", {}))
        assert not unknown, f"{t}_reply sends {sorted(unknown)}, which the schema does not list"
