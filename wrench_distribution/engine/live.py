"""The analysis engine's live path: one F/T message at a time, samples waiting for tf (no ROS).

:class:`LiveQueue` takes the synchroniser's complete samples in order and analyses each as
soon as its poses (contacts, sensors, the object's orientation) are known at its stamp; while
live tf data that covers the stamp may still come, it waits (at most the engine's
``wait_ns``). Drops are reported as :class:`Drop` with their counter, level and concern, so
a node only counts and publishes what it is given.
"""
from collections import deque
from dataclasses import dataclass, field
import math
from typing import Any

import numpy as np

from .drops import Drop
from .results import ChunkResult

#: the quantities of a sample that must be finite for it to be published
_CHECKED = ('manipulating', 'constraint', 'resultant', 'internal_load')


@dataclass
class Sample:
    """One analysed sample (live path).

    :param stamp_ns: the sample's stamp (the newest reading's header stamp).
    :param result: the outputs, one row.
    :param contact_wrenches: (n, 6) the readings in the contact frames.
    :param distributor: the solver that analysed it.
    :param friction: the friction check of its contact wrenches (friction configured), or None.
    """

    stamp_ns: int
    result: ChunkResult
    contact_wrenches: np.ndarray
    distributor: Any
    friction: Any = None


@dataclass
class Step:
    """What one message produced: analysed samples and drops."""

    samples: list = field(default_factory=list)
    drops: list = field(default_factory=list)


class LiveQueue:
    """The samples the live path has synchronised and not yet analysed, in order.

    :param engine: the analysis engine (its pose sources, limits and analysis).
    """

    def __init__(self, engine) -> None:
        self.engine = engine
        self.pending: deque = deque()

    def offer(self, i: int, stamp_ns: int, wrench, recv_ns: int, frame_id: str = '') -> Step:
        """Take one F/T reading.

        :param i: effector index.
        :param stamp_ns: its header stamp.
        :param wrench: the reading (6,), sensor frame.
        :param recv_ns: receive time (node clock; 0 when the clock has not started).
        :param frame_id: its header frame id (checked against :attr:`ft_frames`).
        :return: the samples analysed and the drops caused by this reading.
        """
        engine = self.engine
        step = Step()
        drop = engine.drops.reading(i, stamp_ns, recv_ns, frame_id)
        if drop is not None:
            step.drops.append(drop)
            return step
        hi, readings = engine.sync.offer(i, stamp_ns, wrench, recv_ns if recv_ns > 0 else stamp_ns)
        if engine.sync.events:
            step.drops += [self.sync_drop(*event) for event in engine.sync.events]
        if hi is not None:
            self.pending.append((hi, readings))
        self.drain(recv_ns, step)
        return step

    def sync_drop(self, i: int, cause: str, detail: int) -> Drop:
        """Return the drop of one synchroniser event (cause, detail: skew or age in ns)."""
        names = self.engine.names
        if cause == 'rejected_nan':
            return Drop(i, 'nan', f"F/T reading of '{names[i]}' contains NaN or Inf; dropped")
        if cause == 'stale':
            return Drop(-1, 'stale', f'F/T sample is stale: {detail * 1e-9:.3f} s old > max_age; '
                        'dropped')
        if detail:
            return Drop(i, 'unsynchronised', f'F/T streams out of sync: skew {detail * 1e-6:.1f} '
                        f"ms > sync_tolerance; dropped the reading of '{names[i]}'",
                        counter='skew_drops')
        return Drop(i, 'unsynchronised', f"F/T reading of '{names[i]}' replaced before the "
                    'other streams delivered theirs (streams at different rates?)')

    def drain(self, now_ns: int, step: Step) -> Step:
        """Analyse the waiting samples in order, as far as their poses are known.

        :param now_ns: node clock now (how long to wait for tf data).
        :param step: where the samples and drops go.
        :return: ``step``.
        """
        engine = self.engine
        while self.pending:
            hi, readings = self.pending[0]
            drop = engine.drops.sample(hi)
            if drop is not None:
                self.pending.popleft()
                step.drops.append(drop)
                continue
            stamp = np.array([hi], np.int64)
            poses, sensors, valid = engine.poses_at(stamp)
            gravity, gravity_valid = engine.gravity_model.at(stamp)
            if not (valid[0] and gravity_valid[0]) and self.may_come(hi, now_ns):
                return step
            self.pending.popleft()
            if not valid[0]:
                step.drops.append(Drop(-1, 'no_contacts', f'no analysis: {engine.no_pose_at(hi, 1)}'))
                continue
            if not gravity_valid[0]:
                step.drops.append(Drop(-1, 'no_orientation',
                                       f'no analysis: {engine.no_orientation_at(hi, 1)}; dropped'))
                continue
            part = engine.analyze_run(readings[None], poses[0], None if sensors is None
                                      else sensors[0], gravity, stamp)
            if part is None:
                step.drops.append(Drop(-1, 'no_contacts', f'no analysis: {engine.contact_problem}'))
                continue
            self._publishable(engine.sample(hi, part), step)
        return step

    @staticmethod
    def _publishable(sample: Sample, step: Step) -> None:
        """Add a sample, or its drop when the solver gave NaN or Inf (nothing NaN is published)."""
        values = sample.result.values
        # NaN and Inf carry into a sum, so one finite total means every value is finite
        # (a total beyond 1.8e308 is refused as well: no wrench is that large)
        total = sum([float(np.add.reduce(values[q], None)) for q in _CHECKED])
        if math.isfinite(total):
            step.samples.append(sample)
        else:
            step.drops.append(Drop(-1, 'solver_nan', 'analysis returned NaN or Inf; no output'))

    def may_come(self, stamp_ns: int, now_ns: int) -> bool:
        """Whether to keep waiting for poses at ``stamp_ns`` (live tf data still arriving)."""
        engine = self.engine
        sources = [engine.poses, engine.gravity_model] + (
            [engine.sensor_poses] if engine.sensor_poses is not None else [])
        if not any(s.waiting(stamp_ns) for s in sources):
            return False
        # without a clock (sim time before /clock), the newest sample's stamp bounds the wait
        ref = now_ns if now_ns > 0 else self.pending[-1][0]
        return ref - stamp_ns <= engine.wait_ns
