"""Vectorised decoding of ``geometry_msgs/msg/WrenchStamped`` CDR payloads.

Decoding four million wrenches one message at a time with a generic deserialiser
costs tens of seconds; the layout of ``WrenchStamped`` is fixed except for the
``frame_id`` string, so a batch of payloads is decoded with a few numpy gathers (the layout
is :mod:`wrench_distribution.core.codec`'s, which also decodes one live payload for the
analyzer). Payloads that are not little-endian plain CDR fall back to the typestore.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from wrench_distribution.core.codec import (CDR_LE, ns_from_parts, WRENCH_STAMPED_MIN_SIZE,
                                            wrench_values_offset)

from .errors import BagError


def _decode_group(buf: np.ndarray, topic: str) -> tuple[np.ndarray, np.ndarray]:
    """Decode payloads of equal size stacked as rows of ``buf`` (k, size) uint8."""
    k, size = buf.shape
    sec = buf[:, 4:8].copy().view('<i4')[:, 0].astype(np.int64)
    nsec = buf[:, 8:12].copy().view('<u4')[:, 0].astype(np.int64)
    strlen = buf[:, 12:16].copy().view('<u4')[:, 0].astype(np.int64)
    offset = wrench_values_offset(strlen)
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


def rows_at(data: np.ndarray, starts: np.ndarray, size: int) -> np.ndarray:
    """Return the ``size`` bytes at each of ``starts`` as rows (k, size) of a new array.

    Rows of a strided view of the buffer are copied row by row, several times faster than
    an element-wise fancy index.

    :param data: flat uint8 buffer; every ``start + size`` must lie within it.
    :param starts: (k,) offsets.
    :param size: bytes per row.
    """
    if len(data) < size:
        return np.zeros((len(starts), size), np.uint8)
    windows = np.lib.stride_tricks.as_strided(data, shape=(len(data) - size + 1, size),
                                              strides=(data.strides[0], data.strides[0]),
                                              writeable=False)
    return windows[starts]


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
    fast[enough] = ((data[starts[enough]] == CDR_LE[0])
                    & (data[starts[enough] + 1] == CDR_LE[1]))
    if np.any(sizes[fast] < WRENCH_STAMPED_MIN_SIZE):
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
            rows = rows_at(data, starts, size0)
        return _decode_group(rows, topic)
    for size in np.unique(sizes[fast]):
        rows = np.flatnonzero(fast & (sizes == size))
        stamps[rows], wrenches[rows] = _decode_group(rows_at(data, starts[rows], int(size)),
                                                     topic)
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
        if raw[start:start + 2] != CDR_LE or size < WRENCH_STAMPED_MIN_SIZE:
            out.append(fallback(raw[start:start + size]))
            continue
        strlen = int.from_bytes(raw[start + 12:start + 16], 'little')
        out.append(raw[start + 16:start + 16 + max(strlen - 1, 0)].decode('utf-8', 'replace'))
    return out


def decode_pose_arrays(data: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                       fallback: Callable[[bytes], tuple[int, str, list]]) -> list:
    """Decode CDR ``geometry_msgs/msg/PoseArray`` payloads lying in one buffer.

    Payloads of one size that are little-endian plain CDR are decoded together with numpy;
    the others (and a group whose layout does not add up) by ``fallback``.

    :param fallback: gives ``(stamp_ns, frame_id, [[x, y, z, qx, qy, qz, qw], ...])`` of a
        payload.
    :return: ``(stamp_ns, frame_id, poses (m, 7) array)`` per payload, in input order.
    """
    out: list = [None] * len(starts)
    for size in np.unique(sizes):
        rows = np.flatnonzero(sizes == size)
        decoded = _pose_group(rows_at(data, starts[rows], int(size))) if size >= 24 else None
        for n, j in enumerate(rows.tolist()):
            if decoded is None or decoded[3][n]:
                raw = data[starts[j]:starts[j] + sizes[j]].tobytes()
                stamp, frame, poses = fallback(raw)
                out[j] = (stamp, frame, np.asarray(poses, float).reshape(-1, 7))
            else:
                out[j] = (int(decoded[0][n]), decoded[1][n], decoded[2][n])
    return out


def _pose_group(buf: np.ndarray) -> Optional[tuple]:
    """Decode PoseArray payloads of one size (rows of ``buf``); None if they are not uniform.

    :return: ``(stamp_ns (k,), frame ids, poses (k, m, 7), needs_fallback (k,) bool)``.
    """
    k, size = buf.shape
    sec = buf[:, 4:8].copy().view('<i4')[:, 0].astype(np.int64)
    nsec = buf[:, 8:12].copy().view('<u4')[:, 0].astype(np.int64)
    strlen = buf[:, 12:16].copy().view('<u4')[:, 0].astype(np.int64)
    if np.any(strlen != strlen[0]) or 16 + int(strlen[0]) + 4 > size:
        return None
    length = int(strlen[0])
    count_at = 4 + ((12 + length + 3) // 4) * 4  # the sequence length aligns to 4
    count = buf[:, count_at:count_at + 4].copy().view('<u4')[:, 0].astype(np.int64)
    first = 4 + ((count_at - 4 + 4 + 7) // 8) * 8  # the doubles align to 8
    m = int(count[0])
    if np.any(count != m) or first + 56 * m != size:
        return None
    poses = buf[:, first:].copy().view('<f8').reshape(k, m, 7)
    frames = [bytes(r[16:16 + max(length - 1, 0)]).decode('utf-8', 'replace') for r in buf]
    fallback = (buf[:, 0] != CDR_LE[0]) | (buf[:, 1] != CDR_LE[1])
    return ns_from_parts(sec, nsec), frames, poses, fallback
