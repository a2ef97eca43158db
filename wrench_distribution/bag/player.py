"""A small rosbag2 player for machines without ``ros2 bag play`` (rosbags + rclpy).

``python -m wrench_distribution.bag.player BAG [--rate R]`` publishes ``/clock`` from
the recorded receive times and re-publishes every recorded topic whose message
type is importable, paced at ``rate`` times real time; it stops by itself at the
end of the bag. A sample the middleware refuses (:mod:`wrench_distribution.ros.delivery`) is
logged and counted, the rest of the bag still plays, and the exit code is 1. On a robot use
``ros2 bag play BAG --clock`` instead.

This is the only module of :mod:`wrench_distribution.bag` that imports ROS.
"""
from __future__ import annotations

import argparse
import importlib
from pathlib import Path
import sys
import time

from builtin_interfaces.msg import Time
import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from wrench_distribution.core.codec import ns_to_seconds, ns_to_stamp, seconds_to_ns
from wrench_distribution.ros.delivery import RefusedSamples

from .errors import BagError
from .reader import BagReader


def message_class(msgtype: str):
    """Return the rclpy message class of ``pkg/msg/Name``, or None when not installed."""
    pkg, _, name = msgtype.rpartition('/')
    try:
        return getattr(importlib.import_module(pkg.replace('/', '.')), name)
    except (ImportError, AttributeError):
        return None


def _qos(topic: str, depth: int) -> QoSProfile:
    durability = (DurabilityPolicy.TRANSIENT_LOCAL if topic == '/tf_static'
                  else DurabilityPolicy.VOLATILE)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE, durability=durability)


class BagPlayer(Node):
    """Publishes a bag's messages and ``/clock``.

    :param rate: playback speed factor (2.0 plays twice as fast).
    :param clock_period: bag-time period of ``/clock`` messages (s); a clock message is
        also sent just before the first message after each period.
    :param context: the rclpy context (None: the default one).
    """

    def __init__(self, bag: BagReader, rate: float = 1.0, clock_period: float = 0.01,
                 depth: int = 1000, topics: list[str] | None = None, context=None) -> None:
        super().__init__('wrench_bag_player', context=context)
        self.bag = bag
        self.rate = rate
        self.clock_period_ns = seconds_to_ns(clock_period)
        #: The samples the middleware refused, per topic.
        self.refused = RefusedSamples(self)
        self.clock = self.create_publisher(Clock, '/clock', 10)
        self.pubs = {}
        for topic, msgtype in sorted(bag.topics.items()):
            if (topics and topic not in topics) or topic == '/clock':
                continue  # a recorded /clock is replaced by the one made here
            cls = message_class(msgtype)
            if cls is None:
                self.get_logger().warning(f'skipping {topic}: type {msgtype} is not installed')
                continue
            self.pubs[topic] = self.create_publisher(cls, topic, _qos(topic, depth))

    def wait_for_subscribers(self, topics: list[str], timeout: float) -> bool:
        """Wait until every topic in ``topics`` has a subscriber (or the timeout)."""
        pubs = dict(self.pubs, **{'/clock': self.clock})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(pubs[t].get_subscription_count() > 0 for t in topics if t in pubs):
                return True
            time.sleep(0.05)
        return False

    def _publish_clock(self, ns: int) -> None:
        msg = Clock(clock=ns_to_stamp(ns, Time))
        self.refused.publish(self.clock, msg)

    def play(self) -> int:
        """Play the whole bag; return the number of messages the middleware took (:attr:`refused`: the others)."""
        start_wall = None
        start_bag = None
        last_clock = None
        count = 0
        for topic, recv, raw in self.bag.raw_messages(list(self.pubs)):
            if start_wall is None:
                start_wall, start_bag = time.monotonic(), recv
            target = start_wall + ns_to_seconds(recv - start_bag) / self.rate
            delay = target - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if last_clock is None or recv - last_clock >= self.clock_period_ns:
                self._publish_clock(recv)
                last_clock = recv
            count += self.refused.publish(self.pubs[topic], bytes(raw))
        if last_clock is not None:
            self._publish_clock(max(last_clock, recv))
        return count


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(prog='python -m wrench_distribution.bag.player',
                                     description=__doc__.splitlines()[0])
    parser.add_argument('bag', type=Path)
    parser.add_argument('--rate', type=float, default=1.0, help='speed factor (default 1)')
    parser.add_argument('--clock-period', type=float, default=0.01,
                        help='bag-time period of /clock messages in s (default 0.01)')
    parser.add_argument('--topics', nargs='*', help='play only these topics')
    parser.add_argument('--wait-for', nargs='*', default=[], metavar='TOPIC',
                        help='wait until these topics have a subscriber before playing')
    parser.add_argument('--wait-timeout', type=float, default=10.0)
    parser.add_argument('--start-delay', type=float, default=0.0, metavar='S',
                        help='seconds to wait after --wait-for before the first message (lets '
                             'the subscribers match the publishers in turn)')
    parser.add_argument('--linger', type=float, default=0.5,
                        help='seconds to stay up after the last message (delivery)')
    args = parser.parse_args(argv)
    if args.rate <= 0:
        sys.stderr.write('error: --rate must be positive\n')
        return 2
    rclpy.init()
    try:
        with BagReader(args.bag) as bag:
            node = BagPlayer(bag, rate=args.rate, clock_period=args.clock_period,
                             topics=args.topics)
            try:
                if args.wait_for and not node.wait_for_subscribers(args.wait_for,
                                                                   args.wait_timeout):
                    node.get_logger().warning('no subscriber on some of '
                                              f'{args.wait_for}; playing anyway')
                time.sleep(max(args.start_delay, 0.0))
                n = node.play()
                time.sleep(args.linger)
                node.get_logger().info(f'played {n} messages from {args.bag}')
                if node.refused.total:
                    sys.stderr.write(f'error: {args.bag} was not played whole: {node.refused.summary()}\n')
                    return 1
            finally:
                node.destroy_node()
    except BagError as err:
        sys.stderr.write(f'error: {err}\n')
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
