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
from typing import Any, Optional

import numpy as np

from wrench_distribution.core.codec import same_frame
from .results import ChunkResult
from .status import ERROR, WARN

#: the quantities of a sample that must be finite for it to be published
_CHECKED = ('manipulating', 'constraint', 'resultant', 'internal_load')
#: cause of a drop -> (diagnostic level, concern, counter it also adds to, or None)
DROP_KINDS = {
    'future': (ERROR, 'input', None), 'nan': (ERROR, 'input', 'rejected_nan'),
    'malformed': (ERROR, 'input', None),
    'frame': (ERROR, 'input', None), 'unsynchronised': (WARN, 'input', None),
    'stale': (WARN, 'input', 'stale_drops'), 'out_of_order': (WARN, 'input', None),
    'no_contacts': (ERROR, 'contacts', 'no_contacts'),
    'no_orientation': (ERROR, 'sensing', 'no_orientation'),
    'solver_nan': (ERROR, 'solver', 'rejected_nan'),
}


@dataclass
class Drop:
    """One dropped reading (``effector`` >= 0) or sample (``effector`` -1).

    :param cause: ``future``, ``nan``, ``malformed``, ``frame``, ``unsynchronised``, ``stale``,
        ``out_of_order``, ``no_contacts``, ``no_orientation``, ``solver_nan``.
    :param message: what happened, user-readable.
    :param counter: the aggregate counter it adds to (None: the cause's, :data:`DROP_KINDS`).
    """

    effector: int
    cause: str
    message: str
    counter: Optional[str] = None

    def __post_init__(self) -> None:
        level, concern, counter = DROP_KINDS[self.cause]
        self.level: int = level
        self.concern: str = concern
        if self.counter is None:
            self.counter = counter


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
        engine.last_stamp_ns[i] = stamp_ns
        want = engine.ft_frames[i]
        if want and not same_frame(frame_id, want):
            engine.wrong_frame[i] += 1
            step.drops.append(Drop(i, 'frame', f"F/T reading of '{engine.names[i]}' is in frame "
                                   f"'{frame_id}', expected '{want}' (ft_frames); dropped"))
            return step
        ahead = stamp_ns - recv_ns
        if engine.future_ns and recv_ns > 0 and ahead > engine.future_ns:
            engine.future[i] += 1
            step.drops.append(Drop(i, 'future', f"F/T reading of '{engine.names[i]}' is stamped "
                                   f'{ahead * 1e-9:.3f} s ahead of the node clock '
                                   '(> max_future); dropped'))
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

    def drain(self, now_ns: int, step: Step) -> None:
        """Analyse the waiting samples in order, as far as their poses are known."""
        engine = self.engine
        while self.pending:
            hi, readings = self.pending[0]
            if engine.last_out_ns is not None and hi <= engine.last_out_ns:
                self.pending.popleft()
                engine.out_of_order += 1
                step.drops.append(Drop(-1, 'out_of_order', 'F/T sample stamped '
                                       f'{(engine.last_out_ns - hi) * 1e-9:.6f} s before (or at) '
                                       'the last published one; dropped (outputs never go '
                                       'backwards)'))
                continue
            stamp = np.array([hi], np.int64)
            poses, sensors, valid = engine.poses_at(stamp)
            gravity, gravity_valid = engine.gravity_model.at(stamp)
            if not (valid[0] and gravity_valid[0]) and self.may_come(hi, now_ns):
                return
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
                engine.no_pose += 1
                step.drops.append(Drop(-1, 'no_contacts', f'no analysis: {engine.contact_problem}'))
                continue
            engine.last_out_ns = hi
            self._publishable(engine.sample(hi, part), step)

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
