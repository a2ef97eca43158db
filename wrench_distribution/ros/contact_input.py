"""The contact poses of both nodes: static parameters, a PoseArray topic, or tf2.

One input for the distributor and the analyzer. ``static``: the configured poses. ``topic``:
each PoseArray is checked (frame, one pose per effector, finite, non-zero quaternions) by
the engine's :class:`~wrench_distribution.engine.poses.HeldPoses`, the class ``analyze-bag``
fills from a bag. ``tf``: the contact frames are looked up in the object frame with tf2.

The two nodes use the poses differently:

- the distributor commands with the *latest* poses (``on_latest``): each accepted PoseArray,
  or a 10 Hz tf lookup, is handed over at once. Their freshness is their receive time
  (topic) or the transforms' stamps (tf; static transforms never go stale), so
  ``contact_timeout`` trips when the publisher stops; until every frame has been known once,
  :meth:`ContactInput.problem` says which are missing and the node publishes nothing. A
  failed lookup keeps the poses last looked up, with a log line and the counter
  ``tf_failures``.
- the analyzer reads the poses *at each sample's stamp* from the engine's pose sources
  (:attr:`ContactInput.contacts`, :attr:`~ContactInput.sensors` for ``sensor_frames``,
  :attr:`~ContactInput.orientation` for ``gravity_frame``); a 10 Hz timer lets the engine
  analyse the samples that waited for tf data. The object's orientation in ``gravity_frame``
  comes from tf or from a PoseStamped topic (``object_pose_topic``).

Staleness is in nanoseconds throughout (``contact_timeout``, ``orientation_timeout``).
"""
from typing import Callable, Optional

from geometry_msgs.msg import PoseArray, PoseStamped
import numpy as np

from wrench_distribution.config.schema import ConfigError
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.engine.analysis import needs_orientation
from wrench_distribution.engine.poses import HeldPoses, same_frame, StaticPoses
from wrench_distribution.engine.sensing import LiveHeldPoses
from wrench_distribution.ros.conversions import read_pose_array_payload
from wrench_distribution.ros.diagnostics import DiagnosticsState, ERROR
from wrench_distribution.ros.node_clock import NodeClock
from wrench_distribution.ros.qos import reliable_qos

#: Period of the tf lookups (distributor) and of the retries of samples waiting for tf (s).
TF_PERIOD = 0.1


