"""ROS node ``object_controller``: closes the demo loop around the object pose.

Subscribes ``object_twist`` and ``object_pose`` (from ``object_sim``); on each pose it
publishes ``desired_wrench`` (WrenchStamped, object frame, about the centre of mass,
stamped with the pose's stamp) from :class:`..control.object_controller.PoseController`, and the
scripted internal load on ``internal_load`` (Float64MultiArray whose layout label holds
the handle names joined by ``;``, e.g. ``squeeze(left,right)``) whenever it changes and
at ``internal_load_rate``, and the scheduled contact weights (``contact_weights_schedule``) on
``contact_weights``, labelled with the effectors they set, on change and at the same rate.
Run with ``use_sim_time:=true``.
"""
from __future__ import annotations

import sys

from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray

from wrench_distribution.config.handles import parse_schedule, parse_weights_schedule
from wrench_distribution.config.sim import CONTROLLER_PARAMS
from wrench_distribution.core.codec import ns_to_seconds, stamp_to_ns
from wrench_distribution.core.messages import fill_wrench, pose_to_list, vector_to_array
from wrench_distribution.core.spatial import quaternion_to_matrix as matrix_from_quaternion
from wrench_distribution.ros.conversions import make_internal_load_msg
from wrench_distribution.ros.delivery import RefusedSamples
from wrench_distribution.ros.parameters import declare_and_validate

from ..control.object_controller import controller_from, scheduled


class ObjectControllerNode(Node):
    """PD + feed-forward object controller with an internal-load schedule."""

    def __init__(self) -> None:
        super().__init__('object_controller')
        #: The samples the middleware refused, per topic (logged; the run goes on).
        self.refused = RefusedSamples(self)
        p, _ = declare_and_validate(self, CONTROLLER_PARAMS, 'object_controller')
        self.p = p
        self.schedule = parse_schedule(p['internal_load_schedule'])
        self.law = controller_from(p)
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.wrench_pub = self.create_publisher(WrenchStamped, 'desired_wrench', reliable)
        self.load_pub = self.create_publisher(Float64MultiArray, 'internal_load', reliable)
        self.weights_schedule = parse_weights_schedule(p['contact_weights_schedule'])
        self.weights_pub = self.create_publisher(Float64MultiArray, 'contact_weights', reliable) \
            if self.weights_schedule else None
        self.create_subscription(TwistStamped, 'object_twist', self._on_twist, reliable)
        self.create_subscription(PoseStamped, 'object_pose', self._on_pose, reliable)
        self.velocity = np.zeros(3)
        self.omega = np.zeros(3)
        self.msg = WrenchStamped()
        self.msg.header.frame_id = p['object_frame']
        #: per labelled stream ('internal load', 'contact weights'): the values last sent, when next due
        self.sent = {}

    def _on_twist(self, msg: TwistStamped) -> None:
        self.velocity = vector_to_array(msg.twist.linear)
        self.omega = vector_to_array(msg.twist.angular)

    def _on_pose(self, msg: PoseStamped) -> None:
        now = ns_to_seconds(stamp_to_ns(msg.header.stamp))
        pose = pose_to_list(msg.pose)
        rot = matrix_from_quaternion(pose[3:])
        self.publish_internal_load(now, msg.header.stamp)
        self.publish_weights(now)
        w = self.law.wrench(now, pose[:3], rot, self.velocity, self.omega)
        if not np.all(np.isfinite(w)):
            self.get_logger().error('non-finite desired wrench, not published',
                                    throttle_duration_sec=2.0)
            return
        self.msg.header.stamp = msg.header.stamp
        fill_wrench(self.msg.wrench, [float(v) for v in w])
        self.refused.publish(self.wrench_pub, self.msg)

    def publish_internal_load(self, now: float, stamp) -> None:
        """Publish the scheduled handles on change and at ``internal_load_rate``.

        :param now: sim time, s.
        :param stamp: the current stamp (unused by Float64MultiArray, kept for logs).
        """
        handles = scheduled(self.schedule, now)
        if handles:
            self._stream('internal load', self.load_pub, handles, now)

    def publish_weights(self, now: float) -> None:
        """Publish the scheduled contact weights on change and at ``internal_load_rate``.

        :param now: sim time, s.
        """
        if self.weights_pub is None:
            return
        weights = {}
        for when, entry in self.weights_schedule:
            if when <= now + 1e-9:
                weights.update(entry)
        if weights:
            self._stream('contact weights', self.weights_pub, weights, now)

    def _stream(self, what: str, publisher, values: dict, now: float) -> None:
        """Publish labelled values on change and at ``internal_load_rate`` (logged on change)."""
        last, due = self.sent.get(what, (None, -np.inf))
        if values == last and now < due:
            return
        if values != last:
            self.get_logger().info(f't={now:.3f} s: {what} ' + ', '.join(f'{k}={v:g}' for k, v in values.items()))
        msg = make_internal_load_msg(list(values))
        msg.data = [float(v) for v in values.values()]
        self.refused.publish(publisher, msg)
        self.sent[what] = (values, now + 1.0 / max(self.p['internal_load_rate'], 1e-3))


def main(args=None) -> int:
    """Run the controller node.

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: exit code (2 on invalid configuration).
    """
    from ...ros.runner import run_node
    return run_node(ObjectControllerNode, 'object_controller', args)


if __name__ == '__main__':
    sys.exit(main())
