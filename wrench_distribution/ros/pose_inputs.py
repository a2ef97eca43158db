"""The analyzer's contact (and sensor) pose inputs, fed into the engine's pose sources.

``static``: the configured poses. ``topic``: each PoseArray is checked and added to a
:class:`~wrench_distribution.engine.poses.HeldPoses`, the class ``analyze-bag`` fills from
the bag. ``tf``: :class:`~wrench_distribution.ros.tf.TfBufferPoses` looks the contact frames
(and ``sensor_frames``) up at each sample's stamp in the tf2 buffer; a 10 Hz timer lets the
engine analyse the samples that waited for tf data.

The object's orientation in ``gravity_frame`` (when set) comes the same ways: tf (the object
frame looked up at each sample stamp) or a PoseStamped topic held in a
:class:`~wrench_distribution.engine.poses.HeldPoses` with ``orientation_timeout``.
"""
from typing import Callable, Optional

from geometry_msgs.msg import PoseArray, PoseStamped

from wrench_distribution.config import ConfigError
from wrench_distribution.core.codec import seconds_to_ns, stamp_to_ns
from wrench_distribution.core.messages import pose_array_to_arrays, pose_to_list
from wrench_distribution.engine.analysis import needs_orientation
from wrench_distribution.engine.poses import HeldPoses, same_frame, StaticPoses
from wrench_distribution.engine.sensing import LiveHeldPoses
from wrench_distribution.ros.diagnostics import DiagnosticsState, ERROR
from wrench_distribution.ros.qos import reliable_qos

#: period of the timer that retries samples waiting for tf data (s)
TF_RETRY_PERIOD = 0.1


class PoseInputs:
    """Build the pose sources of the configured ``contact_source`` and feed them.

    :param node: the rclpy node.
    :param config: the typed ``AnalyzerConfig``.
    :param diag: diagnostics state for rejected pose messages.
    :raises ConfigError: when tf is configured but tf2 is not importable.
    """

    def __init__(self, node, config, diag: DiagnosticsState) -> None:
        self.node = node
        self.config = config
        self.diag = diag
        self.source = config.contact_source
        self.sensors = None
        self.orientation = None
        self._lookup = None
        self.rejected: Optional[str] = None
        names = list(config.effectors)
        if self.source == 'static':
            self.contacts = StaticPoses([list(c.position) + list(c.orientation)
                                         for c in config.contacts])
        elif self.source == 'topic':
            self.contacts = HeldPoses(names, config.object_frame,
                                      seconds_to_ns(config.contact_timeout))
        else:
            self._tf_sources(config)
        if needs_orientation(config.params):
            self._orientation_source(config.params)

    def _tf_lookup(self, parameter: str, accepted: str):
        from wrench_distribution.ros.tf import tf2_available, TfPoseLookup
        if not tf2_available():
            raise ConfigError(f"parameter '{parameter}': 'tf' needs tf2_ros, which is "
                              f'not importable here; accepted here: {accepted}')
        if self._lookup is None:
            self._lookup = TfPoseLookup(self.node, self.config.object_frame,
                                        list(self.config.contact_frames))
        return self._lookup

    def _tf_sources(self, config) -> None:
        from wrench_distribution.ros.tf import TfBufferPoses
        frames = list(config.contact_frames)
        lookup = self._tf_lookup('contact_source', 'topic, static')
        self.contacts = TfBufferPoses(lookup, [config.object_frame] * len(frames), frames)
        sensor_frames = config.params.get('sensor_frames')
        if sensor_frames:
            self.sensors = TfBufferPoses(lookup, frames, sensor_frames)

    def _orientation_source(self, params: dict) -> None:
        """Build the object's pose source in ``gravity_frame``: tf, or ``object_pose_topic``."""
        frame = params['gravity_frame']
        if params['object_orientation_source'] == 'topic':
            self.orientation = LiveHeldPoses(['object'], frame,
                                             seconds_to_ns(params['orientation_timeout']),
                                             description=f"topic {params['object_pose_topic']}")
            return
        from wrench_distribution.ros.tf import TfBufferPoses
        lookup = self._tf_lookup('object_orientation_source', 'topic')
        self.orientation = TfBufferPoses(lookup, [frame], [self.config.object_frame])

    def start(self, engine, publish: Callable) -> None:
        """Subscribe (topic) or start the retry timer (tf); check static poses now.

        :param engine: the node's ``AnalysisEngine``.
        :param publish: called with each ``Step`` the retry timer produces.
        :raises ConfigError: when the core rejects the static contacts.
        """
        self.engine = engine
        self.publish = publish
        if self.source == 'static':
            try:
                engine.prepare(self.contacts.poses)
            except ValueError as e:
                raise ConfigError("parameter 'contact_positions'/'contact_orientations': "
                                  f'the core rejects the static contacts: {e}') from None
        elif self.source == 'topic':
            self.node.create_subscription(PoseArray, self.config.topics['contact_poses'],
                                          self._on_poses, reliable_qos(10))
        if isinstance(self.orientation, HeldPoses):
            self.node.create_subscription(PoseStamped, self.config.params['object_pose_topic'],
                                          self._on_object_pose, reliable_qos(10))
        if self._lookup is not None:
            self.node.create_timer(TF_RETRY_PERIOD, self._retry)

    def _on_object_pose(self, msg: PoseStamped) -> None:
        frame = self.config.params['gravity_frame']
        values = pose_to_list(msg.pose)
        try:
            if msg.header.frame_id and not same_frame(msg.header.frame_id, frame):
                raise ValueError(f"frame '{msg.header.frame_id}' is not gravity_frame '{frame}'")
            pose = self.orientation.check('', [values[:3]], [values[3:]])
        except ValueError as e:
            self.diag.problem('rejected_object_pose', f'object pose rejected: {e}', ERROR,
                              'sensing')
            return
        self.orientation.add(stamp_to_ns(msg.header.stamp), pose)

    def _retry(self) -> None:
        self.publish(self.engine.retry(self.node.get_clock().now().nanoseconds))

    def _on_poses(self, msg: PoseArray) -> None:
        pos, quat = pose_array_to_arrays(msg)
        try:
            pose = self.contacts.check(msg.header.frame_id, pos, quat)
        except ValueError as e:
            self.rejected = f'contact poses rejected: {e}'
            self.diag.problem('rejected_contacts', self.rejected, ERROR)
            return
        self.rejected = None
        self.contacts.add(stamp_to_ns(msg.header.stamp), pose)

    def problem(self) -> Optional[str]:
        """Why the contacts cannot be used yet, or None.

        :return: a reason, or None.
        """
        if self.rejected is not None:
            return self.rejected
        if self.engine.cache.distributor is not None:
            return None
        if self.source == 'topic' and not len(self.contacts.stamps):
            return f'no contact poses yet (contact_source=topic, {self.contacts.description})'
        if self.source == 'tf' and self.contacts.problem:
            return f'no contact poses yet (contact_source=tf: {self.contacts.problem})'
        return None
