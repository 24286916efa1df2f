"""`wire.encode` joins msgpack pieces packed once (MessageEncoder); its frames must be the bytes
msgpack gives for the whole map with every array as a descriptor, built here by hand."""

import msgpack
import numpy as np
import pytest

from rbcosim.service.wire import MessageEncoder, encode


def _descriptor(array, buffers):
    array = np.ascontiguousarray(array, dtype="<f8")
    if buffers is None:
        return {"dtype": "<f8", "shape": list(array.shape), "data": array.tobytes()}
    buffers.append(array.tobytes())
    return {"dtype": "<f8", "shape": list(array.shape), "frame": len(buffers) - 1}


def _plain(value, buffers):
    if isinstance(value, np.ndarray):
        return _descriptor(value, buffers)
    if isinstance(value, dict):
        return {k: _plain(v, buffers) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, buffers) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _expected(message, use_frames):
    buffers = [] if use_frames else None
    header = {k: v for k, v in message.items() if k != "buffers"}
    header["content"] = _plain(message.get("content", {}), buffers)
    return [msgpack.packb(header, use_bin_type=True), *(buffers or [])]


MESSAGES = [
    {"version": "1.3", "msg_id": "r-7", "msg_type": "step_reply", "session": "s-1",
     "parent_id": "py1-2-3", "status": "ok",
     "content": {"step": 3, "time": 7.5e-4, "kinematics": np.arange(26.0).reshape(2, 13),
                 "gaps": np.empty((0, 4)), "motions": np.ones((2, 38))[:, ::2]}},
    {"version": "1.3", "msg_id": "r-8", "msg_type": "bogus_reply", "session": None,
     "parent_id": 12, "status": "error", "content": {},
     "error": {"code": "unknown_msg_type", "message": "unknown msg_type 'bogus'"}},
    {"version": "1.2", "msg_id": 5, "msg_type": "step", "session": "s-2",
     "content": {"client": "c-1", "nested": {"a": np.ones(3), "b": [np.zeros((2, 2)), 1, None,
                                                                    True, np.float64(2.5)]},
                 "big": np.full((100, 100), -0.5), "ints": np.arange(3)},
     "buffers": [b"dropped"]},
    {"version": "1.3", "msg_id": "q", "msg_type": "hello"},
]


@pytest.mark.parametrize("use_frames", [False, True])
@pytest.mark.parametrize("message", MESSAGES, ids=["step", "error", "nested", "no-content"])
def test_frames_are_msgpack_of_the_whole_map(message, use_frames):
    expected = _expected(message, use_frames)
    for _ in range(2):  # the second time from the kept pieces
        assert [bytes(f) for f in encode(message, use_frames)] == expected


def test_kept_pieces_stay_bounded():
    encoder = MessageEncoder()
    for k in range(3 * MessageEncoder._KEPT):
        message = {"version": "1.3", "msg_id": k, "msg_type": f"t{k}_reply", "session": f"s-{k}",
                   "content": {f"key{k}": np.zeros((1, k % 7))}}
        assert encoder.encode(message) == _expected(message, False)
        assert len(encoder._pieces) <= MessageEncoder._KEPT
