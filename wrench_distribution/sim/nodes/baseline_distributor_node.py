"""ROS node ``baseline_distributor``: the Moore-Penrose distribution ``h = pinv(G) h_o``.

A drop-in stand-in for the distributor in the demo's comparison runs (``--baseline
moore_penrose``): same inputs (``desired_wrench``, ``contact_poses``), same outputs
(``<effector>/wrench_command``, contact frame about the contact point). It ignores any
prescribed internal load; the pseudo-inverse adds its own wherever the centre of mass is
away from what the Euclidean metric assumes. Uses ``core.baselines.moore_penrose``.
"""
from __future__ import annotations

import sys

from geometry_msgs.msg import PoseArray, WrenchStamped
import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from ...config.sim import BASELINE_PARAMS
from ...core.baselines import moore_penrose
from ...core.messages import fill_wrench, pose_array_to_arrays, wrench_to_array
from ...core.spatial import quaternion_to_matrix
from ...ros.delivery import RefusedSamples
from ...ros.parameters import declare_and_validate


class BaselineDistributorNode(Node):
    """Moore-Penrose distributor for comparisons."""

    def __init__(self) -> None:
        super().__init__('baseline_distributor')
        #: The samples the middleware refused, per topic (logged; the run goes on).
        self.refused = RefusedSamples(self)
        p, _ = declare_and_validate(self, BASELINE_PARAMS, 'baseline_distributor')
        self.effectors = list(p['effectors'])
        self.types = list(p['contact_types']) or ['rigid'] * len(self.effectors)
        self.com = np.array(p['object_com'], dtype=float)
        self.r = None
        self.rot_t = None
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.pubs = [self.create_publisher(WrenchStamped, f'{e}/wrench_command', reliable)
                     for e in self.effectors]
        self.msgs = [WrenchStamped() for _ in self.effectors]
        for e, m in zip(self.effectors, self.msgs):
            m.header.frame_id = f'{e}_contact'
        self.create_subscription(PoseArray, 'contact_poses', self._on_contacts, reliable)
        self.create_subscription(WrenchStamped, 'desired_wrench', self._on_wrench, reliable)

    def _on_contacts(self, msg: PoseArray) -> None:
        if len(msg.poses) != len(self.effectors):
            self.get_logger().error(f'contact_poses has {len(msg.poses)} poses, expected '
                                    f'{len(self.effectors)}', throttle_duration_sec=2.0)
            return
        pos, quat = pose_array_to_arrays(msg)
        self.r = pos - self.com
        self.rot_t = np.swapaxes(quaternion_to_matrix(quat), -1, -2)

    def _on_wrench(self, msg: WrenchStamped) -> None:
        if self.r is None:
            self.get_logger().warning('no contact poses yet', throttle_duration_sec=2.0)
            return
        h = wrench_to_array(msg.wrench)
        if not np.all(np.isfinite(h)):
            return
        obj = moore_penrose(self.r, self.types, h)
        force = np.einsum('nij,nj->ni', self.rot_t, obj[:, :3])
        torque = np.einsum('nij,nj->ni', self.rot_t, obj[:, 3:])
        for pub, m, row in zip(self.pubs, self.msgs, np.concatenate([force, torque], axis=1)):
            m.header.stamp = msg.header.stamp
            fill_wrench(m.wrench, row.tolist())
            self.refused.publish(pub, m)


def main(args=None) -> int:
    """Run the baseline distributor node.

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: exit code (2 on invalid configuration).
    """
    from ...ros.runner import run_node
    return run_node(BaselineDistributorNode, 'baseline_distributor', args)


if __name__ == '__main__':
    sys.exit(main())