class ContactInput:
    """Build the pose sources of the configured ``contact_source`` and feed them.

    :param node: the managed node (:class:`~wrench_distribution.ros.managed.ManagedNode`): the
        subscriptions and the tf timer act only while it is active.
    :param config: the typed ``DistributorConfig`` or ``AnalyzerConfig``.
    :param diag: diagnostics state for rejected pose messages and tf failures.
    :param on_latest: the distributor's consumer, called with ``(positions, quaternions)``
        of each new pose set and returning None or why it refused them; None for the
        analyzer (poses at each sample's stamp).
    :param on_orientation: with ``on_latest`` and tf, called with the object's orientation
        in ``orientation_frame`` (``[qx, qy, qz, qw]``), looked up with the contacts.
    :param orientation_frame: the frame of the object's orientation ('': none).
    :param released: with ``on_latest``, the (n,) contacts released now (weight 0): with tf,
        their frames may be missing or stale without stalling the others (their poses then NaN).
    :raises ConfigError: when tf is configured but tf2 is not importable.
    """

    def __init__(self, node, config, diag: DiagnosticsState,
                 on_latest: Optional[Callable] = None, on_orientation: Optional[Callable] = None,
                 orientation_frame: str = '', released: Optional[Callable] = None) -> None:
        self.node = node
        self._now_ns = NodeClock(node.get_clock()).now_ns  # read at every pose set
        self.released = released
        self.config = config
        self.diag = diag
        self.source = config.contact_source
        self.on_latest = on_latest
        self.on_orientation = on_orientation
        self.orientation_frame = orientation_frame
        self.timeout_ns = config.contact_timeout_ns
        self.names = list(config.effectors)
        self.sensors = None
        self.orientation = None
        self.rejected: Optional[str] = None
        self.last_update_ns: Optional[int] = None  # freshness of the latest poses (node clock)
        self.has_poses = False  # whether the consumer accepted a pose set
        self._lookup = None
        self._retry: Optional[Callable] = None
        # a released contact's pose may be NaN (no pose): the distributor's, and the analyzer's
        # that follows the distributor's weights (its solver refuses it for a weight above 0)
        follows = on_latest is None and bool(config.topics.weights)
        self.held = HeldPoses(self.names, config.object_frame, self.timeout_ns,
                              missing_ok=on_latest is not None or follows)
        if self.source == 'static':
            self.contacts = StaticPoses([list(c.position) + list(c.orientation)
                                         for c in config.contacts])
        elif self.source == 'topic':
            self.contacts = self.held
        else:
            self._tf_sources()
        if on_latest is None and needs_orientation(config):
            self._orientation_source(config)

    # -- construction ------------------------------------------------------------------
    def _tf_lookup(self, parameter: str, accepted: str):
        """Return the node's one tf2 lookup (ConfigError naming ``parameter`` without tf2)."""
        from wrench_distribution.ros.tf import tf2_available, TfPoseLookup
        if not tf2_available():
            raise ConfigError(f"parameter '{parameter}': 'tf' needs tf2_ros, which is "
                              f'not importable here; accepted here: {accepted}')
        if self._lookup is None:
            self._lookup = TfPoseLookup(self.node, self.config.object_frame,
                                        list(self.config.contact_frames))
        return self._lookup

    def _tf_sources(self) -> None:
        from wrench_distribution.ros.tf import TfBufferPoses
        frames = list(self.config.contact_frames)
        lookup = self._tf_lookup('contact_source', 'topic, static')
        self.contacts = TfBufferPoses(lookup, [self.config.object_frame] * len(frames), frames)
        sensor_frames = getattr(self.config.settings, 'sensor_frames', ())  # the analyzer's only
        if sensor_frames:
            self.sensors = TfBufferPoses(lookup, frames, list(sensor_frames))

    def _orientation_source(self, config) -> None:
        """Build the object's pose source in ``gravity_frame``: tf, or ``object_pose_topic``."""
        s = config.settings
        if s.orientation_source == 'topic':
            self.orientation = LiveHeldPoses(['object'], s.gravity_frame,
                                             s.orientation_timeout_ns,
                                             description=f'topic {config.topics.object_pose}')
            return
        from wrench_distribution.ros.tf import TfBufferPoses
        lookup = self._tf_lookup('object_orientation_source', 'topic')
        self.orientation = TfBufferPoses(lookup, [s.gravity_frame], [config.object_frame])

    def start(self, retry: Optional[Callable[[], None]] = None,
              prepare: Optional[Callable] = None) -> None:
        """Hand static poses over, subscribe (topic) and start the tf timer.

        :param retry: the analyzer's call that analyses samples waiting for tf data (tf).
        :param prepare: the analyzer's check of static poses, called like ``on_latest``.
        :raises ConfigError: when the static contacts are rejected.
        """
        self._retry = retry
        if self.source == 'static':
            poses = self.contacts.poses
            accept = self.on_latest or prepare
            why = None if accept is None else accept(poses[:, :3], poses[:, 3:])
            if why is not None:
                raise ConfigError(f"parameter 'contact_positions'/'contact_orientations': {why}")
            self.has_poses = True
        gate = self.node.when_active  # the inputs act only while the node is active
        if self.source == 'topic':
            self.node.create_subscription(PoseArray, self.config.topics.contact_poses,  # decoded here
                                          gate(self._on_poses), reliable_qos(10), raw=True)
        if isinstance(self.orientation, HeldPoses):
            self.node.create_subscription(PoseStamped, self.config.topics.object_pose,
                                          gate(self._on_object_pose), reliable_qos(10))
        if self._lookup is not None:
            self.node.create_timer(TF_PERIOD, gate(self._on_tf_timer))

    def set_timeouts(self, contact_timeout_ns: int, orientation_timeout_ns: int = 0) -> None:
        """Change ``contact_timeout`` and ``orientation_timeout`` (ns; 0 disables).

        :param contact_timeout_ns: the contacts' staleness limit.
        :param orientation_timeout_ns: the object pose topic's (analyzer, ``topic``).
        """
        self.timeout_ns = int(contact_timeout_ns)
        self.held.set_timeout(self.timeout_ns)
        if isinstance(self.orientation, HeldPoses):
            self.orientation.set_timeout(int(orientation_timeout_ns))

    # -- inputs --------------------------------------------------------------------------
    def _hand_over(self, positions, quaternions, fresh_ns: Optional[int]) -> Optional[str]:
        """Give the latest poses to the distributor (``fresh_ns``: their freshness, None: never stale)."""
        if self.on_latest is None:
            self.has_poses = True
            return None
        why = self.on_latest(positions, quaternions)
        if why is None:
            self.has_poses = True
            self.last_update_ns = fresh_ns
        return why

    def _on_poses(self, payload: bytes) -> None:
        try:  # a malformed payload (MalformedPayload) is refused as bad poses are
            stamp_ns, frame_id, poses = read_pose_array_payload(payload)
            pose = self.held.check(frame_id, poses[:, :3], poses[:, 3:])
        except ValueError as e:
            self.rejected = f'contact poses rejected: {e}'
            self.diag.problem('rejected_contacts', self.rejected, ERROR)
            return
        self.rejected = None
        if self.on_latest is None:
            self.held.add(stamp_ns, pose)
            return
        self.rejected = self._hand_over(pose[:, :3], pose[:, 3:], self._now_ns())

    def _on_object_pose(self, msg: PoseStamped) -> None:
        frame = self.config.settings.gravity_frame
        p, q = msg.pose.position, msg.pose.orientation
        try:
            if msg.header.frame_id and not same_frame(msg.header.frame_id, frame):
                raise ValueError(f"frame '{msg.header.frame_id}' is not gravity_frame '{frame}'")
            pose = self.orientation.check('', [[p.x, p.y, p.z]], [[q.x, q.y, q.z, q.w]])
        except ValueError as e:
            self.diag.problem('rejected_object_pose', f'object pose rejected: {e}', ERROR,
                              'sensing')
            return
        self.orientation.add(stamp_to_ns(msg.header.stamp), pose)

    def _on_tf_timer(self) -> None:
        if self.on_latest is None:
            if self._retry is not None:
                self._retry()
            return
        from wrench_distribution.ros.tf import freshness_ns
        n = len(self.names)
        released = self.released() if self.released is not None else np.zeros(n, bool)
        live = np.flatnonzero(~released)
        extra = [self.orientation_frame] if self.orientation_frame else []
        frames = self._lookup.frames
        try:  # the object in orientation_frame too: one freshness for all (contact_timeout)
            found = self._lookup.lookup_pairs([self.config.object_frame] * live.size + extra,
                                              [frames[i] for i in live]
                                              + [self.config.object_frame] * len(extra), 0)
        except LookupError as e:
            self.diag.problem('tf_failures', f'{e}; keeping the previous poses'
                              if self.has_poses else str(e))
            return
        if extra:
            self.on_orientation(found.quaternions[live.size])
        positions, quaternions = np.full((n, 3), np.nan), np.full((n, 4), np.nan)
        positions[live], quaternions[live] = found.positions[:live.size], found.quaternions[:live.size]
        for i in np.flatnonzero(released):  # where it is, if tf knows: never stale, never a failure
            try:
                pose = self._lookup.lookup_pairs([self.config.object_frame], [frames[i]], 0)
            except LookupError:
                continue
            positions[i], quaternions[i] = pose.positions[0], pose.quaternions[0]
        self.rejected = self._hand_over(positions, quaternions, freshness_ns(found.stamps_ns))

    # -- state -----------------------------------------------------------------------------
    def problem(self, now_ns: int, built: bool) -> Optional[str]:
        """Why the contacts cannot be used now, or None when they can.

        :param now_ns: node clock now (the distributor's staleness).
        :param built: whether the engine has a solver (poses were accepted).
        :return: a reason, or None.
        """
        if not built:
            if self.rejected is not None:
                return self.rejected
            if self.source == 'topic':
                return f'no contact poses yet (contact_source=topic, {self.held.description})'
            if self.source == 'tf':
                why = getattr(self.contacts, 'problem', None)
                return (f'no contact poses yet (contact_source=tf: '
                        f'{", ".join(self._lookup.frames)} in {self.config.object_frame}'
                        + (f'; {why})' if why else ')'))
            return None
        if (self.on_latest is not None and self.timeout_ns > 0 and self.source != 'static'
                and self.last_update_ns is not None
                and now_ns - self.last_update_ns > self.timeout_ns):
            return (f'contact poses are stale (older than contact_timeout='
                    f'{self.timeout_ns * 1e-9:g} s)')
        return None
