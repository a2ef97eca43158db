"""Start a node, spin it on the fastest available executor, report bad configuration."""
import os
import sys
from typing import Callable, Optional

import rclpy

#: Environment variable choosing the executor: ``events`` (default when available) or
#: ``single`` (``SingleThreadedExecutor``).
EXECUTOR_ENV = 'WRENCH_DISTRIBUTION_EXECUTOR'


def make_executor(kind: Optional[str] = None):
    """Return an executor: rclpy's ``EventsExecutor`` if available, else single-threaded.

    :param kind: ``events`` or ``single``; None reads ``WRENCH_DISTRIBUTION_EXECUTOR``.
    :return: the executor instance.
    """
    kind = kind or os.environ.get(EXECUTOR_ENV, 'events')
    if kind == 'events':
        try:  # rclpy >= Jazzy; Humble has no EventsExecutor
            from rclpy.experimental import EventsExecutor
            return EventsExecutor()
        except Exception:
            pass
    from rclpy.executors import SingleThreadedExecutor
    return SingleThreadedExecutor()


def spin_until_shutdown(executor, node=None) -> None:
    """Spin until SIGINT/SIGTERM or ``rclpy.shutdown``.

    ``EventsExecutor`` needs care: its ``spin()`` and an untimed
    ``spin_until_future_complete`` do not return on SIGINT, and re-entering a spin
    costs a stall of tens of milliseconds. So the spin is one long timed call, and a
    0.2 s no-op timer gives Python a chance to raise ``KeyboardInterrupt`` (SIGINT);
    SIGTERM shuts the context down, which ends the spin with
    ``ExternalShutdownException``.

    :param executor: the executor, nodes already added.
    :param node: a node to own the signal-poll timer (None: no timer).
    """
    from rclpy.task import Future
    if node is not None:
        node.create_timer(SIGNAL_POLL_PERIOD, _noop)
    never = Future()
    while rclpy.ok():
        executor.spin_until_future_complete(never, timeout_sec=SPIN_SLICE)


#: Period of the timer that lets SIGINT through (s).
SIGNAL_POLL_PERIOD = 0.2
#: Length of one spin call (s); a re-entry costs a short stall with EventsExecutor.
SPIN_SLICE = 3600.0


def _noop() -> None:
    return None


def run_node(factory: Callable, name: str, args=None) -> int:
    """Create the node, spin until shutdown, and turn configuration errors into exit 2.

    :param factory: node class or factory taking no arguments.
    :param name: node name for messages.
    :param args: ROS command-line arguments.
    :return: exit code: 0 after a normal shutdown, 2 on invalid configuration.
    """
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
    from wrench_distribution.params import ConfigError
    try:
        from rclpy.executors import ExternalShutdownException
    except ImportError:  # pragma: no cover
        ExternalShutdownException = KeyboardInterrupt
    rclpy.init(args=args)
    node = None
    try:
        try:
            node = factory()
        except (ConfigError, InvalidParameterTypeException,
                InvalidParameterValueException) as e:
            print(f'[{name}] invalid configuration: {e}', file=sys.stderr, flush=True)
            return 2
        executor = make_executor()
        executor.add_node(node)
        try:
            spin_until_shutdown(executor, node)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        return 0
    finally:
        if node is not None:
            try:
                node.destroy_node()
            except Exception:
                pass
        rclpy.try_shutdown()
