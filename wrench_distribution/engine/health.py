"""Sensor health for the analysis engine: which sensors to doubt, live and offline (no ROS).

:class:`HealthMonitor` puts together the per-sensor checks (:mod:`.sensor_health`: frozen,
out of range, spikes) and the set's consistency with the object's wrench
(:mod:`.set_health`: a drift named, or the set inconsistent). The analysis engine feeds it
what it has for each run of samples (:meth:`HealthMonitor.observe`: raw readings, the
corrected contact wrenches, the contact poses and gravity); a node reads its state after each
sample (:attr:`HealthMonitor.trusted`, :attr:`HealthMonitor.consistent`), a bag tool the
per-sample doubt (:class:`HealthStep`) and the :meth:`HealthMonitor.report`. Thresholds and
what the set can tell: docs/theory.md, section 15.

Live (``deferred``), the set's block checks run off the message path: each sample's contact
wrenches are kept, and :meth:`HealthMonitor.settle` (a node's timer) checks them in one call,
with the same code and results as a chunk; the per-sensor checks run on every sample.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import List, Optional, Sequence

import numpy as np

from wrench_distribution.config.settings import HealthSettings
from wrench_distribution.core.health import CONSISTENCY_BLOCK
from wrench_distribution.core.object_motion import at_rest, object_wrench
from .health_report import describe, health_report
from .poses import sensor_models_at
from .sensor_health import CHECKS, SensorChecks
from .set_health import SetConsistency
from .status import ERROR, OK, WARN

#: episodes a monitor keeps (a sensor that clips at every cycle of a load begins many)
EVENTS_KEPT = 1000
#: the level of each finding while it lasts
LEVELS = {'frozen': ERROR, 'out_of_range': ERROR, 'spike': WARN, 'drift': ERROR}
#: live samples a deferred set check holds before it checks them on the message path anyway
PENDING_LIMIT = 4 * CONSISTENCY_BLOCK
#: how often a live node checks the kept samples against the set (:meth:`HealthMonitor.settle`)
SETTLE_PERIOD_S = 0.02


@dataclass
class HealthEvent:
    """An episode that began: a sensor's check, a drift, or the set inconsistent.

    :param check: ``frozen``, ``out_of_range``, ``spike``, ``drift`` or ``inconsistent``.
    :param sensor: the sensor's name ('' for the set).
    :param onset_ns: when it began (the check's estimate).
    :param detected_ns: stamp of the sample that raised it.
    :param detail: what the set check says (the axes, the candidates), or ''.
    """

    check: str
    sensor: str
    onset_ns: int
    detected_ns: int
    detail: str = ''


@dataclass
class HealthStep:
    """Health of k samples.

    :param doubt: (k, n) each sensor in doubt at each sample (its own checks or a drift).
    :param consistent: (k,) the set consistent at each sample (True when not checked).
    :param events: the episodes that began.
    """

    doubt: np.ndarray
    consistent: np.ndarray
    events: List[HealthEvent] = field(default_factory=list)


class HealthMonitor:
    """Sensor health of one analysis engine (module docstring).

    :param names: effector (sensor) names.
    :param sensors: the core ``SensorModel`` of each.
    :param rigid: (n,) False for point contacts.
    :param com: the object's centre of mass, object frame.
    :param mass: the object's mass (kg; 0: unknown).
    :param settings: the checks' settings.
    :param deferred: check the set in :meth:`settle`, not in :meth:`observe` (live).
    """

    def __init__(self, names: Sequence[str], sensors: Sequence, rigid: Sequence[bool],
                 com: Sequence[float], mass: float, settings: HealthSettings,
                 deferred: bool = False) -> None:
        self.names = list(names)
        self.n = len(self.names)
        self.sensors = list(sensors)
        self.rigid = np.asarray(rigid, bool)
        self.com = np.asarray(com, float)
        self.mass = float(mass or 0.0)
        self.settings = settings
        self.deferred = deferred
        self.checks = SensorChecks(self.n, np.asarray(settings.ratings, float))
        self.set = SetConsistency(self.n, settings.tolerance, CHECKS)
        #: the latest :data:`EVENTS_KEPT` episodes, oldest first (the counts are in the report)
        self.events: deque = deque(maxlen=EVENTS_KEPT)
        #: where the object's wrench comes from when it moves: a callable ``stamps_ns (k,) ->
        #: (k, 6) or None`` (e.g. :func:`~.core.object_motion.motion_from_poses` on the object's
        #: poses, then :func:`~.core.object_motion.object_wrench`); None: consistency ``rest``
        self.wrench_source = None
        #: keep each sample's health for :meth:`take` (offline; live nodes read the state)
        self.keep_samples = False
        self._kept: list = []
        self._pending: list = []  # deferred samples: (stamp, index, contact, expected, doubt)
        self._geometry_key: Optional[bytes] = None  # the contacts the set check was built for
        self._weight_key: Optional[bytes] = None
        self._weight_row = np.zeros((1, 6))
        self._all_consistent = np.ones(1, bool)  # one sample's answer when the set is not checked

    @classmethod
    def for_config(cls, config, consistency: Optional[str] = None,
                   deferred: bool = False) -> 'HealthMonitor':
        """Build the monitor of an ``AnalyzerConfig`` (its ``settings.health``).

        :param config: the configuration.
        :param consistency: what the set is checked against (one of
            :data:`~wrench_distribution.config.settings.CONSISTENCY_MODES`), None: as configured.
        :param deferred: the set checked in :meth:`settle` (a live node).
        :return: the monitor.
        """
        settings = config.settings.health
        if consistency is not None:
            settings = replace(settings, consistency=consistency)
        model = config.object_model
        return cls(config.effectors, config.sensors, [t == 'rigid' for t in config.contact_types],
                   model.com, model.mass or 0.0, settings, deferred)

    def configure(self, settings: HealthSettings) -> None:
        """Adopt new settings at runtime: another reference for the set restarts its check.

        :param settings: the new settings (their ratings are the start-up's: read-only).
        """
        self.settle()
        if (settings.consistency, settings.tolerance, settings.point_torques) != (
                self.settings.consistency, self.settings.tolerance, self.settings.point_torques):
            self.set = SetConsistency(self.n, settings.tolerance, CHECKS)
            self._geometry_key = None
        self.settings = settings

    def set_sensors(self, sensors: Sequence) -> None:
        """Use new sensor models (a calibration's): the set check is rebuilt on them."""
        self.settle()
        self.sensors = list(sensors)
        self._geometry_key = None

    @property
    def trusted(self) -> np.ndarray:
        """(n,) the sensors not in doubt after the latest sample (own checks, no drift named)."""
        return ~(self.checks.in_doubt() | self.set.suspects())

    @property
    def consistent(self) -> bool:
        """Whether the set agrees with the object's wrench (True when it is not checked)."""
        return self.set.consistent

    @property
    def clear(self) -> bool:
        """Tell whether nothing is in doubt now (every sensor trusted, the set consistent): fast."""
        return not (self.checks.any_in_doubt or self.set.any_suspect) and self.set.consistent

    def in_doubt(self) -> tuple:
        """Return what is in doubt now, and since when.

        :return: ``(((sensor index, checks '+'-joined), ...), consistent, earliest onset ns of
            the doubts, or None when nothing is in doubt)``.
        """
        if self.clear:
            return (), True, None
        latest = self.checks.count - 1
        sources = [(c, self.checks.episodes[c], latest) for c in CHECKS] + [
            ('drift', self.set.drift, self.set.blocks - 1)]
        flags = [(c, e, e.in_doubt(last)) for c, e, last in sources]
        sensors, onsets = [], []
        for i in range(self.n):
            hits = [(c, e) for c, e, doubt in flags if doubt[i]]
            if hits:
                sensors.append((i, '+'.join(c for c, _ in hits)))
                onsets += [int(e.onset_ns[i]) for _, e in hits]
        consistent = self.consistent
        if not consistent:
            onsets.append(int(self.set.inconsistent.onset_ns[0]))
        return tuple(sensors), consistent, min(onsets) if onsets else None

    def observe(self, stamps_ns: np.ndarray, readings: np.ndarray,
                contact: Optional[np.ndarray] = None, pose: Optional[np.ndarray] = None,
                sensor_pose: Optional[np.ndarray] = None, gravity: Optional[np.ndarray] = None,
                expected: Optional[np.ndarray] = None) -> HealthStep:
        """Check k samples of one contact configuration.

        :param stamps_ns: (k,) sample stamps.
        :param readings: (k, n, 6) raw readings, sensor frames.
        :param contact: (k, n, 6) the corrected contact wrenches (the set is checked with them).
        :param pose: (n, 7) contact poses in the object frame (with ``contact``).
        :param sensor_pose: (n, 7) looked-up sensor poses, or None (configured).
        :param gravity: (k, 3) or (3,) gravity in the object frame (consistency ``rest``).
        :param expected: (k, 6) the object's wrench from its motion (overrides
            :attr:`wrench_source` and ``rest``).
        :return: the samples' health.
        """
        k = len(stamps_ns)
        step = self.checks.update(stamps_ns, readings,
                                  self._pending[0][1] if self._pending else None)
        events = [HealthEvent(check, self.names[e.sensor], e.onset_ns, e.detected_ns)
                  for check, e in step.events] if step.events else []
        doubt, consistent = step.doubt, self._all_consistent
        if expected is None and self.wrench_source is not None:
            expected = self.wrench_source(np.asarray(stamps_ns, np.int64))
        if contact is not None and pose is not None and (
                expected is not None or self.settings.consistency == 'rest'):
            if expected is None and self.mass > 0 and gravity is not None:
                expected = self._weight(gravity, k)
            self._geometry(pose, sensor_pose)
            by_check = step.by_check if step.any_doubt else None
            if self.deferred and k == 1:
                self._defer(int(stamps_ns[0]), contact[0], expected, by_check)
                consistent, suspects = self.set.consistent_rows()
            else:
                learner, first = self.checks.learner, self.checks.count - k
                begun, consistent, suspects = self.set.update(
                    stamps_ns, contact, expected, lambda row: learner.noise_at(first + row), by_check)
                events += self._set_events(begun)
            if self.set.any_suspect or k > 1:
                doubt = doubt | suspects
        elif k != 1:
            consistent = np.ones(k, bool)
        self._record(events)
        if self.keep_samples:
            self._kept.append((np.asarray(stamps_ns, np.int64), doubt, consistent))
        return HealthStep(doubt, consistent, events)

    def _defer(self, stamp_ns: int, contact: np.ndarray, expected, by_check) -> None:
        """Keep one live sample for :meth:`settle` (checked at once when too many wait)."""
        self._pending.append((stamp_ns, self.checks.count - 1, contact,
                              None if expected is None else expected[-1], by_check))
        if len(self._pending) >= PENDING_LIMIT:
            self.settle()

    def settle(self) -> List[HealthEvent]:
        """Check the live samples kept since the last call against the set (deferred).

        :return: the episodes that began (also in :attr:`events`).
        """
        if not self._pending:
            return []
        pending, self._pending = self._pending, []
        stamps, indices, contact, expected, doubts = zip(*pending)
        doubt = None
        if any(d is not None for d in doubts):
            blank = np.zeros((1, self.n, len(CHECKS)), bool)
            doubt = np.concatenate([blank if d is None else d for d in doubts])
        learner = self.checks.learner
        begun, _, _ = self.set.update(
            np.array(stamps, np.int64), np.stack(contact),
            None if expected[0] is None else np.stack(expected),
            lambda row: learner.noise_at(indices[row]), doubt)
        events = self._set_events(begun)
        self._record(events)
        return events

    def _record(self, events: list) -> None:
        if events:
            events.sort(key=lambda e: e.detected_ns)  # in time, as reading by reading (stable)
            self.events += events

    def take(self) -> tuple:
        """Return the samples' health kept since the last call (:attr:`keep_samples`).

        :return: ``(stamps (k,), doubt (k, n), consistent (k,))``.
        """
        kept, self._kept = self._kept, []
        if not kept:
            return np.zeros(0, np.int64), np.zeros((0, self.n), bool), np.zeros(0, bool)
        return tuple(np.concatenate(part) for part in zip(*kept))

    def _weight(self, gravity: np.ndarray, k: int) -> np.ndarray:
        """Return the object at rest: ``[-m g; 0]`` per sample (one row when gravity is constant)."""
        gravity = np.asarray(gravity, float)
        if gravity.ndim == 1:
            key = gravity.tobytes()
            if key != self._weight_key:
                self._weight_key = key
                self._weight_row = object_wrench(self.mass, at_rest(gravity))
            return self._weight_row
        return object_wrench(self.mass, at_rest(gravity))

    def _geometry(self, pose: np.ndarray, sensor_pose: Optional[np.ndarray]) -> None:
        """Give the set check this contact configuration (rebuilt only when it changes)."""
        key = pose.tobytes() + (b'' if sensor_pose is None else sensor_pose.tobytes())
        if key == self._geometry_key:
            return
        self.settle()  # the samples kept belong to the configuration before
        self._geometry_key = key
        gains = np.stack([s.affine(np.zeros(3))[0] for s in sensor_models_at(self.sensors, sensor_pose)])
        self.set.set_geometry(pose[:, :3], pose[:, 3:], self.com, self.rigid, gains,
                              point_torques=self.settings.point_torques)

    def _set_events(self, begun: list) -> List[HealthEvent]:
        """Return the set's episodes as events (the set inconsistent, a drift named)."""
        return [HealthEvent(kind, self.names[e.sensor] if kind == 'drift' else '', e.onset_ns,
                            e.detected_ns, describe(self.names, finding)) for kind, e, finding in begun]

    def levels(self) -> np.ndarray:
        """Return each sensor's diagnostic level now (n,).

        :return: ERROR while frozen, out of range or drifting, WARN within the recovery after a
            spike, else OK.
        """
        latest = self.checks.count - 1
        out = np.full(self.n, OK)
        for check in CHECKS:
            doubt = self.checks.episodes[check].in_doubt(latest)
            out = np.where(doubt, np.maximum(out, LEVELS[check]), out)
        return np.where(self.set.suspects(), ERROR, out)

    def report(self) -> dict:
        """Return the state of every check, JSON-ready (:func:`~.health_report.health_report`)."""
        return health_report(self)
