"""Vectorised decoding of ``geometry_msgs/msg/WrenchStamped`` CDR payloads.

Decoding four million wrenches one message at a time with a generic deserialiser
costs tens of seconds; the layout of ``WrenchStamped`` is fixed except for the
``frame_id`` string, so a batch of payloads is decoded with a few numpy gathers.
Payloads that are not little-endian plain CDR fall back to the typestore.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from wrench_distribution.core.codec import ns_from_parts

from .errors import BagError

#: encapsulation header of little-endian plain CDR (ROS 2 default)
_CDR_LE = b'\x00\x01'
#: smallest possible payload: header 4 + stamp 8 + strlen 4 + NUL 1 + pad + 6 doubles
_MIN_SIZE = 4 + 8 + 4 + 1 + 3 + 48


def _decode_group(buf: np.ndarray, topic: str) -> tuple[np.ndarray, np.ndarray]:
    """Decode payloads of equal size stacked as rows of ``buf`` (k, size) uint8."""
    k, size = buf.shape
    sec = buf[:, 4:8].copy().view('<i4')[:, 0].astype(np.int64)
    nsec = buf[:, 8:12].copy().view('<u4')[:, 0].astype(np.int64)
    strlen = buf[:, 12:16].copy().view('<u4')[:, 0].astype(np.int64)
    # doubles align to 8 bytes counted from the end of the 4-byte encapsulation header;
    # an empty frame_id is a length of 1 (its NUL) or, from some writers, of 0
    offset = 4 + ((12 + strlen + 7) // 8) * 8
    if np.any(offset + 48 != size):
        raise BagError(
            f'corrupt message on {topic}: payload size does not match a WrenchStamped')
    if np.all(offset == offset[0]):
        o = int(offset[0])
        wrench = buf[:, o:o + 48].copy().view('<f8')
    else:
        idx = offset[:, None] + np.arange(48)[None, :]
        wrench = np.take_along_axis(buf, idx, axis=1).copy().view('<f8')
    return ns_from_parts(sec, nsec), wrench.astype(np.float64, copy=False)


def decode_wrench_buffer(
    data: np.ndarray, starts: np.ndarray, sizes: np.ndarray, topic: str,
    fallback: Callable[[bytes], tuple[int, Sequence[float]]],
) -> tuple[np.ndarray, np.ndarray]:
    """Decode CDR ``WrenchStamped`` payloads lying in one buffer.

    :param data: flat uint8 buffer.
    :param starts: (k,) offset of each payload in ``data``.
    :param sizes: (k,) size of each payload.
    :param topic: topic name, used in error messages.
    :param fallback: decodes one payload the slow way (stamp in ns, 6 numbers); used
        for payloads that are not little-endian plain CDR.
    :returns: ``(stamp_ns (k,) int64, wrench (k, 6) float64)`` in input order.
    :raises BagError: on a truncated or malformed payload.
    """
    k = len(starts)
    stamps = np.empty(k, dtype=np.int64)
    wrenches = np.empty((k, 6), dtype=np.float64)
    if k == 0:
        return stamps, wrenches
    fast = np.zeros(k, dtype=bool)
    enough = sizes >= 2
    fast[enough] = ((data[starts[enough]] == _CDR_LE[0])
                    & (data[starts[enough] + 1] == _CDR_LE[1]))
    if np.any(sizes[fast] < _MIN_SIZE):
        raise BagError(f'corrupt message on {topic}: payload too short for a WrenchStamped')
    size0 = int(sizes[0])
    if fast.all() and np.all(sizes == size0):  # the common case
        step = np.diff(starts)
        if np.all(step == size0) and int(starts[0]) + k * size0 <= len(data):
            rows = data[int(starts[0]):int(starts[0]) + k * size0].reshape(k, size0)
        elif np.all(step == step[0]) and len(step) and step[0] > size0:
            rows = np.lib.stride_tricks.as_strided(  # evenly spaced records: a strided view
                data[int(starts[0]):], shape=(k, size0), strides=(int(step[0]), 1))
        else:
            rows = data[starts[:, None] + np.arange(size0)[None, :]]
        return _decode_group(rows, topic)
    for size in np.unique(sizes[fast]):
        rows = np.flatnonzero(fast & (sizes == size))
        buf = data[starts[rows, None] + np.arange(int(size))[None, :]]
        stamps[rows], wrenches[rows] = _decode_group(buf, topic)
    for i in np.flatnonzero(~fast):
        stamp, wrench = fallback(data[starts[i]:starts[i] + sizes[i]].tobytes())
        stamps[i] = stamp
        wrenches[i] = wrench
    return stamps, wrenches


def decode_wrench_stamped(
    payloads: Sequence[bytes],
    topic: str,
    fallback: Callable[[bytes], tuple[int, Sequence[float]]],
) -> tuple[np.ndarray, np.ndarray]:
    """Decode CDR ``WrenchStamped`` payloads given one by one (see :func:`decode_wrench_buffer`).

    :param payloads: serialized messages in bag order.
    :param topic: topic name, used in error messages.
    :param fallback: decodes one payload the slow way.
    :returns: ``(stamp_ns (k,) int64, wrench (k, 6) float64)`` in input order.
    """
    sizes = np.fromiter(map(len, payloads), dtype=np.int64, count=len(payloads))
    starts = np.zeros(len(payloads), np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    data = np.frombuffer(b''.join(payloads), dtype=np.uint8)
    return decode_wrench_buffer(data, starts, sizes, topic, fallback)


def frame_ids(data: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
              fallback: Callable[[bytes], str]) -> list[str]:
    """Return the ``header.frame_id`` of each CDR ``WrenchStamped`` payload in ``data``.

    :param data: flat uint8 buffer; ``starts`` and ``sizes`` locate the payloads.
    :param fallback: gives the frame id of a payload that is not little-endian plain CDR.
    :return: one frame id per payload (a zero-length string is ``''``).
    """
    out = []
    raw = data.tobytes() if len(starts) else b''
    for start, size in zip(starts.tolist(), sizes.tolist()):
        if raw[start:start + 2] != _CDR_LE or size < _MIN_SIZE:
            out.append(fallback(raw[start:start + size]))
            continue
        strlen = int.from_bytes(raw[start + 12:start + 16], 'little')
        out.append(raw[start + 16:start + 16 + max(strlen - 1, 0)].decode('utf-8', 'replace'))
    return out
