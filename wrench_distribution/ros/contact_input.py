"""The distributor's contact poses from a PoseArray topic, static parameters, or tf2.

The distributor commands with the latest contact poses. With tf2 (``contact_source: tf``)
they are looked up on a 10 Hz timer; their freshness is the stamp of the transforms (static
transforms never go stale), so ``contact_timeout`` trips when a tf publisher stops. Until
every frame has been looked up once, :meth:`ContactInput.ready` says which are missing and
the node publishes nothing. A failed lookup keeps the poses last looked up, with a log line
and the counter ``tf_failures``. (The analyzer looks poses up at each sample's stamp instead:
:mod:`wrench_distribution.ros.pose_inputs`.)
"""
from typing import Callable, Optional

from geometry_msgs.msg import PoseArray
import numpy as np

from wrench_distribution.config.schema import ConfigError
from wrench_distribution.core.codec import same_frame
from wrench_distribution.core.messages import pose_array_to_arrays
from wrench_distribution.engine.cache import DistributorCache
from wrench_distribution.ros.diagnostics import DiagnosticsState, ERROR
from wrench_distribution.ros.qos import reliable_qos


class ContactInput:
    """Feeds a :class:`DistributorCache` from the configured contact source.

    :param node: the rclpy node.
    :param cfg: validated parameters (dict).
    :param cache: the solver cache to update.
    :param diag: diagnostics state for problems.
    :param on_rebuild: called after a new solver was built (e.g. to re-resolve the
        internal load).
    :param on_orientation: with tf, called with the object's orientation in
        ``orientation_frame`` (``[qx, qy, qz, qw]``), looked up with the contacts.
    :param orientation_frame: frame to look the object frame up in ('' : none).
    :raises ConfigError: when static poses are invalid or tf2 is needed but missing.
    """

    def __init__(self, node, cfg: dict, cache: DistributorCache, diag: DiagnosticsState,
                 on_rebuild: Optional[Callable[[], None]] = None,
                 on_orientation: Optional[Callable] = None, orientation_frame: str = '') -> None:
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
        self.on_orientation = on_orientation
        self.orientation_frame = orientation_frame
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

    def _update_from_tf(self) -> None:
        from wrench_distribution.ros.tf import freshness_ns
        n = len(self.cache.names)
        extra = [self.orientation_frame] if self.orientation_frame else []
        try:  # the object in orientation_frame too: one freshness for all (contact_timeout)
            contacts = self.tf.lookup_pairs([self.object_frame] * n + extra,
                                            self.tf.frames + [self.object_frame] * len(extra), 0)
        except LookupError as e:
            why = f'{e}; keeping the previous poses' if self.cache.distributor else str(e)
            self.diag.problem('tf_failures', why)
            return
        if extra:
            self.on_orientation(contacts.quaternions[n])
        self._apply(contacts.positions[:n], contacts.quaternions[:n],
                    freshness_ns(contacts.stamps_ns))

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
            return
        self.error = None
        self.last_update_ns = (self.node.get_clock().now().nanoseconds if stamp_ns == -1
                               else stamp_ns)
        if rebuilt:
            self.diag.count('solver_builds')
            if self.on_rebuild is not None:
                self.on_rebuild()

    def _on_poses(self, msg: PoseArray) -> None:
        if msg.header.frame_id and not same_frame(msg.header.frame_id, self.object_frame):
            why = (f"contact_poses frame '{msg.header.frame_id}' is not the object frame "
                   f"'{self.object_frame}'")
            self.diag.problem('rejected_frame', why, ERROR)
            return
        if len(msg.poses) != len(self.cache.names):
            why = (f'contact_poses has {len(msg.poses)} poses, expected {len(self.cache.names)}'
                   f' (one per effector: {", ".join(self.cache.names)})')
            self.diag.problem('rejected_length', why, ERROR)
            return
        pos, quat = pose_array_to_arrays(msg)
        self._apply(pos, quat)

    def _on_tf_timer(self) -> None:
        self._update_from_tf()

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
        if (self.timeout > 0 and self.source != 'static' and self.last_update_ns is not None
                and (now_ns - self.last_update_ns) * 1e-9 > self.timeout):
            return (f'contact poses are stale (older than contact_timeout={self.timeout} s)')
        return None
