"""The analysis engine: F/T readings -> manipulating and constraint parts, live and offline.

One ROS-free object owns what turns raw sensor readings into the analyzer's outputs: the
synchroniser (:mod:`.sync`), the contact poses at each sample's stamp (:mod:`.poses`), the
sensor models and gravity, the solver cache (:mod:`.cache`) and the core's
``LoadDistributor.analyze_batch``. The analyzer node calls :meth:`AnalysisEngine.offer`
per message; ``analyze-bag`` calls :meth:`AnalysisEngine.push_chunk` per chunk of a bag. The
rules are the same, so the two give the same samples, with the same values.

Per sample, in order: a reading in another frame than its ``ft_frames`` entry is dropped
(``frame``); a reading stamped more than ``max_future`` after its receive time is dropped
(``future``); the synchroniser's rule (``unsynchronised``, ``stale``, ``nan``); a
sample stamped at or before the last analysed one is dropped (``out_of_order``); a sample
without contact (or sensor) poses at its stamp is dropped (``no_contacts``), and one
without the object's orientation in ``gravity_frame`` (:mod:`.sensing`) is dropped
(``no_orientation``), except that live, while tf data that covers the stamp may still
come, it waits (at most ``contact_timeout``, or :data:`DEFAULT_WAIT_NS` when that is 0).
Readings have ``sensor_biases`` subtracted, in the sensor frame, before anything else.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

import numpy as np

from wrench_distribution.core import spatial as Q
from wrench_distribution.core.codec import same_frame, seconds_to_ns
from .cache import DistributorCache
from .poses import PoseSource, sensor_models_at
from .results import ChunkResult, empty_shape, join, QUANTITIES
from .sensing import GravityModel, parse_biases, TareWindow
from .sync import StampSynchronizer

#: longest wait (stamp time) for tf data covering a sample when ``contact_timeout`` is 0
DEFAULT_WAIT_NS = 1_000_000_000


@dataclass
class Drop:
    """One dropped reading (``effector`` >= 0) or sample (``effector`` -1).

    :param cause: ``future``, ``nan``, ``unsynchronised``, ``stale``, ``out_of_order``,
        ``no_contacts``, ``no_orientation``.
    :param message: what happened, user-readable.
    """

    effector: int
    cause: str
    message: str


@dataclass
class Sample:
    """One analysed sample (live path).

    :param stamp_ns: the sample's stamp (the newest reading's header stamp).
    :param result: the outputs, one row.
    :param contact_wrenches: (n, 6) the readings in the contact frames.
    :param distributor: the solver that analysed it.
    """

    stamp_ns: int
    result: ChunkResult
    contact_wrenches: np.ndarray
    distributor: Any


@dataclass
class Step:
    """What one message produced: analysed samples and drops."""

    samples: list = field(default_factory=list)
    drops: list = field(default_factory=list)


class AnalysisEngine:
    """Turns F/T readings into the analyzer's outputs.

    :param config: ``AnalyzerConfig`` (:func:`wrench_distribution.config.load_analyzer_config`).
    :param poses: contact poses in the object frame.
    :param sensor_poses: sensor poses in their contact frames (tf ``sensor_frames``), or
        None for the configured sensor poses.
    :param contact_extras: extra ``Contact`` keyword arguments per effector (friction).
    :param on_rebuild: called with the solver after each rebuild.
    :param orientation: the object frame's pose in ``gravity_frame`` (one frame), required
        when ``gravity_frame`` is set to another frame than the object frame.
    :raises ValueError: when ``gravity_frame`` needs an orientation and none is given.
    """

    def __init__(self, config: Any, poses: PoseSource, sensor_poses: Optional[PoseSource] = None,
                 contact_extras: Optional[list] = None,
                 on_rebuild: Optional[Callable[[Any], None]] = None,
                 orientation: Optional[PoseSource] = None) -> None:
        cfg = config
        self.config = cfg
        self.names = list(cfg.effectors)
        self.n = len(self.names)
        self.gravity = np.asarray(cfg.gravity, float)
        if needs_orientation(cfg.params) and orientation is None:
            raise ValueError(f"gravity_frame '{cfg.params['gravity_frame']}' needs the object's "
                             'orientation in it (tf or object_pose_topic)')
        self.gravity_model = GravityModel(self.gravity, orientation)
        self.biases = parse_biases(cfg.params.get('sensor_biases'), self.n)
        self.no_orientation = 0
        #: why the last sample without an orientation had none (None after an analysed one)
        self.orientation_problem: Optional[str] = None
        #: samples recorded for a tare (:meth:`record_tare`), or None
        self.tare_window: Optional[TareWindow] = None
        #: samples recorded for a calibration (``engine/calibration.py``), or None
        self.recorder = None
        self.frame = cfg.output_frame
        self.poses = poses
        self.sensor_poses = sensor_poses
        self.cache = DistributorCache(self.names, cfg.contact_types, cfg.object_model,
                                      cfg.options, cfg.contact_pose_tolerance, contact_extras)
        self.sync = StampSynchronizer(self.n, 0)
        self.on_rebuild = on_rebuild
        self.basis_names: list = []
        self.basis_units: list = []
        self.regimes: dict = {}
        self.distributors_built = 0
        self.last_out_ns: Optional[int] = None
        self.no_pose = 0
        #: expected ``frame_id`` per F/T stream (``''``: any), from ``ft_frames``
        self.ft_frames = list(cfg.params.get('ft_frames') or [''] * self.n)
        self.future = np.zeros(self.n, np.int64)
        self.wrong_frame = np.zeros(self.n, np.int64)
        self.out_of_order = 0
        #: why the last sample without contacts had none (None after an analysed sample)
        self.contact_problem: Optional[str] = None
        self._pending: deque = deque()
        self._pose: Optional[np.ndarray] = None  # the last contact poses the cache accepted
        self._sensor_map: tuple = ()  # (gain (n, 6, 6), gravity map (n, 6, 3)), configured sensors
        self._offset: Optional[np.ndarray] = None  # B g - A b of the configured sensors
        self.set_limits(cfg.sync_tolerance, cfg.max_age, cfg.params.get('max_future', 0.0),
                        cfg.contact_timeout)

    def set_limits(self, sync_tolerance: float, max_age: float, max_future: float,
                   contact_timeout: float) -> None:
        """Apply the time limits (s; 0 disables ``max_age``, ``max_future``, the timeout).

        :param sync_tolerance: largest stamp skew inside a sample.
        :param max_age: staleness of a sample against its receive time.
        :param max_future: how far a stamp may be ahead of its receive time.
        :param contact_timeout: age limit of contact poses; also the longest tf wait.
        """
        self.sync.tolerance_ns = seconds_to_ns(sync_tolerance)
        self.sync.max_age_ns = seconds_to_ns(max_age)
        self.future_ns = seconds_to_ns(max_future)
        timeout_ns = seconds_to_ns(contact_timeout)
        self.wait_ns = timeout_ns or DEFAULT_WAIT_NS
        self.poses.set_timeout(timeout_ns)

    # -- offline: one chunk of a bag -------------------------------------------------------
    def push_chunk(self, stream: np.ndarray, recv_ns: np.ndarray, stamp_ns: np.ndarray,
                   wrench: np.ndarray, frame_ok: Optional[np.ndarray] = None) -> ChunkResult:
        """Synchronise and analyse one chunk of F/T messages (arrival order).

        :param stream: effector index per message (m,).
        :param recv_ns: receive times (m,).
        :param stamp_ns: header stamps (m,).
        :param wrench: readings (m, 6), sensor frames.
        :param frame_ok: (m,) whether each ``frame_id`` is the expected one (:attr:`ft_frames`);
            None when not checked.
        :return: the samples completed in this chunk.
        """
        stream = np.asarray(stream, np.int64)
        stamp_ns = np.asarray(stamp_ns, np.int64)
        recv_ns = np.asarray(recv_ns, np.int64)
        bad = np.zeros(len(stream), bool) if frame_ok is None else ~np.asarray(frame_ok, bool)
        self.wrong_frame += np.bincount(stream[bad], minlength=self.n)
        if self.future_ns:
            ahead = ~bad & (stamp_ns - recv_ns > self.future_ns)
            self.future += np.bincount(stream[ahead], minlength=self.n)
            bad |= ahead
        if bad.any():
            keep = ~bad
            stream, recv_ns, stamp_ns, wrench = (stream[keep], recv_ns[keep], stamp_ns[keep],
                                                 wrench[keep])
        st, readings = self.sync.push(stream, recv_ns, stamp_ns, wrench)
        return self.analyze(st, readings)

    def analyze(self, stamps_ns: np.ndarray, readings: np.ndarray) -> ChunkResult:
        """Analyse synchronised samples, dropping and counting those the live path drops.

        A sample stamped at or before the last one analysed is out of order; a sample
        without poses at its stamp is dropped (``no_pose``, :attr:`contact_problem`), one
        without the object's orientation too (``no_orientation``).

        :param stamps_ns: sample stamps (k,), in arrival order.
        :param readings: raw sensor readings (k, n, 6), sensor frame about the sensor origin.
        :return: the analysed samples.
        """
        stamps_ns = np.asarray(stamps_ns, np.int64)
        poses, sensors, pose_valid = self._poses_at(stamps_ns)
        gravity, gravity_valid = self.gravity_model.at(stamps_ns)
        valid = pose_valid & gravity_valid
        # the newest stamp analysed before each sample: only samples with poses count
        last = self.last_out_ns if self.last_out_ns is not None else np.iinfo(np.int64).min
        before = np.maximum.accumulate(np.concatenate([[last], np.where(valid, stamps_ns,
                                                                        last)[:-1]]))
        in_order = stamps_ns > before
        self.out_of_order += int(np.count_nonzero(~in_order))
        outs: dict = {q.name: [] for q in QUANTITIES}
        kept = []
        for a, b in _runs(poses, sensors, pose_valid, gravity_valid, in_order):
            if not in_order[a]:
                continue
            if not pose_valid[a]:
                self._no_pose(int(stamps_ns[a]), b - a)
                continue
            if not gravity_valid[a]:
                self._no_orientation(int(stamps_ns[a]), b - a)
                continue
            part = self._analyze_run(readings[a:b], poses[a], None if sensors is None
                                     else sensors[a], None if gravity is None else gravity[a:b],
                                     stamps_ns[a:b])
            if part is None:
                self.no_pose += b - a
                continue
            kept.append(stamps_ns[a:b])
            for name, values in part[0].items():
                outs[name].append(values)
        if kept:
            self.last_out_ns = int(kept[-1][-1])
        m = len(self.basis_names)
        values = {q.name: join(outs[q.name], empty_shape(q, self.n, m)) for q in QUANTITIES}
        return ChunkResult(stamp_ns=join(kept, (0,)).astype(np.int64), values=values)

    def _poses_at(self, stamps_ns: np.ndarray) -> tuple:
        """Contact poses (k, n, 7), sensor poses (k, n, 7) or None, validity (k,)."""
        poses, valid = self.poses.at(stamps_ns)
        sensors = None
        if self.sensor_poses is not None:
            sensors, sensor_valid = self.sensor_poses.at(stamps_ns)
            valid = valid & sensor_valid
        return poses, sensors, valid

    def _no_pose(self, stamp_ns: int, count: int) -> str:
        why = self.poses.why(stamp_ns)
        if self.sensor_poses is not None and self.poses.at(np.array([stamp_ns]))[1].all():
            why = f'sensor frames not known yet ({self.sensor_poses.why(stamp_ns)})'
        self.no_pose += count
        self.contact_problem = why
        return why

    def _no_orientation(self, stamp_ns: int, count: int) -> str:
        why = self.gravity_model.why(stamp_ns)
        self.no_orientation += count
        self.orientation_problem = why
        return why

    def _analyze_run(self, readings: np.ndarray, pose: np.ndarray,
                     sensor_pose: Optional[np.ndarray], gravity: Optional[np.ndarray],
                     stamps_ns: np.ndarray) -> Optional[tuple]:
        """Analyse samples sharing one contact configuration.

        :param gravity: (k, 3) gravity in the object frame per sample, or None (constant).
        :return: ``(values per quantity, contact wrenches (k, n, 6))``, or None when the
            poses are refused (the reason is in :attr:`contact_problem`).
        """
        if self._pose is None or not np.array_equal(pose, self._pose):  # else: nothing to check
            try:
                if self.cache.update(pose[:, :3], pose[:, 3:]):
                    self._rebuilt()
            except ValueError as err:
                self.contact_problem = f'contact poses rejected: {err}'
                return None
            self._pose = np.array(pose)
        dist = self.cache.distributor
        gain, weight = self._sensor_map if sensor_pose is None else self._sensor_affine(sensor_pose)
        # h = A (m - b) + B g_o (engine/sensing.py)
        if gravity is None and sensor_pose is None and self.tare_window is None:
            if self._offset is None:  # configured sensors, constant gravity: one offset
                self._offset = (np.einsum('nij,j->ni', weight, self.gravity)
                                - np.einsum('nij,nj->ni', gain, self.biases))
            contact = np.einsum('nij,knj->kni', gain, readings) + self._offset
        else:
            if gravity is None:
                gravity = np.broadcast_to(self.gravity, (len(readings), 3))
            unbiased = (np.einsum('nij,knj->kni', gain, readings)
                        + np.einsum('nij,kj->kni', weight, gravity))
            contact = unbiased - np.einsum('nij,nj->ni', gain, self.biases)
            if self.tare_window is not None:
                self.tare_window.add(stamps_ns, readings, gain, unbiased, gravity)
        if self.recorder is not None:
            self.recorder.add(stamps_ns, readings, pose, sensor_pose,
                              self.gravity if gravity is None else gravity)
        with np.errstate(all='ignore'):  # overflow ends as Inf, refused by the caller
            batch = dist.analyze_batch(contact)
        self.contact_problem = None
        self.orientation_problem = None
        return {q.name: getattr(batch, q.source.format(frame=self.frame))
                for q in QUANTITIES}, contact

    def _rebuilt(self) -> None:
        dist = self.cache.distributor
        self._sensor_map = self._sensor_affine(None)
        self._offset = None
        self.basis_names = list(dist.basis_names)
        self.basis_units = list(getattr(dist, 'basis_units', []))
        self.regimes[dist.regime.message] = dist.regime.name
        self.distributors_built += 1
        if self.on_rebuild is not None:
            self.on_rebuild(dist)

    def _sensor_affine(self, sensor_pose: Optional[np.ndarray]) -> tuple:
        """Return the map from readings to contact wrenches, ``h_i = A_i m_i + B_i g_o``.

        The tools' weight is linear in gravity: column ``k`` of ``B_i`` is the weight's
        wrench at the contact for ``g_o = e_k`` (rotated into each contact frame,
        ``R_i^T e_k``, with the orientations the solver was built for).

        :param sensor_pose: (n, 7) sensor poses in their contact frames, or None for the
            configured ones.
        :return: ``(A (n, 6, 6), B (n, 6, 3))``.
        """
        models = sensor_models_at(self.config.sensors, sensor_pose)
        gain = np.stack([s.affine(np.zeros(3))[0] for s in models])
        weight = np.zeros((self.n, 6, 3))
        for k, axis in enumerate(np.eye(3)):
            g_contact = Q.rotate_inverse(self.cache.quaternions, axis)
            weight[:, :, k] = [s.affine(g)[1] for s, g in zip(models, g_contact)]
        return gain, weight

    def set_biases(self, biases) -> None:
        """Use new sensor biases (the ``sensor_biases`` parameter).

        :param biases: 6 n numbers, or empty for none.
        """
        self.biases = parse_biases(biases, self.n)
        self._offset = None

    def set_sensors(self, sensors) -> None:
        """Use new sensor models (a calibration's tools and mounting rotations).

        :param sensors: one core ``SensorModel`` per effector.
        """
        self.config = replace(self.config, sensors=list(sensors))
        if self.cache.distributor is not None:
            self._sensor_map = self._sensor_affine(None)
        self._offset = None

    def record_tare(self, window: Optional[TareWindow]) -> None:
        """Record the analysed samples' readings into ``window`` (None: stop recording).

        :param window: where to record.
        """
        self.tare_window = window

    def tare(self, state: str = 'free') -> tuple:
        """Biases from the recorded window (:func:`~.sensing.tare_biases`).

        :param state: ``free`` (the object is not held: every contact wrench is zero) or
            ``held`` (held at rest by the contacts alone, without internal load: the
            contact wrenches are the distribution of the object's weight).
        :return: ``(biases (n, 6), spread (n, 6), samples used)``.
        :raises ValueError: on an empty window, a ``held`` tare without ``object_mass``
            or without a solver.
        """
        from .sensing import tare_biases
        if self.tare_window is None:
            raise ValueError('no tare window is being recorded')
        _, gains, unbiased, gravity = self.tare_window.arrays()
        expected = None
        if state == 'held':
            mass = self.config.params.get('object_mass', 0.0)
            dist = self.cache.distributor
            if not mass or dist is None:
                raise ValueError("a 'held' tare needs object_mass > 0 and known contacts")
            weight = np.concatenate([-mass * gravity, np.zeros_like(gravity)], axis=1)
            expected = dist.synthesize_batch(weight).wrench_contact
        biases, spread = tare_biases(gains, unbiased, expected)
        return biases, spread, len(unbiased)

    def prepare(self, pose: np.ndarray) -> None:
        """Build the solver for these contact poses now (static contacts fail at start-up).

        :param pose: (n, 7) contact poses in the object frame.
        :raises ValueError: when the core rejects them.
        """
        if self.cache.update(pose[:, :3], pose[:, 3:]):
            self._rebuilt()

    def adopt_options(self, options, distributor=None) -> None:
        """Use new solver options (``torque_share``), with the solver already built for them.

        :param options: the accepted ``DistributionOptions``.
        :param distributor: the solver built with them on the current poses, or None.
        """
        self.cache.adopt_options(options, distributor)
        if distributor is not None:
            self._rebuilt()

    # -- live: one message at a time ---------------------------------------------------------
    def offer(self, i: int, stamp_ns: int, wrench, recv_ns: int, frame_id: str = '') -> Step:
        """Take one F/T reading (the live path).

        :param i: effector index.
        :param stamp_ns: its header stamp.
        :param wrench: the reading (6,), sensor frame.
        :param recv_ns: receive time (node clock; 0 when the clock has not started).
        :param frame_id: its header frame id (checked against :attr:`ft_frames`).
        :return: the samples analysed and the drops caused by this reading.
        """
        step = Step()
        want = self.ft_frames[i]
        if want and not same_frame(frame_id, want):
            self.wrong_frame[i] += 1
            step.drops.append(Drop(i, 'frame', f"F/T reading of '{self.names[i]}' is in frame "
                                   f"'{frame_id}', expected '{want}' (ft_frames); dropped"))
            return step
        ahead = stamp_ns - recv_ns
        if self.future_ns and recv_ns > 0 and ahead > self.future_ns:
            self.future[i] += 1
            step.drops.append(Drop(i, 'future', f"F/T reading of '{self.names[i]}' is stamped "
                                   f'{ahead * 1e-9:.3f} s ahead of the node clock '
                                   '(> max_future); dropped'))
            return step
        hi, readings = self.sync.offer(i, stamp_ns, wrench, recv_ns if recv_ns > 0 else stamp_ns)
        step.drops += [self._sync_drop(*event) for event in self.sync.events]
        if hi is not None:
            self._pending.append((hi, readings))
        self._drain(recv_ns, step)
        return step

    def retry(self, now_ns: int) -> Step:
        """Analyse the samples waiting for tf data that has come since (call periodically).

        :param now_ns: node clock now.
        :return: the samples analysed and the drops.
        """
        step = Step()
        self._drain(now_ns, step)
        return step

    def _sync_drop(self, i: int, cause: str, detail: int) -> Drop:
        if cause == 'rejected_nan':
            return Drop(i, 'nan', f"F/T reading of '{self.names[i]}' contains NaN or Inf; dropped")
        if cause == 'stale':
            return Drop(-1, 'stale', f'F/T sample is stale: {detail * 1e-9:.3f} s old > max_age; '
                        'dropped')
        if detail:
            return Drop(i, 'unsynchronised', f'F/T streams out of sync: skew {detail * 1e-6:.1f} '
                        f"ms > sync_tolerance; dropped the reading of '{self.names[i]}'")
        return Drop(i, 'unsynchronised', f"F/T reading of '{self.names[i]}' replaced before the "
                    'other streams delivered theirs (streams at different rates?)')

    def _drain(self, now_ns: int, step: Step) -> None:
        """Analyse the waiting samples in order, as far as their poses are known."""
        while self._pending:
            hi, readings = self._pending[0]
            if self.last_out_ns is not None and hi <= self.last_out_ns:
                self._pending.popleft()
                self.out_of_order += 1
                step.drops.append(Drop(-1, 'out_of_order', 'F/T sample stamped '
                                       f'{(self.last_out_ns - hi) * 1e-9:.6f} s before (or at) '
                                       'the last published one; dropped (outputs never go '
                                       'backwards)'))
                continue
            stamp = np.array([hi], np.int64)
            poses, sensors, valid = self._poses_at(stamp)
            gravity, gravity_valid = self.gravity_model.at(stamp)
            if not (valid[0] and gravity_valid[0]) and self._may_come(hi, now_ns):
                return
            self._pending.popleft()
            if not valid[0]:
                step.drops.append(Drop(-1, 'no_contacts', f'no analysis: {self._no_pose(hi, 1)}'))
                continue
            if not gravity_valid[0]:
                step.drops.append(Drop(-1, 'no_orientation',
                                       f'no analysis: {self._no_orientation(hi, 1)}; dropped'))
                continue
            part = self._analyze_run(readings[None], poses[0], None if sensors is None
                                     else sensors[0], gravity, stamp)
            if part is None:
                self.no_pose += 1
                step.drops.append(Drop(-1, 'no_contacts', f'no analysis: {self.contact_problem}'))
                continue
            self.last_out_ns = hi
            result = ChunkResult(np.array([hi], np.int64), part[0])
            step.samples.append(Sample(hi, result, part[1][0], self.cache.distributor))

    def _may_come(self, stamp_ns: int, now_ns: int) -> bool:
        """Whether to keep waiting for poses at ``stamp_ns`` (live tf data still arriving)."""
        sources = [self.poses, self.gravity_model] + ([self.sensor_poses] if self.sensor_poses
                                                      is not None else [])
        if not any(s.waiting(stamp_ns) for s in sources):
            return False
        # without a clock (sim time before /clock), the newest sample's stamp bounds the wait
        ref = now_ns if now_ns > 0 else self._pending[-1][0]
        return ref - stamp_ns <= self.wait_ns

    def counters(self) -> Any:
        """Return what was dropped so far.

        :return: the synchroniser's counters, plus ``future`` and ``frame`` (per effector),
            ``out_of_order`` and ``no_orientation`` (samples).
        """
        from types import SimpleNamespace
        return SimpleNamespace(**vars(self.sync.counters), future=self.future,
                               frame=self.wrong_frame, out_of_order=self.out_of_order,
                               no_orientation=self.no_orientation)

    def finish(self) -> None:
        """End of the input: readings left waiting are counted as unsynchronised."""
        self.sync.finish()


def needs_orientation(params: dict) -> bool:
    """Whether ``gravity_frame`` is another frame than the object frame.

    :param params: validated analyzer parameters.
    :return: True when gravity needs the object's orientation.
    """
    frame = params.get('gravity_frame') or ''
    return bool(frame) and not same_frame(frame, params.get('object_frame', ''))


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
