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

from types import SimpleNamespace
from typing import Any, Callable, Optional

import numpy as np

from wrench_distribution.core.codec import same_frame
from . import batch
from .cache import DistributorCache
from .live import Drop, LiveQueue, Sample, Step
from .poses import PoseSource
from .results import ChunkResult, LazyValues
from .sensing import GravityModel, TareWindow
from .sensor_stage import SensorStage
from .sync import StampSynchronizer

#: longest wait (stamp time) for tf data covering a sample when ``contact_timeout`` is 0
DEFAULT_WAIT_NS = 1_000_000_000
__all__ = ['AnalysisEngine', 'DEFAULT_WAIT_NS', 'Drop', 'needs_orientation', 'Sample', 'Step']


class AnalysisEngine:
    """Turns F/T readings into the analyzer's outputs.

    Composed of the synchroniser (:mod:`.sync`), the pose sources (:mod:`.poses`), the
    gravity model and the sensors (:mod:`.sensor_stage`), the solver cache (:mod:`.cache`),
    the live queue (:mod:`.live`) and, for the node, friction in check mode and the
    diagnostics (:mod:`.analysis_report`).

    :param config: ``AnalyzerConfig`` (:func:`wrench_distribution.config.load_analyzer_config`).
    :param poses: contact poses in the object frame.
    :param sensor_poses: sensor poses in their contact frames (tf ``sensor_frames``), or
        None for the configured sensor poses.
    :param contact_extras: extra ``Contact`` keyword arguments per effector (friction).
    :param on_rebuild: called with the basis names after each rebuild of the solver.
    :param orientation: the object frame's pose in ``gravity_frame`` (one frame), required
        when ``gravity_frame`` is set to another frame than the object frame.
    :param friction: check each live sample against the friction cones (the node).
    :raises ValueError: when ``gravity_frame`` needs an orientation and none is given.
    """

    def __init__(self, config: Any, poses: PoseSource, sensor_poses: Optional[PoseSource] = None,
                 contact_extras: Optional[list] = None,
                 on_rebuild: Optional[Callable[[list], None]] = None,
                 orientation: Optional[PoseSource] = None, friction: bool = False) -> None:
        from . import analysis_report
        s = config.settings
        self.config = config
        self.names = list(config.effectors)
        self.n = len(self.names)
        self.gravity = np.asarray(config.gravity, float)
        if needs_orientation(config) and orientation is None:
            raise ValueError(f"gravity_frame '{s.gravity_frame}' needs the object's "
                             'orientation in it (tf or object_pose_topic)')
        self.gravity_model = GravityModel(self.gravity, orientation)
        self.sensing = SensorStage(config.sensors, self.gravity, s.sensor_biases)
        self.friction = analysis_report.friction_stage(s.friction) if friction else None
        if self.friction is not None and contact_extras is None:
            contact_extras = self.friction.extras
        self.no_orientation = 0
        #: why the last sample without an orientation had none (None after an analysed one)
        self.orientation_problem: Optional[str] = None
        self.frame = config.output_frame
        self.poses = poses
        self.sensor_poses = sensor_poses
        self.cache = DistributorCache(self.names, config.contact_types, config.object_model,
                                      config.options, config.contact_pose_tolerance,
                                      contact_extras)
        self.sync = StampSynchronizer(self.n, 0)
        self.on_rebuild = on_rebuild
        self.basis_names: list = []
        self.basis_units: list = []
        self.regimes: dict = {}
        self.distributors_built = 0
        self.last_out_ns: Optional[int] = None
        self.no_pose = 0
        #: expected ``frame_id`` per F/T stream (``''``: any), from ``ft_frames``
        self.ft_frames = list(s.ft_frames)
        self.future = np.zeros(self.n, np.int64)
        self.wrong_frame = np.zeros(self.n, np.int64)
        self.out_of_order = 0
        #: header stamp of the newest reading of each stream (None: none yet)
        self.last_stamp_ns: list = [None] * self.n
        #: why the last sample without contacts had none (None after an analysed sample)
        self.contact_problem: Optional[str] = None
        self.live = LiveQueue(self)
        #: sensor health (:class:`.health.HealthMonitor`) given every analysed run, or None
        self.health = None
        self._pose: Optional[bytes] = None  # the last contact poses the cache accepted, as bytes
        self.set_limits(config.sync_tolerance, config.max_age, s.max_future_ns * 1e-9,
                        config.contact_timeout)

    @property
    def has_solver(self) -> bool:
        """Tell whether contact poses were accepted (a solver is built)."""
        return self.cache.distributor is not None

    @property
    def checks_friction(self) -> bool:
        """Tell whether each live sample is checked against friction cones (:class:`Sample` ``friction``)."""
        return self.friction is not None and self.friction.active

    # -- the sensors' state, by name (services, tools, tests) ------------------------------
    biases = property(lambda self: self.sensing.biases, doc='Sensor biases in use (n, 6).')
    tare_window = property(lambda self: self.sensing.tare_window, doc='The tare window.')
    recorder = property(lambda self: self.sensing.recorder,
                        lambda self, recorder: setattr(self.sensing, 'recorder', recorder),
                        doc='The calibration recorder, or None.')

    def set_limits(self, sync_tolerance: float, max_age: float, max_future: float,
                   contact_timeout: float) -> None:
        """Apply the time limits (s; 0 disables ``max_age``, ``max_future``, the timeout).

        :param sync_tolerance: largest stamp skew inside a sample.
        :param max_age: staleness of a sample against its receive time.
        :param max_future: how far a stamp may be ahead of its receive time.
        :param contact_timeout: age limit of contact poses; also the longest tf wait.
        """
        self.sync.tolerance_ns = int(round(sync_tolerance * 1e9))
        self.sync.max_age_ns = int(round(max_age * 1e9))
        self.future_ns = int(round(max_future * 1e9))
        timeout_ns = int(round(contact_timeout * 1e9))
        self.wait_ns = timeout_ns or DEFAULT_WAIT_NS
        self.poses.set_timeout(timeout_ns)

    # -- offline: one chunk of a bag -------------------------------------------------------
    def push_chunk(self, stream: np.ndarray, recv_ns: np.ndarray, stamp_ns: np.ndarray,
                   wrench: np.ndarray, frame_ok: Optional[np.ndarray] = None) -> ChunkResult:
        """Synchronise and analyse one chunk of F/T messages (:func:`.batch.push_chunk`)."""
        return batch.push_chunk(self, stream, recv_ns, stamp_ns, wrench, frame_ok)

    def analyze(self, stamps_ns: np.ndarray, readings: np.ndarray) -> ChunkResult:
        """Analyse synchronised samples as the live path would (:func:`.batch.analyze`)."""
        return batch.analyze(self, stamps_ns, readings)

    def poses_at(self, stamps_ns: np.ndarray) -> tuple:
        """Contact poses (k, n, 7), sensor poses (k, n, 7) or None, validity (k,)."""
        poses, valid = self.poses.at(stamps_ns)
        sensors = None
        if self.sensor_poses is not None:
            sensors, sensor_valid = self.sensor_poses.at(stamps_ns)
            valid = valid & sensor_valid
        return poses, sensors, valid

    def no_pose_at(self, stamp_ns: int, count: int) -> str:
        """Count ``count`` samples without poses at ``stamp_ns``; return why."""
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
            (k, n, 6))``, or None when the poses are refused (the reason is in
            :attr:`contact_problem`).
        """
        key = pose.tobytes()  # the same bits: nothing to check (a tenth of `==` on 7 n numbers)
        if key != self._pose:
            try:
                if self.cache.update(pose[:, :3], pose[:, 3:]):
                    self._rebuilt()
            except ValueError as err:
                self.contact_problem = f'contact poses rejected: {err}'
                return None
            self._pose = key
        contact = self.sensing.contact_wrenches(readings, pose, sensor_pose, gravity, stamps_ns)
        if self.health is not None:
            self.health.observe(stamps_ns, readings, contact, pose, sensor_pose,
                                self.gravity if gravity is None else gravity)
        with np.errstate(all='ignore'):  # overflow ends as Inf, refused by the caller
            batch = self.cache.distributor.analyze_batch(contact)
        self.contact_problem = None
        self.orientation_problem = None
        return LazyValues(batch, self.frame), contact

    def _rebuilt(self) -> None:
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
        check = None
        if self.friction is not None and self.friction.active:
            check = self.friction.check = self.friction.model(dist).check(contact)
        return Sample(stamp_ns, ChunkResult(np.array([stamp_ns], np.int64), part[0]), contact,
                      dist, check)

    # -- sensors -----------------------------------------------------------------------------
    def set_biases(self, biases) -> None:
        """Use new sensor biases (the ``sensor_biases`` parameter: 6 n numbers, or empty)."""
        self.sensing.set_biases(biases)

    def set_sensors(self, sensors) -> None:
        """Use new sensor models (a calibration's tools and mounting rotations).

        :param sensors: one core ``SensorModel`` per effector.
        """
        from dataclasses import replace
        self.config = replace(self.config, sensors=list(sensors))
        self.sensing.set_sensors(sensors)

    def record_tare(self, window: Optional[TareWindow]) -> None:
        """Record the analysed samples' readings into ``window`` (None: stop recording)."""
        self.sensing.tare_window = window

    def tare(self, state: str = 'free', need: int = 0) -> tuple:
        """Biases from the recorded window (:meth:`.sensor_stage.SensorStage.tare`).

        :param state: ``free`` (the object is not held) or ``held`` (held at rest by the
            contacts alone, without internal load).
        :param need: samples the window must hold (0: any).
        :return: ``(biases (n, 6), spread (n, 6), samples used)``.
        :raises ValueError: on a short or empty window, a ``held`` tare without
            ``object_mass`` or without a solver.
        """
        return self.sensing.tare(state, self.config.settings.object_mass,
                                 self.cache.distributor, need)

    # -- contacts and options ------------------------------------------------------------------
    def prepare(self, pose: np.ndarray) -> None:
        """Build the solver for these contact poses now (static contacts fail at start-up).

        :param pose: (n, 7) contact poses in the object frame.
        :raises ValueError: when the core rejects them.
        """
        if self.cache.update(pose[:, :3], pose[:, 3:]):
            self._rebuilt()

    def check_static(self, positions, quaternions) -> Optional[str]:
        """:meth:`prepare` for the contact input: why the static poses are refused, or None."""
        try:
            self.prepare(np.concatenate([positions, quaternions], axis=1))
        except ValueError as e:
            return f'contact poses rejected: {e}'
        return None

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
        """Take one F/T reading (the live path, :meth:`.live.LiveQueue.offer`).

        :param i: effector index.
        :param stamp_ns: its header stamp.
        :param wrench: the reading (6,), sensor frame.
        :param recv_ns: receive time (node clock; 0 when the clock has not started).
        :param frame_id: its header frame id (checked against :attr:`ft_frames`).
        :return: the samples analysed and the drops caused by this reading.
        """
        return self.live.offer(i, stamp_ns, wrench, recv_ns, frame_id)

    def retry(self, now_ns: int) -> Step:
        """Analyse the samples waiting for tf data that has come since (call periodically).

        :param now_ns: node clock now.
        :return: the samples analysed and the drops.
        """
        step = Step()
        self.live.drain(now_ns, step)
        return step

    def counters(self) -> Any:
        """Return what was dropped so far.

        :return: the synchroniser's counters, plus ``future`` and ``frame`` (per effector),
            ``out_of_order`` and ``no_orientation`` (samples).
        """
        return SimpleNamespace(**vars(self.sync.counters), future=self.future,
                               frame=self.wrong_frame, out_of_order=self.out_of_order,
                               no_orientation=self.no_orientation)

    def finish(self) -> None:
        """End of the input: readings left waiting are counted as unsynchronised."""
        self.sync.finish()

    # -- the node's diagnostics and runtime parameters (:mod:`.analysis_report`) ---------------
    def report(self, now_ns: int):
        """Everything the diagnostics show of the engine (the node adds its inputs and clock)."""
        from .analysis_report import report
        return report(self, now_ns)

    def plan(self, new: dict, touched: set) -> tuple:
        """Check a parameter change without applying it (:func:`.analysis_report.plan`)."""
        from .analysis_report import plan
        return plan(self, new, touched)

    def adopt(self, plan: tuple) -> bool:
        """Apply a checked parameter change; return whether the tare window was resized."""
        from .analysis_report import adopt
        return adopt(self, plan)


def needs_orientation(config) -> bool:
    """Whether ``gravity_frame`` is another frame than the object frame.

    :param config: the typed ``AnalyzerConfig``, or validated analyzer parameters.
    :return: True when gravity needs the object's orientation.
    """
    if isinstance(config, dict):
        frame, object_frame = config.get('gravity_frame') or '', config.get('object_frame', '')
    else:
        frame, object_frame = config.settings.gravity_frame, config.object_frame
    return bool(frame) and not same_frame(frame, object_frame)
