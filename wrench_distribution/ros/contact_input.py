"""Contact poses for a node from a PoseArray topic, static parameters, or tf2.

With tf2 (``contact_source: tf``) the contact poses, and the analyzer's sensor poses
(``sensor_frames``), are looked up on a 10 Hz timer and, for the analyzer, at each
sample's stamp (:meth:`ContactInput.at_stamp`). Their freshness is the stamp of the
transforms (static transforms never go stale), so ``contact_timeout`` trips when a tf
publisher stops. Until every frame has been looked up once, :meth:`ContactInput.ready`
says which are missing and the node publishes nothing. A failed lookup keeps the poses
last looked up, with a log line and the counter ``tf_failures``.
"""
from typing import Callable, Optional, Sequence

from geometry_msgs.msg import PoseArray
import numpy as np

from wrench_distribution.params import ConfigError
from wrench_distribution.engine.cache import DistributorCache
from wrench_distribution.ros.conversions import pose_array_to_arrays
from wrench_distribution.ros.diagnostics import DiagnosticsState, ERROR
from wrench_distribution.ros.qos import reliable_qos

SensorPosesCallback = Callable[[np.ndarray, np.ndarray], None]


class ContactInput:
    """Feeds a :class:`DistributorCache` from the configured contact source.

    :param node: the rclpy node.
    :param cfg: validated parameters (dict).
    :param cache: the solver cache to update.
    :param diag: diagnostics state for problems.
    :param on_rebuild: called after a new solver was built (e.g. to re-resolve the
        internal load).
    :raises ConfigError: when static poses are invalid or tf2 is needed but missing.
    """

    def __init__(self, node, cfg: dict, cache: DistributorCache, diag: DiagnosticsState,
                 on_rebuild: Optional[Callable[[], None]] = None) -> None:
        self.node = node
        self.cache = cache
        self.diag = diag
        self.source = cfg['contact_source']
        self.object_frame = cfg['object_frame']
        self.timeout = cfg['contact_timeout']
        self.on_rebuild = on_rebuild
        self.last_update_ns: Optional[int] = None
        self.error: Optional[str] = None
        self.tf = None
        self._sensor_pairs: Optional[tuple] = None
        self._on_sensor_poses: Optional[SensorPosesCallback] = None
        self._sensors_known = True
        self._last_stamp_ns = 0
        self._stamped_lookups = False
        self._sensor_fresh_ns: Optional[int] = None
        n = len(cfg['effectors'])
        if self.source == 'static':
            pos = np.asarray(cfg['contact_positions'], float).reshape(n, 3)
            ori = (np.asarray(cfg['contact_orientations'], float).reshape(n, 4)
                   if cfg['contact_orientations'] else np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)))
            try:
                cache.update(pos, ori)
            except ValueError as e:
                raise ConfigError(f"parameter 'contact_positions'/'contact_orientations': "
                                  f'the core rejects the static contacts: {e}') from None
        elif self.source == 'topic':
            self.sub = node.create_subscription(PoseArray, cfg['contact_poses_topic'],
                                                self._on_poses, reliable_qos(10))
        else:  # tf
            from wrench_distribution.ros.tf import TfPoseLookup, tf2_available
            if not tf2_available():
                raise ConfigError("parameter 'contact_source': 'tf' needs tf2_ros, which is "
                                  'not importable here; accepted here: topic, static')
            frames = cfg['contact_frames']
            self.tf = TfPoseLookup(node, self.object_frame, frames)
            self.timer = node.create_timer(0.1, self._on_tf_timer)

    def set_timeout(self, seconds: float) -> None:
        """Change ``contact_timeout`` (s; 0 disables).

        :param seconds: the new staleness limit.
        """
        self.timeout = float(seconds)

    def track_sensor_frames(self, contact_frames: Sequence[str], sensor_frames: Sequence[str],
                            on_poses: SensorPosesCallback) -> None:
        """Also look up each sensor frame in its contact frame (tf source only).

        Until they are known, :meth:`ready` returns a reason naming them.

        :param contact_frames: one contact frame per effector.
        :param sensor_frames: one sensor frame per effector.
        :param on_poses: called with positions (n,3) and quaternions (n,4) of the sensors
            in their contact frames after every successful lookup.
        """
        self._sensor_pairs = (list(contact_frames), list(sensor_frames))
        self._on_sensor_poses = on_poses
        self._sensors_known = False

    def at_stamp(self, stamp_ns: int) -> None:
        """Look the tf poses up at a sample's stamp (no-op for the other sources).

        When tf has nothing at the stamp yet (newer than the latest transform), the latest
        transforms are used; when that fails too, the previous poses are kept (logged and
        counted).

        :param stamp_ns: the sample's header stamp, nanoseconds.
        """
        if self.tf is not None and stamp_ns > 0 and stamp_ns != self._last_stamp_ns:
            self._last_stamp_ns = stamp_ns
            self._stamped_lookups = True
            self._update_from_tf(stamp_ns)

    def _update_from_tf(self, stamp_ns: int) -> None:
        from wrench_distribution.ros.tf import freshness_ns
        if self._sensor_pairs is not None:
            sensors = self._lookup(lambda at: self.tf.lookup_pairs(*self._sensor_pairs, at),
                                   stamp_ns)
            if sensors is not None:
                self._sensors_known = True
                self._sensor_fresh_ns = freshness_ns(sensors.stamps_ns)
                self._on_sensor_poses(sensors.positions, sensors.quaternions)
        contacts = self._lookup(self.tf.lookup, stamp_ns)
        if contacts is not None:
            fresh = [t for t in (freshness_ns(contacts.stamps_ns), self._sensor_fresh_ns)
                     if t is not None]
            self._apply(contacts.positions, contacts.quaternions, min(fresh) if fresh else None)

    def _lookup(self, lookup: Callable, stamp_ns: int):
        """Run a tf lookup at the stamp, else at the latest transforms; log and count failures.

        :param lookup: ``lookup(stamp_ns) -> Poses``.
        :param stamp_ns: stamp, or 0 for the latest.
        :return: the poses, or None after a failure (the previous poses stay).
        """
        try:
            try:
                return lookup(stamp_ns)
            except LookupError:
                if not stamp_ns:
                    raise
                poses = lookup(0)
                self.diag.count('tf_latest_fallbacks')
                return poses
        except LookupError as e:
            why = f'{e}; keeping the previous poses' if self.cache.distributor else str(e)
            self.diag.problem('tf_failures', why)
            self.node.get_logger().warning(why, throttle_duration_sec=5.0)
            return None

    def _apply(self, pos: np.ndarray, quat: np.ndarray, stamp_ns: Optional[int] = -1) -> None:
        """Update the solver cache.

        :param stamp_ns: freshness of the poses: -1 for now (receipt time), None for never
            stale (static transforms), else the transforms' stamp.
        """
        try:
            rebuilt = self.cache.update(pos, quat)
        except ValueError as e:
            self.error = f'contact poses rejected: {e}'
            self.diag.problem('rejected_contacts', self.error, ERROR)
            self.node.get_logger().warning(self.error, throttle_duration_sec=2.0)
            return
        self.error = None
        self.last_update_ns = (self.node.get_clock().now().nanoseconds if stamp_ns == -1
                               else stamp_ns)
        if rebuilt:
            self.diag.count('solver_builds')
            if self.on_rebuild is not None:
                self.on_rebuild()

    def _on_poses(self, msg: PoseArray) -> None:
        if msg.header.frame_id and msg.header.frame_id != self.object_frame:
            why = (f"contact_poses frame '{msg.header.frame_id}' is not the object frame "
                   f"'{self.object_frame}'")
            self.diag.problem('rejected_frame', why, ERROR)
            self.node.get_logger().warning(why, throttle_duration_sec=2.0)
            return
        if len(msg.poses) != len(self.cache.names):
            why = (f'contact_poses has {len(msg.poses)} poses, expected {len(self.cache.names)}'
                   f' (one per effector: {", ".join(self.cache.names)})')
            self.diag.problem('rejected_length', why, ERROR)
            self.node.get_logger().warning(why, throttle_duration_sec=2.0)
            return
        pos, quat = pose_array_to_arrays(msg)
        self._apply(pos, quat)

    def _on_tf_timer(self) -> None:
        if self._stamped_lookups:  # samples drive the lookups; poll only when they stop
            self._stamped_lookups = False
            return
        self._update_from_tf(0)

    def ready(self, now_ns: int) -> Optional[str]:
        """Why the contacts cannot be used now, or None when they can.

        :param now_ns: node clock now, nanoseconds.
        :return: a reason, or None.
        """
        if self.cache.distributor is None:
            if self.error:
                return self.error
            missing = f': {", ".join(self.tf.frames)} in {self.object_frame}' if self.tf else ''
            return f'no contact poses yet (contact_source={self.source}{missing})'
        if not self._sensors_known:
            pairs = ', '.join(f'{s} in {c}' for c, s in zip(*self._sensor_pairs))
            return f'sensor frames not known yet (no transform {pairs})'
        if (self.timeout > 0 and self.source != 'static' and self.last_update_ns is not None
                and (now_ns - self.last_update_ns) * 1e-9 > self.timeout):
            return (f'contact poses are stale (older than contact_timeout={self.timeout} s)')
        return None
