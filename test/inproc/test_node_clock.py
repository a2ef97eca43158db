"""NodeClock: a node's clock in nanoseconds, as rclpy's own ``Clock.now()`` reads it.

Without ``use_sim_time`` the reading lies between two of rclpy's (the same clock); under
``use_sim_time`` it is rclpy's ROS time (zero before any ``/clock``), never the system clock;
``use_sim_time`` set at runtime, either way, is followed from the next reading.
"""
import pytest
from rclpy.parameter import Parameter

from inproc import ros_context
from wrench_distribution.ros.node_clock import NodeClock

pytestmark = [pytest.mark.ros, pytest.mark.inproc]


@pytest.mark.parametrize('sim', [False, True])
def test_the_reading_is_rclpys_clock(sim):
    with ros_context() as context:
        import rclpy
        node = rclpy.create_node('node_clock_test', context=context, parameter_overrides=[
            Parameter('use_sim_time', value=sim)])
        try:
            clock = node.get_clock()
            reader = NodeClock(clock)
            for _ in range(100):
                before = clock.now().nanoseconds
                now = reader.now_ns()
                after = clock.now().nanoseconds
                assert before <= now <= after
                assert isinstance(now, int)
            if sim:
                assert now == 0  # no /clock yet: ROS time, not the system clock
            else:
                assert now > 1_600_000_000 * 10**9
        finally:
            node.destroy_node()


def _agrees(clock, reader, sim: bool) -> None:
    for _ in range(20):
        before = clock.now().nanoseconds
        now = reader.now_ns()
        assert before <= now <= clock.now().nanoseconds
    assert (now == 0) if sim else (now > 1_600_000_000 * 10**9)


def test_use_sim_time_set_at_runtime_is_followed():
    with ros_context() as context:
        import rclpy
        node = rclpy.create_node('node_clock_switch', context=context)
        try:
            clock = node.get_clock()
            reader = NodeClock(clock)
            _agrees(clock, reader, False)
            for sim in (True, False, True):
                assert node.set_parameters([Parameter('use_sim_time', value=sim)])[0].successful
                _agrees(clock, reader, sim)
        finally:
            node.destroy_node()
