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
    # doubles align to 8 bytes counted from the end of the 4-byte encapsulation header
    offset = 4 + ((12 + strlen + 7) // 8) * 8
    if np.any(offset + 48 != size) or np.any(strlen < 1):
        raise BagError(
            f'corrupt message on {topic}: payload size does not match a WrenchStamped')
    if np.all(offset == offset[0]):
        o = int(offset[0])
        wrench = buf[:, o:o + 48].copy().view('<f8')
    else:
        idx = offset[:, None] + np.arange(48)[None, :]
        wrench = np.take_along_axis(buf, idx, axis=1).copy().view('<f8')
    return ns_from_parts(sec, nsec), wrench.astype(np.float64, copy=False)


def decode_wrench_stamped(
    payloads: Sequence[bytes],
    topic: str,
    fallback: Callable[[bytes], tuple[int, Sequence[float]]],
) -> tuple[np.ndarray, np.ndarray]:
    """Decode CDR ``WrenchStamped`` payloads.

    :param payloads: serialized messages in bag order.
    :param topic: topic name, used in error messages.
    :param fallback: decodes one payload the slow way (stamp in ns, 6 numbers); used
        for payloads that are not little-endian plain CDR.
    :returns: ``(stamp_ns (k,) int64, wrench (k, 6) float64)`` in input order.
    :raises BagError: on a truncated or malformed payload.
    """
    k = len(payloads)
    stamps = np.empty(k, dtype=np.int64)
    wrenches = np.empty((k, 6), dtype=np.float64)
    if k == 0:
        return stamps, wrenches
    sizes = np.fromiter(map(len, payloads), dtype=np.int64, count=k)
    data = np.frombuffer(b''.join(payloads), dtype=np.uint8)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    fast = np.zeros(k, dtype=bool)
    enough = sizes >= 2
    fast[enough] = ((data[starts[enough]] == _CDR_LE[0])
                    & (data[starts[enough] + 1] == _CDR_LE[1]))
    if np.any(sizes[fast] < _MIN_SIZE):
        raise BagError(f'corrupt message on {topic}: payload too short for a WrenchStamped')
    if fast.all() and np.all(sizes == sizes[0]):  # the common case: no gather
        return _decode_group(data.reshape(k, int(sizes[0])), topic)
    for size in np.unique(sizes[fast]):
        rows = np.flatnonzero(fast & (sizes == size))
        buf = data[starts[rows, None] + np.arange(int(size))[None, :]]
        stamps[rows], wrenches[rows] = _decode_group(buf, topic)
    for i in np.flatnonzero(~fast):
        stamp, wrench = fallback(payloads[i])
        stamps[i] = stamp
        wrenches[i] = wrench
    return stamps, wrenches


def frame_ids(payloads: Sequence[bytes], fallback: Callable[[bytes], str]) -> list[str]:
    """Return the ``header.frame_id`` of each CDR ``WrenchStamped`` payload.

    :param payloads: serialized messages.
    :param fallback: gives the frame id of a payload that is not little-endian plain CDR.
    :return: one frame id per payload.
    """
    out = []
    for raw in payloads:
        if raw[:2] != _CDR_LE or len(raw) < _MIN_SIZE:
            out.append(fallback(raw))
            continue
        strlen = int.from_bytes(raw[12:16], 'little')
        out.append(bytes(raw[16:15 + strlen]).decode('utf-8', 'replace'))
    return out
