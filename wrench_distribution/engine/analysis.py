"""The analysis engine: F/T readings -> manipulating and constraint parts, live and offline.

One ROS-free object owns what turns raw sensor readings into the analyzer's outputs: the
drop rules (:mod:`.drops`), the synchroniser (:mod:`.sync`), the contact poses at each
sample's stamp (:mod:`.poses`), the sensor models and gravity (:mod:`.sensor_stage`), the
solver cache (:mod:`.cache`) and the core's ``LoadDistributor.analyze_batch``. The analyzer
node calls :meth:`AnalysisEngine.offer` per message (:mod:`.live`); ``analyze-bag`` calls
:meth:`AnalysisEngine.push_chunk` per chunk of a bag (:mod:`.batch`). The rules are the same,
so the two give the same samples, with the same values. A runtime change is :meth:`plan` then
:meth:`adopt`; the diagnostics are :meth:`report`.

Per sample, in order: the drop rules of each reading (``frame``, ``future``); the
synchroniser's rule (``unsynchronised``, ``stale``, ``nan``); the order (``out_of_order``);
a sample without contact (or sensor) poses at its stamp is dropped (``no_contacts``), and one
without the object's orientation in ``gravity_frame`` (:mod:`.sensing`) is dropped
(``no_orientation``), except that live, while tf data that covers the stamp may still come,
it waits (at most ``contact_timeout``, or :data:`DEFAULT_WAIT_NS` when that is 0). Readings
have ``sensor_biases`` subtracted, in the sensor frame, before anything else.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any, Callable, Optional

import numpy as np

from wrench_distribution.config import AnalyzerConfig, Change
from wrench_distribution.core.codec import same_frame
from .batch import ChunkPath
from .cache import DistributorCache
from .drops import Drop, DropRules
from .friction import FrictionStage
from .health import HealthMonitor
from .health_report import health_diagnostics
from .live import LiveQueue, Sample, Step
from .outcome import Report
from .poses import PoseSource
from .readout_doubt import ReadoutDoubt
from .results import ChunkResult, LazyValues
from .sensing import GravityModel, TareWindow
from .sensor_stage import SensorStage
from .status import ERROR
from .sync import StampSynchronizer

#: longest wait (stamp time) for tf data covering a sample when ``contact_timeout`` is 0
DEFAULT_WAIT_NS = 1_000_000_000
#: The analyzer's diagnostic concerns, one status each, in order.
CONCERNS = ('input', 'contacts', 'sensing', 'sensor health', 'solver', 'clock', 'friction')
__all__ = ['AnalysisEngine', 'AnalysisPlan', 'CONCERNS', 'DEFAULT_WAIT_NS', 'Drop',
           'needs_orientation', 'Sample', 'Step']


@dataclass(frozen=True)
class AnalysisPlan:
    """A runtime change checked against the engine, ready to adopt (:meth:`AnalysisEngine.plan`).

    :param change: the configuration's change.
    :param distributor: the solver with a new ``torque_share`` on the current poses, or None.
    """

    change: Change
    distributor: Any = None


def with_latest(pose: np.ndarray, cache: DistributorCache) -> np.ndarray:
    """Return the poses (n, 7) with a released contact's missing one (NaN) replaced by its latest.

    The solver took them (a contact without a pose is released, out of the read-out); its
    reading is still turned into a contact wrench (its measured state, the sensor's health),
    at the last pose it had.
    """
    missing = np.isnan(pose).any(axis=1)
    if not missing.any():
        return pose
    positions, quaternions = cache.latest()
    return np.where(missing[:, None], np.concatenate([positions, quaternions], axis=1), pose)


class AnalysisEngine:
    """Turns F/T readings into the analyzer's outputs (module docstring).

    :param config: the analyzer's configuration.
    :param poses: contact poses in the object frame.
    :param sensor_poses: sensor poses in their contact frames (tf ``sensor_frames``), or
        None for the configured sensor poses.
    :param on_rebuild: called with the basis names after each rebuild of the solver.
    :param orientation: the object frame's pose in ``gravity_frame`` (one frame), required
        when ``gravity_frame`` is set to another frame than the object frame.
    :param friction: check each live sample against the friction cones (the node).
    :param health: check the sensors' health live (:class:`.health.HealthMonitor`, its set
        checked in its ``settle``; the node), each sample labelled (:mod:`.readout_doubt`).
    :raises ValueError: when ``gravity_frame`` needs an orientation and none is given.
    """

    def __init__(self, config: AnalyzerConfig, poses: PoseSource,
                 sensor_poses: Optional[PoseSource] = None,
                 on_rebuild: Optional[Callable[[list], None]] = None,
                 orientation: Optional[PoseSource] = None, friction: bool = False,
                 health: bool = False) -> None:
        s = config.settings
        self.config = config
        self.names = list(config.effectors)
        self.n = len(self.names)
        if needs_orientation(config) and orientation is None:
            raise ValueError(f"gravity_frame '{s.gravity_frame}' needs the object's "
                             'orientation in it (tf or object_pose_topic)')
        self.gravity_model = GravityModel(np.asarray(config.gravity, float), orientation)
        self.sensing = SensorStage(config.sensors, self.gravity_model.gravity, s.sensor_biases)
        self.friction = FrictionStage(s.friction, 'check') if friction else None
        self.poses = poses
        self.sensor_poses = sensor_poses
        self.cache = DistributorCache(self.names, config.contact_types, config.object_model,
                                      config.options, config.contact_pose_tolerance,
                                      config.contact_extras)
        self.sync = StampSynchronizer(self.n, 0)
        self.drops = DropRules(self.names, s.ft_frames, s.max_future_ns)
        self.on_rebuild = on_rebuild
        self.basis_names: list = []
        self.basis_units: list = []
        self.regimes: dict = {}
        self.distributors_built = 0
        self.no_pose = 0
        self.no_orientation = 0
        #: why the last sample without contacts had none (None after an analysed sample)
        self.contact_problem: Optional[str] = None
        #: why the last sample without an orientation had none (None after an analysed one)
        self.orientation_problem: Optional[str] = None
        self.live = LiveQueue(self)
        self.chunks = ChunkPath(self)
        #: sensor health (:class:`.health.HealthMonitor`) given every analysed run, or None
        self.health = HealthMonitor.for_config(config, deferred=True) if health else None
        self.doubt = ReadoutDoubt(self.names)
        self._pose, self._filled = None, None  # poses the cache accepted (bytes); with_latest's
        self._limits(config)

    def _limits(self, config: AnalyzerConfig) -> None:
        """Apply the time limits of a configuration (synchroniser, order, tf wait)."""
        s = config.settings
        self.sync.tolerance_ns = s.sync_tolerance_ns
        self.sync.max_age_ns = s.max_age_ns
        self.drops.configure(s.max_future_ns)
        self.wait_ns = config.contact_timeout_ns or DEFAULT_WAIT_NS
        self.poses.set_timeout(config.contact_timeout_ns)

    @property
    def has_solver(self) -> bool:
        """Tell whether contact poses were accepted (a solver is built)."""
        return self.cache.distributor is not None

    @property
    def checks_friction(self) -> bool:
        """Tell whether each live sample is checked against friction cones (:class:`Sample` ``friction``)."""
        return self.friction is not None and self.friction.active

    # -- offline: chunks of a bag (:mod:`.batch`) -------------------------------------------
    def push_chunk(self, stream: np.ndarray, recv_ns: np.ndarray, stamp_ns: np.ndarray,
                   wrench: np.ndarray, frame_ok: Optional[np.ndarray] = None) -> ChunkResult:
        """Synchronise and analyse one chunk of F/T messages (:meth:`.batch.ChunkPath.push`)."""
        return self.chunks.push(stream, recv_ns, stamp_ns, wrench, frame_ok)

    def analyze(self, stamps_ns: np.ndarray, readings: np.ndarray) -> ChunkResult:
        """Analyse synchronised samples as the live path would (:meth:`.batch.ChunkPath.analyze`)."""
        return self.chunks.analyze(stamps_ns, readings)

    # -- what both paths share ----------------------------------------------------------------
    def poses_at(self, stamps_ns: np.ndarray) -> tuple:
        """Contact poses (k, n, 7), sensor poses (k, n, 7) or None, validity (k,)."""
        poses, valid = self.poses.at(stamps_ns)
        sensors = None
        if self.sensor_poses is not None:
            sensors, sensor_valid = self.sensor_poses.at(stamps_ns)
            valid = valid & sensor_valid
        return poses, sensors, valid

    def no_pose_at(self, stamp_ns: int, count: int, why: Optional[str] = None) -> str:
        """Count ``count`` samples without poses at ``stamp_ns``; return why.

        :param why: the reason when known (poses refused by the core), else the sources'.
        """
        if why is None:
            why = self.poses.why(stamp_ns)
            if self.sensor_poses is not None and self.poses.at(np.array([stamp_ns]))[1].all():
                why = f'sensor frames not known yet ({self.sensor_poses.why(stamp_ns)})'
        self.no_pose += count
        self.contact_problem = why
        return why

    def no_orientation_at(self, stamp_ns: int, count: int) -> str:
        """Count ``count`` samples without the object's orientation; return why."""
        why = self.gravity_model.why(stamp_ns)
        self.no_orientation += count
        self.orientation_problem = why
        return why

    def analyze_run(self, readings: np.ndarray, pose: np.ndarray,
                    sensor_pose: Optional[np.ndarray], gravity: Optional[np.ndarray],
                    stamps_ns: np.ndarray) -> Optional[tuple]:
        """Analyse samples sharing one contact configuration.

        :param gravity: (k, 3) gravity in the object frame per sample, or None (constant).
        :return: ``(values per quantity, each computed when first read; contact wrenches
            (k, n, 6))``, or None when the poses are refused (counted, the reason in
            :attr:`contact_problem`).
        """
        key = pose.tobytes()  # the same bits: nothing to check (a tenth of `==` on 7 n numbers)
        if key != self._pose:
            try:
                if self.cache.update(pose[:, :3], pose[:, 3:]):
                    self.rebuilt()
            except ValueError as err:
                self.no_pose_at(int(stamps_ns[0]), len(stamps_ns), f'contact poses rejected: {err}')
                return None
            self._pose, self._filled = key, with_latest(pose, self.cache)
        pose = self._filled
        contact = self.sensing.contact_wrenches(readings, pose, sensor_pose, gravity, stamps_ns, self.cache.weights)
        if self.health is not None:
            self.health.observe(stamps_ns, readings, contact, pose, sensor_pose,
                                self.gravity_model.gravity if gravity is None else gravity)
        with np.errstate(all='ignore'):  # overflow ends as Inf, refused by the caller
            batch = self.cache.distributor.analyze_batch(contact)
        self.contact_problem = None
        self.orientation_problem = None
        self.drops.analysed(stamps_ns[-1])
        return LazyValues(batch, self.config.settings.output_frame), contact

    def rebuilt(self) -> None:
        """Adopt the cache's new solver: its basis names (the outputs' labels), the sensing."""
        dist = self.cache.distributor
        self.sensing.rebuilt(self.cache.quaternions)
        self.basis_names = list(dist.basis_names)
        self.basis_units = list(getattr(dist, 'basis_units', []))
        self.regimes[dist.regime.message] = dist.regime.name
        self.distributors_built += 1
        if self.on_rebuild is not None:
            self.on_rebuild(self.basis_names)

    def sample(self, stamp_ns: int, part: tuple) -> Sample:
        """One live sample from :meth:`analyze_run`'s result (friction checked when configured)."""
        dist = self.cache.distributor
        contact = part[1][0]
        check = self.friction.check_contacts(dist, contact) if self.checks_friction else None
        return Sample(stamp_ns, ChunkResult(np.array([stamp_ns], np.int64), part[0]), contact,
                      dist, check, self.doubt.labels(self.health, dist, stamp_ns))

    # -- sensors -----------------------------------------------------------------------------
    biases = property(lambda self: self.sensing.biases, doc='Sensor biases in use (n, 6).')
    tare_window = property(lambda self: self.sensing.tare_window, doc='The tare window, or None.')
    recorder = property(lambda self: self.sensing.recorder, doc='The calibration recorder, or None.')

    def record_tare(self, window: Optional[TareWindow]) -> None:
        """Record the analysed samples' readings into ``window`` (None: stop recording)."""
        self.sensing.record_tare(window)

    def set_recorder(self, recorder) -> None:
        """Record the analysed samples for a calibration into ``recorder`` (None: stop)."""
        self.sensing.set_recorder(recorder)

    def set_biases(self, biases) -> None:
        """Use new sensor biases (6 n numbers, or empty: none)."""
        self.sensing.set_biases(biases)

    def set_sensors(self, sensors) -> None:
        """Use new sensor models (a calibration's tools and mounting rotations).

        :param sensors: one core ``SensorModel`` per effector.
        """
        self.config = replace(self.config, sensors=tuple(sensors))
        self.sensing.set_sensors(sensors)
        if self.health is not None:
            self.health.set_sensors(sensors)

    def tare(self, state: str = 'free', need: int = 0) -> tuple:
        """Biases from the recorded window (:meth:`.sensor_stage.SensorStage.tare`).

        :param state: ``free`` (the object is not held) or ``held`` (held at rest by the
            contacts alone, without internal load).
        :param need: samples the window must hold (0: any).
        :return: ``(biases (n, 6), spread (n, 6), samples used)``.
        :raises ValueError: on a short or empty window, a ``held`` tare without
            ``object_mass`` or without a solver, or across a change of the contact weights.
        """
        return self.sensing.tare(state, self.config.settings.object_mass, self.cache.solver_at, need)

    # -- contacts ------------------------------------------------------------------------------
    def check_static(self, positions, quaternions) -> Optional[str]:
        """Build the solver for static poses now: why they are refused, or None (the contact input)."""
        try:
            if self.cache.update(positions, quaternions):
                self.rebuilt()
        except ValueError as e:
            return f'contact poses rejected: {e}'
        return None

    # -- live: one message at a time (:mod:`.live`) ---------------------------------------------
    def offer(self, i: int, stamp_ns: int, wrench, recv_ns: int, frame_id: str = '') -> Step:
        """Take reading ``wrench`` (6,) of effector ``i``: the live path, :meth:`.live.LiveQueue.offer`."""
        return self.live.offer(i, stamp_ns, wrench, recv_ns, frame_id)

    def retry(self, now_ns: int) -> Step:
        """Analyse the samples waiting for tf data that has come since (node clock ``now_ns``)."""
        return self.live.drain(now_ns, Step())

    def counters(self) -> Any:
        """Return what was dropped so far.

        :return: the synchroniser's counters, plus ``future`` and ``frame`` (per effector),
            ``out_of_order``, ``no_pose`` and ``no_orientation`` (samples).
        """
        d = self.drops
        return SimpleNamespace(**vars(self.sync.counters), future=d.future, frame=d.wrong_frame,
                               out_of_order=d.out_of_order, no_pose=self.no_pose,
                               no_orientation=self.no_orientation)

    def finish(self) -> None:
        """End of the input: readings left waiting are counted as unsynchronised."""
        self.sync.finish()

    # -- runtime parameters and diagnostics ------------------------------------------------------
    def plan(self, change: Change) -> AnalysisPlan:
        """Check a runtime change against the solver, without applying it.

        :param change: the configuration's change (:func:`~wrench_distribution.config.changed_config`).
        :return: what :meth:`adopt` needs.
        :raises ValueError: when the new options do not fit the current poses.
        """
        dist = None
        if 'torque_share' in change.touched and self.cache.distributor is not None:
            dist = self.cache.try_options(change.config.options)
        return AnalysisPlan(change, dist)

    def adopt(self, plan: AnalysisPlan, mono_ns: int = 0) -> None:
        """Apply a checked runtime change.

        :param plan: the result of :meth:`plan`.
        :param mono_ns: steady time (unused: the analysis has no loop to switch bumplessly).
        """
        config = plan.change.config
        if 'torque_share' in plan.change.touched:
            self.cache.adopt_options(config.options, plan.distributor)
            if plan.distributor is not None:
                self.rebuilt()
        self.config = replace(config, sensors=self.config.sensors)  # calibrated tools stay
        self._limits(config)
        if self.health is not None:
            self.health.configure(config.settings.health)
        self.set_biases(config.settings.sensor_biases)
        window = self.tare_window
        if window is not None and window.size != config.settings.tare_samples:
            self.record_tare(TareWindow(config.settings.tare_samples))

    def report(self, now_ns: int) -> Report:
        """Everything the diagnostics show of the engine (the node adds its inputs and clock).

        :param now_ns: node clock now (the streams' ages).
        :return: values, per-concern values (``sensing``), conditions over :data:`CONCERNS`.
        """
        cond: dict = {c: [] for c in CONCERNS}
        values: dict = {}
        if self.contact_problem is not None:
            cond['contacts'].append((ERROR, self.contact_problem))
        if self.orientation_problem is not None:
            cond['sensing'].append((ERROR, self.orientation_problem))
        cond['input'] += self.drops.stream_conditions(now_ns, self.sync.max_age_ns, values)
        if self.drops.last_out_ns is not None:
            values['last_output_stamp_s'] = f'{self.drops.last_out_ns * 1e-9:.6f}'
        values.update({k: v for k, v in self.cache.values().items() if k != 'virtual_masses'})
        if self.friction is not None:
            found = self.friction.condition() if self.friction.active else None
            cond['friction'] += [found] if found is not None else []
            values.update(self.friction.values())
        sensing = self.sensing.values(self.names)
        sensing['samples_without_orientation'] = str(self.no_orientation)
        per, counters = {'sensing': sensing}, {}
        if self.health is not None:  # what each doubt reaches of the read-out, with the solver
            cond['sensor health'], per['sensor health'], counters = health_diagnostics(
                self.health, self.doubt.element_names(self.cache.distributor, self.basis_names))
        return Report(values, per, cond, counters)


def needs_orientation(config: AnalyzerConfig) -> bool:
    """Whether ``gravity_frame`` is another frame than the object frame.

    :param config: the analyzer's configuration.
    :return: True when gravity needs the object's orientation.
    """
    frame = config.settings.gravity_frame
    return bool(frame) and not same_frame(frame, config.object_frame)
