"""Readers: which outputs have a subscriber, counted at most once per period (real rclpy publishers).

The analyzer publishes an output only while it is read; the counts are rclpy's own
``get_subscription_count`` on real publishers matched to real subscriptions of this
process's DDS participant, so a reader that appears is seen after at most one period and an
output nobody reads stays unread.
"""
import time

import pytest
from std_msgs.msg import Float64

from inproc import ros_context
from wrench_distribution.ros.readers import Readers, READERS_PERIOD_NS

pytestmark = [pytest.mark.ros, pytest.mark.inproc]


def _counting(pub, calls: list) -> None:
    """Count the calls of one publisher's ``get_subscription_count`` (the real one answers)."""
    count = pub.get_subscription_count

    def counted() -> int:
        calls.append(pub)
        return count()
    pub.get_subscription_count = counted


def _matched(pub, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pub.get_subscription_count() > 0:
            return True
        time.sleep(0.005)
    return False


def test_counts_are_taken_once_per_period_and_follow_readers_that_come_and_go():
    with ros_context() as context:
        import rclpy
        node = rclpy.create_node('readers_test', context=context)
        try:
            read_pub = node.create_publisher(Float64, 'readers_test/read', 10)
            unread_pub = node.create_publisher(Float64, 'readers_test/unread', 10)
            calls: list = []
            for pub in (read_pub, unread_pub):
                _counting(pub, calls)
            slow = Readers([read_pub, unread_pub], 3_600_000_000_000)
            assert slow.read() == {read_pub: False, unread_pub: False}
            assert len(calls) == 2  # the first read counts every output
            subscription = node.create_subscription(Float64, 'readers_test/read',
                                                    lambda _msg: None, 10)
            assert _matched(read_pub)
            calls.clear()
            assert slow.read() == {read_pub: False, unread_pub: False}  # the period's count
            assert calls == []

            period_ns = 50_000_000
            fast = Readers([read_pub, unread_pub], period_ns)
            assert fast.read() == {read_pub: True, unread_pub: False}
            calls.clear()
            for _ in range(100):
                assert fast.read()[read_pub] is True
            assert len(calls) <= 2  # at most one more count, when the period ended meanwhile
            node.destroy_subscription(subscription)
            end = time.monotonic() + 5.0
            while read_pub.get_subscription_count() and time.monotonic() < end:
                time.sleep(0.005)
            time.sleep(period_ns * 1.2e-9)
            assert fast.read() == {read_pub: False, unread_pub: False}  # the reader left
            assert READERS_PERIOD_NS == Readers([]).period_ns
        finally:
            node.destroy_node()
