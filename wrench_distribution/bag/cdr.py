"""Vectorised decoding of ``geometry_msgs/msg/WrenchStamped`` and ``PoseArray`` CDR payloads.

Decoding four million wrenches one message at a time with a generic deserialiser
costs tens of seconds; the layout of ``WrenchStamped`` is fixed except for the
``frame_id`` string, so a batch of payloads is decoded with a few numpy gathers (the layouts
are :mod:`wrench_distribution.core.codec`'s, which also decodes one live payload for the
nodes). Payloads that are not little-endian plain CDR fall back to the typestore.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from wrench_distribution.core.codec import (CDR_LE, ns_from_parts, pose_array_offsets, POSE_SIZE,
                                            WRENCH_STAMPED_MIN_SIZE, wrench_values_offset)

from .errors import BagError


def _decode_group(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode payloads of equal size stacked as rows of ``buf`` (k, size) uint8.

    :return: ``(stamp_ns, wrench, ok)``; ``ok`` is false where the ``frame_id`` length does not
        add up to the payload's size (a corrupt message; its values are zeros).
    """
    k, size = buf.shape
    sec = buf[:, 4:8].copy().view('<i4')[:, 0].astype(np.int64)
    nsec = buf[:, 8:12].copy().view('<u4')[:, 0].astype(np.int64)
    strlen = buf[:, 12:16].copy().view('<u4')[:, 0].astype(np.int64)
    offset = wrench_values_offset(strlen)
    ok = offset + 48 == size
    if ok.all() and np.all(offset == offset[0]):
        o = int(offset[0])
        wrench = buf[:, o:o + 48].copy().view('<f8')
    else:
        offset = np.where(ok, offset, size - 48)
        idx = offset[:, None] + np.arange(48)[None, :]
        wrench = np.take_along_axis(buf, idx, axis=1).copy().view('<f8')
        wrench[~ok] = 0.0
    return ns_from_parts(sec, nsec), wrench.astype(np.float64, copy=False), ok


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
    data: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
    fallback: Callable[[bytes], tuple[int, Sequence[float]]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode CDR ``WrenchStamped`` payloads lying in one buffer.

    Little-endian plain CDR (the ROS 2 default) is decoded with numpy, big-endian CDR and
    short payloads by ``fallback``; a payload of another representation, one whose lengths do
    not add up, or one ``fallback`` refuses is corrupt: ``ok`` is false there.

    :param data: flat uint8 buffer.
    :param starts: (k,) offset of each payload in ``data``.
    :param sizes: (k,) size of each payload.
    :param fallback: decodes one payload the slow way (stamp in ns, 6 numbers), raising
        :class:`BagError` when it cannot.
    :returns: ``(stamp_ns (k,) int64, wrench (k, 6) float64, ok (k,) bool)`` in input order
        (zeros where not ok).
    """
    k = len(starts)
    stamps = np.zeros(k, dtype=np.int64)
    wrenches = np.zeros((k, 6), dtype=np.float64)
    ok = np.zeros(k, dtype=bool)
    if k == 0:
        return stamps, wrenches, ok
    head = (rows_at(data, np.minimum(starts, len(data) - 2), 2).copy() if len(data) >= 2
            else np.zeros((k, 2), np.uint8))
    head[sizes < 2] = 255  # too short to hold a representation identifier
    little = (head[:, 0] == CDR_LE[0]) & (head[:, 1] == CDR_LE[1])
    fast = little & (sizes >= WRENCH_STAMPED_MIN_SIZE)
    slow = np.flatnonzero(~fast & (head[:, 0] == 0) & (head[:, 1] <= 1))
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
        return _decode_group(rows)
    for size in np.unique(sizes[fast]):
        rows = np.flatnonzero(fast & (sizes == size))
        stamps[rows], wrenches[rows], ok[rows] = _decode_group(
            rows_at(data, starts[rows], int(size)))
    for i in slow:
        try:
            stamps[i], wrenches[i] = fallback(data[starts[i]:starts[i] + sizes[i]].tobytes())
        except BagError:
            continue
        ok[i] = True
    return stamps, wrenches, ok


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
        payload, or None when it does not decode.
    :return: ``(stamp_ns, frame_id, poses (m, 7) array)`` per payload (None where the fallback
        gave None), in input order.
    """
    out: list = [None] * len(starts)
    for size in np.unique(sizes):
        rows = np.flatnonzero(sizes == size)
        decoded = _pose_group(rows_at(data, starts[rows], int(size))) if size >= 24 else None
        for n, j in enumerate(rows.tolist()):
            if decoded is None or decoded[3][n]:
                slow = fallback(data[starts[j]:starts[j] + sizes[j]].tobytes())
                out[j] = None if slow is None else (
                    slow[0], slow[1], np.asarray(slow[2], float).reshape(-1, 7))
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
    count_at, first = pose_array_offsets(length)
    count = buf[:, count_at:count_at + 4].copy().view('<u4')[:, 0].astype(np.int64)
    m = int(count[0])
    if np.any(count != m) or first + POSE_SIZE * m != size:
        return None
    poses = buf[:, first:].copy().view('<f8').reshape(k, m, 7)
    frames = [bytes(r[16:16 + max(length - 1, 0)]).decode('utf-8', 'replace') for r in buf]
    fallback = (buf[:, 0] != CDR_LE[0]) | (buf[:, 1] != CDR_LE[1])
    return ns_from_parts(sec, nsec), frames, poses, fallback
