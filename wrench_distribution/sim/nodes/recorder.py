"""A small in-process bag recorder: rclpy raw subscriptions written by ``rosbags`` (mcap)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

#: ROS type names (rosbags form) of the message classes the demo records.
TYPE_NAMES = {
    'WrenchStamped': 'geometry_msgs/msg/WrenchStamped',
    'PoseArray': 'geometry_msgs/msg/PoseArray',
    'PoseStamped': 'geometry_msgs/msg/PoseStamped',
    'TwistStamped': 'geometry_msgs/msg/TwistStamped',
    'Float64MultiArray': 'std_msgs/msg/Float64MultiArray',
    'DiagnosticArray': 'diagnostic_msgs/msg/DiagnosticArray',
}


class BagRecorder(Node):
    """Subscribe to topics with ``raw=True`` and write the CDR bytes unchanged into a bag.

    Timestamps are the node's clock at reception (sim time when ``use_sim_time`` is set).

    :param path: bag directory to create (must not exist).
    :param topics: topic name -> message class.
    :param node_name: node name.
    """

    def __init__(self, path: Path, topics: Mapping[str, type], node_name: str = 'demo_recorder'
                 ) -> None:
        from rclpy.parameter import Parameter
        super().__init__(node_name, parameter_overrides=[
            Parameter('use_sim_time', Parameter.Type.BOOL, True)])
        from rosbags.rosbag2 import StoragePlugin, Writer
        from ...bag.reader import default_typestore
        typestore = default_typestore()
        self.writer = Writer(Path(path), version=8, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        self.counts = {}
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=200,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        for topic, cls in topics.items():
            name = TYPE_NAMES[cls.__name__]
            conn = self.writer.add_connection('/' + topic.lstrip('/'), name,
                                              typestore=typestore)
            self.counts[topic] = 0
            self.create_subscription(
                cls, topic, lambda data, c=conn, t=topic: self._write(c, t, data), qos, raw=True)
        self.closed = False

    def _write(self, connection, topic: str, data: bytes) -> None:
        if self.closed:
            return
        self.writer.write(connection, self.get_clock().now().nanoseconds, data)
        self.counts[topic] += 1

    def close(self) -> None:
        """Finish the bag (idempotent)."""
        if not self.closed:
            self.closed = True
            self.writer.close()
