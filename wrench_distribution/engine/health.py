"""Sensor health for the analysis engine: which sensors to doubt, live and offline (no ROS).

:class:`HealthMonitor` puts together the per-sensor checks (:mod:`.sensor_health`: frozen,
out of range, spikes) and the set's consistency with the object's wrench
(:mod:`.set_health`: a drift named, or the set inconsistent). The analysis engine feeds it
what it has for each run of samples (:meth:`HealthMonitor.observe`: raw readings, the
corrected contact wrenches, the contact poses and gravity); a node reads its state after each
sample (:attr:`HealthMonitor.trusted`, :attr:`HealthMonitor.consistent`), a bag tool the
per-sample doubt (:class:`HealthStep`) and the :meth:`HealthMonitor.report`. Thresholds and
what the set can tell: docs/theory.md, section 15.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import List, Optional, Sequence

import numpy as np

from wrench_distribution.config.settings import HealthSettings
from wrench_distribution.core.codec import ns_to_seconds
from wrench_distribution.core.object_motion import at_rest, object_wrench
from .poses import sensor_models_at
from .sensor_health import CHECKS, SensorChecks
from .set_health import SetConsistency
from .status import ERROR, OK, WARN

#: episodes a monitor keeps (a sensor that clips at every cycle of a load begins many)
EVENTS_KEPT = 1000
#: the level of each finding while it lasts
LEVELS = {'frozen': ERROR, 'out_of_range': ERROR, 'spike': WARN, 'drift': ERROR}


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
    """

    def __init__(self, names: Sequence[str], sensors: Sequence, rigid: Sequence[bool],
                 com: Sequence[float], mass: float, settings: HealthSettings) -> None:
        self.names = list(names)
        self.n = len(self.names)
        self.sensors = list(sensors)
        self.rigid = np.asarray(rigid, bool)
        self.com = np.asarray(com, float)
        self.mass = float(mass or 0.0)
        self.settings = settings
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
        self._geometry_key: Optional[bytes] = None  # the contacts the set check was built for
        self._weight_key: Optional[bytes] = None
        self._weight_row = np.zeros((1, 6))
        self._all_consistent = np.ones(1, bool)  # one sample's answer when the set is not checked

    @classmethod
    def for_config(cls, config, consistency: Optional[str] = None) -> 'HealthMonitor':
        """Build the monitor of an ``AnalyzerConfig`` (its ``settings.health``).

        :param config: the configuration.
        :param consistency: what the set is checked against (one of
            :data:`~wrench_distribution.config.settings.CONSISTENCY_MODES`), None: as configured.
        :return: the monitor.
        """
        settings = config.settings.health
        if consistency is not None:
            settings = replace(settings, consistency=consistency)
        model = config.object_model
        return cls(config.effectors, config.sensors, [t == 'rigid' for t in config.contact_types],
                   model.com, model.mass or 0.0, settings)

    @property
    def trusted(self) -> np.ndarray:
        """(n,) the sensors not in doubt after the latest sample (own checks, no drift named)."""
        return ~(self.checks.in_doubt() | self.set.suspects())

    @property
    def consistent(self) -> bool:
        """Whether the set agrees with the object's wrench (True when it is not checked)."""
        return self.set.consistent

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
        step = self.checks.update(stamps_ns, readings)
        events = [HealthEvent(check, self.names[e.sensor], e.onset_ns, e.detected_ns)
                  for check, e in step.events]
        doubt, consistent = step.doubt, self._all_consistent
        if expected is None and self.wrench_source is not None:
            expected = self.wrench_source(np.asarray(stamps_ns, np.int64))
        if contact is not None and pose is not None and (
                expected is not None or self.settings.consistency == 'rest'):
            if expected is None and self.mass > 0 and gravity is not None:
                expected = self._weight(gravity, len(stamps_ns))
            self._geometry(pose, sensor_pose)
            learner, first = self.checks.learner, self.checks.count - len(stamps_ns)
            begun, consistent, suspects = self.set.update(
                stamps_ns, contact, expected, lambda row: learner.noise_at(first + row),
                step.by_check if step.any_doubt else None)
            if self.set.any_suspect or len(stamps_ns) > 1:
                doubt = doubt | suspects
            events += self._set_events(begun)
        elif len(stamps_ns) != 1:
            consistent = np.ones(len(stamps_ns), bool)
        if events:
            events.sort(key=lambda e: e.detected_ns)  # in time, as reading by reading (stable)
            self.events += events
        if self.keep_samples:
            self._kept.append((np.asarray(stamps_ns, np.int64), doubt, consistent))
        return HealthStep(doubt, consistent, events)

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
        self._geometry_key = key
        gains = np.stack([s.affine(np.zeros(3))[0] for s in sensor_models_at(self.sensors, sensor_pose)])
        self.set.set_geometry(pose[:, :3], pose[:, 3:], self.com, self.rigid, gains,
                              point_torques=self.settings.point_torques)

    def _set_events(self, begun: list) -> List[HealthEvent]:
        """Return the set's episodes as events (the set inconsistent, a drift named)."""
        return [HealthEvent(kind, self.names[e.sensor] if kind == 'drift' else '', e.onset_ns,
                            e.detected_ns, self.describe(finding)) for kind, e, finding in begun]

    def describe(self, finding) -> str:
        """Say what an inconsistent block means, naming the sensor where one explains it."""
        figures = ', '.join(f'{x:.3g}' for x in finding.excess)
        if finding.named is not None:
            name = self.names[finding.named]
            if finding.cause == 'drift':
                axes = f" ({'/'.join(finding.axes)})" if finding.axes else ''
                return f'{name} drifts{axes}: it alone explains the resultant (excess {figures})'
            return f'{name} ({finding.cause}) explains the resultant (excess {figures})'
        who = ', '.join(self.names[i] for i in finding.candidates) or 'no single sensor'
        return f'inconsistent set, not isolated (could be: {who}; excess {figures})'

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
        """Return the state of every check, JSON-ready (times in seconds of the stamps, None: never).

        :return: ``{'sensors': {name: {check: {...}, 'level', 'noise'}}, 'set': {...},
            'events': [...]}``.
        """
        def seconds(ns) -> Optional[float]:
            return None if ns < 0 else ns_to_seconds(int(ns))
        latest = self.checks.count - 1
        sensors = {}
        sources = [(c, self.checks.episodes[c], latest) for c in CHECKS] + [
            ('drift', self.set.drift, self.set.blocks - 1)]
        for i, name in enumerate(self.names):
            entry = {check: {'in_doubt': bool(e.in_doubt(last)[i]), 'episodes': int(e.count[i]),
                             'flagged': int(e.flagged[i]),
                             'first_onset_s': seconds(e.first_onset_ns[i]),
                             'onset_s': seconds(e.onset_ns[i]), 'last_s': seconds(e.last_ns[i])}
                     for check, e, last in sources}
            entry['level'] = int(self.levels()[i])
            noise = self.checks.learner.noise[i]
            entry['noise'] = None if np.isnan(noise).any() else [float(x) for x in noise]
            sensors[name] = entry
        episodes = self.set.inconsistent
        latest_finding = self.set.latest
        return {'sensors': sensors,
                'set': {'checked': self.set.model is not None, 'consistent': self.consistent,
                        'blocks': self.set.blocks, 'episodes': int(episodes.count[0]),
                        'inconsistent_blocks': int(episodes.flagged[0]),
                        'first_onset_s': seconds(episodes.first_onset_ns[0]),
                        'latest': None if latest_finding is None else self.describe(latest_finding)},
                'events': [{'check': e.check, 'sensor': e.sensor, 'onset_s': seconds(e.onset_ns),
                            'detected_s': seconds(e.detected_ns), 'detail': e.detail}
                           for e in self.events]}
