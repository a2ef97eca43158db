"""A node's ROS clock read as integer nanoseconds on the message path.

rclpy's ``Clock.now()`` builds a ``Time`` (about 5 us a call, twice a sample in the analyzer).
While ROS time is not active (no ``use_sim_time``, or no time source), rcl reads the ROS clock
from the system clock, ``CLOCK_REALTIME``, the clock ``time.time_ns`` reads: the same value
in a tenth of a microsecond. Under ROS time the reading is rclpy's own.
"""
import time

from rclpy.clock import ROSClock


class NodeClock:
    """Read a node clock in nanoseconds (module docstring).

    :param clock: the node's clock (``node.get_clock()``).
    """

    def __init__(self, clock) -> None:
        self.clock = clock
        self._ros = isinstance(clock, ROSClock)

    def now_ns(self) -> int:
        """Return the clock now (ns): the system clock's reading unless ROS time is active."""
        if self._ros and not self.clock.ros_time_is_active:
            return time.time_ns()
        return self.clock.now().nanoseconds
