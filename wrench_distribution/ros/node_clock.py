"""A node's ROS clock read as integer nanoseconds on the message path.

rclpy's ``Clock.now()`` builds a ``Time`` (about 5 us a call, twice a sample in the analyzer).
While ROS time is not active (no ``use_sim_time``, or no time source), rcl reads the ROS clock
from the system clock, ``CLOCK_REALTIME``, the clock ``time.time_ns`` reads: the same value
in a tenth of a microsecond. Under ROS time the reading is rclpy's own. Whether ROS time is
active is followed with rclpy's jump callback on a clock change, called as it changes.
"""
import time

from rclpy.clock import ClockChange, JumpThreshold, ROSClock


class NodeClock:
    """Read a node clock in nanoseconds (module docstring).

    :param clock: the node's clock (``node.get_clock()``).
    """

    def __init__(self, clock) -> None:
        self.clock = clock
        self._jumps = None
        self._system = False  # the reading is the system clock's
        if isinstance(clock, ROSClock):
            self._jumps = clock.create_jump_callback(
                JumpThreshold(min_forward=None, min_backward=None, on_clock_change=True),
                post_callback=self._on_jump)
            self._system = not clock.ros_time_is_active

    def _on_jump(self, jump) -> None:
        """Follow ROS time activated or deactivated (rclpy's jump callback)."""
        if jump.clock_change == ClockChange.ROS_TIME_ACTIVATED:
            self._system = False
        elif jump.clock_change == ClockChange.ROS_TIME_DEACTIVATED:
            self._system = True

    def now_ns(self) -> int:
        """Return the clock now (ns): the system clock's reading unless ROS time is active."""
        if self._system:
            return time.time_ns()
        return self.clock.now().nanoseconds
