"""The framed binary protocol between the auditor and an isolated worker: no pickle.

This module imports only the standard library and numpy, and nothing of ``audit``: the worker
(:mod:`audit.adapters.isolation.worker`), which runs in an environment without the auditor,
loads it by file path, and the auditor's side (:mod:`audit.adapters.isolation.client`) imports
it as usual, so both ends share one definition of a frame.

A frame is::

    8 bytes   magic b"MAUDIT01" (protocol version 1)
    4 bytes   header length H, big-endian unsigned
    8 bytes   payload length P, big-endian unsigned
    H bytes   header: a JSON object, UTF-8 ({"op": ..., "shape": [...], "seed": ...})
    P bytes   payload: raw little-endian float64 values, C order (datasets in, releases out)

The operations, in order: the worker sends ``ready`` (its Python and numpy versions) once it
has imported the library-side module; the auditor sends ``init`` (the target's parameters as
JSON) and the worker answers ``ok`` (with what the library states, e.g. its privacy cost) or
``error``; then any number of ``call`` (a stack of datasets (m, n, d), NaN = missing, and a
seed) answered by ``out`` (the releases, (m,) or (m, dim)) or ``error``; ``exit`` ends the
worker. An ``error`` header carries ``message``: the library's exception as one line.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time

import numpy as np

__all__ = ["MAGIC", "PROTOCOL_VERSION", "MAX_HEADER", "FrameError", "FrameTimeout", "encode",
           "array_of", "write_frame", "FrameReader"]

PROTOCOL_VERSION = 1
MAGIC = b"MAUDIT01"
_PREFIX = struct.Struct(">8sIQ")
#: the largest header accepted (a header is a few hundred bytes; more is not a frame)
MAX_HEADER = 1 << 20
#: the largest payload accepted (16 GiB of float64 values)
MAX_PAYLOAD = 1 << 34


class FrameError(RuntimeError):
    """The other end sent bytes that are not a frame, or closed the pipe mid-frame."""


class FrameTimeout(FrameError):
    """No complete frame arrived before the deadline."""


def encode(header: dict, array: np.ndarray | None = None) -> bytes:
    """One frame: ``header`` (JSON-serialisable) and, if given, ``array`` as float64 values
    (its shape is put in the header as ``shape``)."""
    header = dict(header)
    payload = b""
    if array is not None:
        values = np.ascontiguousarray(array, dtype="<f8")
        header["shape"] = list(values.shape)
        payload = values.tobytes()
    text = json.dumps(header, allow_nan=False).encode("utf-8")
    if len(text) > MAX_HEADER:
        raise FrameError(f"frame header too long ({len(text)} bytes > {MAX_HEADER})")
    return _PREFIX.pack(MAGIC, len(text), len(payload)) + text + payload


def array_of(header: dict, payload: bytes) -> np.ndarray:
    """The float64 array a frame carries, of the shape its header states (a writable copy)."""
    shape = header.get("shape")
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise FrameError(f"frame header has no valid shape: {header!r}")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count * 8 != len(payload):
        raise FrameError(f"frame payload of {len(payload)} bytes does not hold shape {shape} "
                         "of float64 values")
    return np.frombuffer(payload, dtype="<f8").reshape(shape).astype(np.float64)


def write_frame(fd: int, header: dict, array: np.ndarray | None = None) -> None:
    """Write one frame to the file descriptor ``fd`` (every byte, or ``OSError``)."""
    view = memoryview(encode(header, array))
    while view:
        view = view[os.write(fd, view):]


class FrameReader:
    """Reads whole frames from the file descriptor ``fd``, each within a deadline.

    Reading is done with ``select`` and ``os.read``, so a peer that hangs is a
    :class:`FrameTimeout`, never a blocked process; a peer that exits is a :class:`FrameError`
    (end of file).
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()

    def _fill(self, size: int, deadline: float | None) -> bytes:
        while len(self._buffer) < size:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise FrameTimeout("no answer before the deadline")
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                continue
            chunk = os.read(self.fd, max(size - len(self._buffer), 1 << 16))
            if not chunk:
                raise FrameError("the pipe was closed" + (" mid-frame" if self._buffer else ""))
            self._buffer += chunk
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        return out

    def read(self, timeout: float | None = None) -> tuple[dict, bytes]:
        """The next frame's header and payload; ``timeout`` seconds at most (None: no limit).

        Raises
        ------
        FrameTimeout
            Nothing complete arrived in time.
        FrameError
            End of file, or bytes that are not a frame (a library printing to the pipe).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        magic, h, p = _PREFIX.unpack(self._fill(_PREFIX.size, deadline))
        if magic != MAGIC or h > MAX_HEADER or p > MAX_PAYLOAD:
            raise FrameError(f"received bytes that are not a frame (starting {magic!r})")
        try:
            header = json.loads(self._fill(h, deadline).decode("utf-8"))
        except ValueError as exc:
            raise FrameError(f"frame header is not JSON ({exc})") from None
        if not isinstance(header, dict) or not isinstance(header.get("op"), str):
            raise FrameError(f"frame header has no 'op': {header!r}")
        return header, self._fill(p, deadline)
