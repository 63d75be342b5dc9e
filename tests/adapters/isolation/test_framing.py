"""The frame format, in this process (no worker, no environment): round trips of headers and
float64 arrays, and what is not a frame."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from audit.adapters.isolation import framing
from audit.adapters.isolation.framing import FrameError, FrameReader, FrameTimeout


@pytest.fixture
def pipe():
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


@pytest.mark.parametrize("array", [
    np.array([[[1.0, np.nan], [np.inf, -0.0]]]),            # a stack (m, n, d) with NaN, inf
    np.arange(12.0).reshape(3, 4),                          # releases (m, dim)
    np.array([2.5]),                                        # one scalar release
    np.empty((0, 3, 2)),                                    # no dataset
    np.asfortranarray(np.random.default_rng(0).normal(size=(5, 7, 3))),  # any memory order
], ids=["nan-inf", "vectors", "scalar", "empty", "fortran"])
def test_an_array_comes_back_bit_for_bit(pipe, array):
    r, w = pipe
    framing.write_frame(w, {"op": "call", "seed": 2**63 - 1}, array)
    header, payload = FrameReader(r).read(timeout=5)
    assert header == {"op": "call", "seed": 2**63 - 1, "shape": list(array.shape)}
    back = framing.array_of(header, payload)
    assert back.dtype == np.float64 and back.shape == array.shape and back.flags.writeable
    assert back.tobytes() == np.ascontiguousarray(array).tobytes()


def test_frames_in_one_read_are_split_and_a_header_alone_has_no_payload(pipe):
    r, w = pipe
    os.write(w, framing.encode({"op": "ok", "info": {"v": "1"}})
             + framing.encode({"op": "out"}, np.ones(3)))
    reader = FrameReader(r)
    assert reader.read(1) == ({"op": "ok", "info": {"v": "1"}}, b"")
    header, payload = reader.read(1)
    np.testing.assert_array_equal(framing.array_of(header, payload), np.ones(3))


def test_bytes_that_are_not_a_frame_are_refused(pipe):
    r, w = pipe
    os.write(w, b"hello from a library printing to stdout\n" + b"x" * 40)
    with pytest.raises(FrameError, match="not a frame"):
        FrameReader(r).read(1)


def test_a_closed_pipe_mid_frame_and_a_silent_peer(pipe):
    r, w = pipe
    reader = FrameReader(r)
    start = time.monotonic()
    with pytest.raises(FrameTimeout):
        reader.read(timeout=0.2)
    assert 0.15 < time.monotonic() - start < 2
    os.write(w, framing.encode({"op": "out"}, np.ones(4))[:30])
    os.close(w)
    with pytest.raises(FrameError, match="closed mid-frame"):
        reader.read(1)


def test_a_payload_that_does_not_hold_its_shape_and_a_header_without_op(pipe):
    with pytest.raises(FrameError, match="does not hold shape"):
        framing.array_of({"op": "out", "shape": [3]}, b"\0" * 16)
    with pytest.raises(FrameError, match="no valid shape"):
        framing.array_of({"op": "out"}, b"")
    r, w = pipe
    text = b'{"no": "op"}'
    os.write(w, framing._PREFIX.pack(framing.MAGIC, len(text), 0) + text)
    with pytest.raises(FrameError, match="no 'op'"):
        FrameReader(r).read(1)
