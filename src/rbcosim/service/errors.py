"""Protocol error codes and the exception that carries one to an error reply."""

from __future__ import annotations

#: Every error code a reply can carry, with the situation it names (documented in
#: interfaces/PROTOCOL.md, section "Error codes"; the schema lists the same set).
ERROR_CODES: dict[str, str] = {
    "bad_message": "frames that do not decode to a valid envelope (not msgpack, truncated, "
    "not a map, missing or mistyped envelope fields)",
    "message_too_large": "the message is larger than the server's max_message_size",
    "incompatible_version": "the envelope's protocol major version differs from the server's",
    "unknown_msg_type": "msg_type is not one the server knows",
    "invalid_argument": "a content field is missing, of the wrong type or out of range",
    "invalid_array": "an array has the wrong dtype, shape or byte length",
    "non_finite": "an input array holds NaN or infinity",
    "unknown_session": "no open session has this id",
    "unknown_name": "an interface point or joint name the scenario does not define",
    "unknown_client": "the client id is not attached to this session (never was, or was "
    "detached after a timeout)",
    "already_attached": "another live client is attached to this point or joint",
    "stale_step": "the step index was already taken (a duplicate or a late resend)",
    "step_out_of_order": "the step index is ahead of the session",
    "duplicate_step": "this client already sent inputs for this step; it waits at the barrier",
    "barrier_pending": "the request would change the session while a step barrier is half full",
    "incomplete_session": "points or joints lost their client after a timeout; attach a new "
    "client to them before stepping",
    "timeout": "a client attached to this session sent no inputs for the step within the "
    "barrier timeout",
    "session_closed": "the session was closed while the request waited",
    "session_failed": "the last step failed numerically; restore or set a state first",
    "too_many_sessions": "the server's session limit is reached",
    "limit_exceeded": "the request would exceed one of the server's limits (model size, steps, "
    "memory or build time of a session); the message names the limit and how to raise it",
    "resource_exhausted": "the server's host resources (file descriptors, processes) cannot "
    "take another session now; this request alone fails, try again later",
    "scenario_error": "the scenario or an override is invalid",
    "simulation_error": "the rigid solver failed during the step",
    "state_error": "a state blob, snapshot name or state file is invalid",
    "forbidden_path": "a file path outside the server's root directory",
    "io_error": "reading or writing a file failed",
    "internal_error": "a bug in the server; the server keeps running",
}


class ProtocolError(Exception):
    """A request that gets an error reply: a code from ERROR_CODES and a sentence for humans."""

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown protocol error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.envelope: dict | None = None
        """The readable envelope fields of a request refused before it was decoded."""

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
