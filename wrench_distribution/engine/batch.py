"""The analysis engine's offline path: chunks of a bag's F/T messages, vectorised (no ROS).

The same rules as the live path (:mod:`.live`, :mod:`.drops`), applied to many samples at
once: readings in another frame or stamped too far ahead dropped, the synchroniser's rule,
samples out of order, without poses or without the object's orientation dropped and
counted; samples sharing one contact configuration are analysed in one product. With recorded
contact weights to follow (:attr:`ChunkPath.schedule`, :mod:`.weight_schedule`), the runs are
also split where the weights in force change.
"""
from __future__ import annotations

from typing import Iterator, Optional

import numpy as np

from .results import ChunkResult, empty_shape, join, QUANTITIES
from .weight_schedule import WEIGHT_KEY, WeightSchedule


class ChunkPath:
    """Chunks of F/T messages through the analysis engine's rules (its one state: the weights it follows).

    :param engine: the analysis engine (its drop rules, synchroniser, poses and analysis).
    """

    def __init__(self, engine) -> None:
        self.engine = engine
        #: the recorded weights the read-out follows, or None (every weight 1)
        self.schedule: Optional[WeightSchedule] = None

    def follow(self, schedule: WeightSchedule) -> None:
        """Follow recorded contact weights from now on (:mod:`.weight_schedule`)."""
        self.schedule = schedule

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
        kept, bases = [], []
        for a, b in self._constant_weights(stamps_ns, _runs(poses, sensors, pose_valid, gravity_valid, in_order),
                                           in_order):
            part = self._run(stamps_ns[a:b], readings[a:b], poses[a], None if sensors is None else sensors[a],
                             pose_valid[a], gravity_valid[a], None if gravity is None else gravity[a:b])
            if part is None:
                continue
            kept.append(stamps_ns[a:b])
            if self.schedule is not None:
                self.schedule.observe(stamps_ns[a:b], part[1], engine.health)
            bases.append((list(engine.basis_names), list(engine.basis_units), self._weights()))
            for name, values in part[0].items():
                outs[name].append(values)
        return self._result(kept, outs, bases)

    def _constant_weights(self, stamps_ns: np.ndarray, runs: list, in_order: np.ndarray) -> Iterator[tuple]:
        """Yield the in-order runs, each cut where the followed weights change (applied after its yield).

        A cut only where the weights change: a message that repeats them, or that is refused,
        leaves the run whole (the same product, to the last bit, as without it).
        """
        schedule = self.schedule
        phases = None if schedule is None else schedule.phases(stamps_ns)
        for a, b in runs:
            if not in_order[a]:
                continue
            if phases is None:
                yield a, b
                continue
            schedule.reach(int(phases[a]))
            start = a
            for cut in (a + 1 + np.flatnonzero(phases[a + 1:b] != phases[a:b - 1])).tolist():
                if schedule.changes_by(int(phases[cut])):
                    yield start, cut
                    start = cut
                schedule.reach(int(phases[cut]))
            yield start, b

    def _weights(self) -> Optional[np.ndarray]:
        """Return the weights the read-out follows now, or None when it follows none."""
        return None if self.schedule is None else self.schedule.follow.weights.copy()

    def _run(self, stamps_ns: np.ndarray, readings: np.ndarray, pose: np.ndarray, sensor: Optional[np.ndarray],
             pose_valid: bool, gravity_valid: bool, gravity: Optional[np.ndarray]) -> Optional[tuple]:
        """Analyse one run of samples in order (:meth:`~.analysis.AnalysisEngine.analyze_run`), or count its drop."""
        engine = self.engine
        if not pose_valid:
            engine.no_pose_at(int(stamps_ns[0]), len(stamps_ns))
            return None
        if not gravity_valid:
            engine.no_orientation_at(int(stamps_ns[0]), len(stamps_ns))
            return None
        return engine.analyze_run(readings, pose, sensor, gravity, stamps_ns)

    def _result(self, kept: list, outs: dict, bases: list) -> ChunkResult:
        """Join the runs' outputs; following weights, in the union of the bases with the weights beside.

        :param bases: per run, its basis names, units and weights (None: not followed).
        """
        n = self.engine.n
        load = None
        if self.schedule is not None:
            load = self.schedule.widen(outs['internal_load'], [b[0] for b in bases], [b[1] for b in bases])
        m = len(self.engine.basis_names) if load is None else load.shape[1]
        values = {q.name: load if load is not None and q.name == 'internal_load'
                  else join(outs[q.name], empty_shape(q, n, m)) for q in QUANTITIES}
        if load is not None:
            values[WEIGHT_KEY] = join([np.tile(b[2], (len(k), 1)) for b, k in zip(bases, kept)], (0, n))
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
