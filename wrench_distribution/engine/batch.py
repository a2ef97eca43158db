"""The analysis engine's offline path: chunks of a bag's F/T messages, vectorised (no ROS).

The same rules as the live path (:mod:`.live`, :mod:`.drops`), applied to many samples at
once: readings in another frame or stamped too far ahead dropped, the synchroniser's rule,
samples out of order, without poses or without the object's orientation dropped and
counted; samples sharing one contact configuration are analysed in one product.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .results import ChunkResult, empty_shape, join, QUANTITIES


class ChunkPath:
    """Chunks of F/T messages through the analysis engine's rules (it holds no state).

    :param engine: the analysis engine (its drop rules, synchroniser, poses and analysis).
    """

    def __init__(self, engine) -> None:
        self.engine = engine

    def push(self, stream: np.ndarray, recv_ns: np.ndarray, stamp_ns: np.ndarray,
             wrench: np.ndarray, frame_ok: Optional[np.ndarray] = None) -> ChunkResult:
        """Synchronise and analyse one chunk of F/T messages (arrival order).

        :param stream: effector index per message (m,).
        :param recv_ns: receive times (m,).
        :param stamp_ns: header stamps (m,).
        :param wrench: readings (m, 6), sensor frames.
        :param frame_ok: (m,) whether each ``frame_id`` is the expected one (``ft_frames``);
            None when not checked.
        :return: the samples completed in this chunk.
        """
        stream = np.asarray(stream, np.int64)
        stamp_ns = np.asarray(stamp_ns, np.int64)
        recv_ns = np.asarray(recv_ns, np.int64)
        keep = self.engine.drops.readings(stream, recv_ns, stamp_ns, frame_ok)
        if not keep.all():
            stream, recv_ns, stamp_ns, wrench = (stream[keep], recv_ns[keep], stamp_ns[keep],
                                                 wrench[keep])
        st, readings = self.engine.sync.push(stream, recv_ns, stamp_ns, wrench)
        return self.analyze(st, readings)

    def analyze(self, stamps_ns: np.ndarray, readings: np.ndarray) -> ChunkResult:
        """Analyse synchronised samples, dropping and counting those the live path drops.

        :param stamps_ns: sample stamps (k,), in arrival order.
        :param readings: raw sensor readings (k, n, 6), sensor frame about the sensor origin.
        :return: the analysed samples.
        """
        engine = self.engine
        stamps_ns = np.asarray(stamps_ns, np.int64)
        poses, sensors, pose_valid = engine.poses_at(stamps_ns)
        gravity, gravity_valid = engine.gravity_model.at(stamps_ns)
        in_order = engine.drops.in_order(stamps_ns, pose_valid & gravity_valid)
        outs: dict = {q.name: [] for q in QUANTITIES}
        kept = []
        for a, b in _runs(poses, sensors, pose_valid, gravity_valid, in_order):
            if not in_order[a]:
                continue
            if not pose_valid[a]:
                engine.no_pose_at(int(stamps_ns[a]), b - a)
                continue
            if not gravity_valid[a]:
                engine.no_orientation_at(int(stamps_ns[a]), b - a)
                continue
            part = engine.analyze_run(readings[a:b], poses[a], None if sensors is None
                                      else sensors[a], None if gravity is None else gravity[a:b],
                                      stamps_ns[a:b])
            if part is None:
                continue
            kept.append(stamps_ns[a:b])
            for name, values in part[0].items():
                outs[name].append(values)
        m = len(engine.basis_names)
        values = {q.name: join(outs[q.name], empty_shape(q, engine.n, m)) for q in QUANTITIES}
        return ChunkResult(stamp_ns=join(kept, (0,)).astype(np.int64), values=values)


def _runs(poses: np.ndarray, sensors: Optional[np.ndarray], *masks: np.ndarray) -> list:
    """``(first, stop)`` of the runs of samples with equal poses and equal masks."""
    k = len(poses)
    if not k:
        return []
    change = np.zeros(k - 1, bool)
    for mask in masks:
        change |= mask[1:] != mask[:-1]
    for p in (poses, sensors):
        if p is not None and p.strides[0]:  # a stride of 0: one pose broadcast to every sample
            change |= np.any(p[1:] != p[:-1], axis=(1, 2))
    bounds = [0] + (np.flatnonzero(change) + 1).tolist() + [k]
    return list(zip(bounds[:-1], bounds[1:]))
