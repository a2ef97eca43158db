"""Benchmark: what being a managed node adds to each message of the distributor.

On a message's path, a managed node differs from the plain node it was in two places: the
input's callback goes through the activity gate (:meth:`ManagedNode.when_active`), and each
command goes out on a lifecycle publisher (rclpy's ``LifecyclePublisher``: a check that it is
enabled, then the plain publish). In one process, interleaved over rounds, this times a plain
publisher against a lifecycle publisher (``WrenchStamped``, no subscriber), a callback called
directly against through the gate, and, for scale, the active distributor's whole handling of
one serialized desired wrench (its subscription's callback: decode, solve, two commands
published). Before timing, the distributor's commands are checked to arrive at a subscriber.
Figures are medians over the rounds (ns of this thread's CPU per call; the paths run in one
order, then the reverse). The two publishes over DDS differ by rclpy's check alone, which their spread hides
on a loaded machine, so the check is also timed around the same append as the gate; the last
line gives what a message gains (the gate, and the check once per command) against the whole
message.

Usage::

    .venv/bin/python benchmarks/bench_lifecycle.py [--calls 20000] [--rounds 7]
"""
from __future__ import annotations

import argparse
import statistics
import time

from rclpy.lifecycle import SimpleManagedEntity

EFFECTORS = ('left', 'right')
PARAMS = {'effectors': list(EFFECTORS), 'contact_source': 'static', 'object_frame': 'object',
          'contact_positions': [0.0, 0.3, 0.0, 0.0, -0.3, 0.0], 'input_timeout': 0.0,
          'diagnostics_period': 10.0}
WHOLE = 'desired wrench, whole (active distributor)'
CHECK = "lifecycle check around the append (rclpy's when_enabled)"


def per_call_ns(call, calls: int) -> float:
    """Return the mean CPU time of this thread per ``call()`` over ``calls`` calls (ns).

    The thread's CPU time, not the wall clock: on a shared machine the wall clock counts the
    time the process waits for a core, which is no part of the path's cost.
    """
    start = time.thread_time_ns()
    for _ in range(calls):
        call()
    return (time.thread_time_ns() - start) / calls


def desired_wrenches(count: int) -> list:
    """Return ``count`` serialized desired wrenches, stamped from now 1 ns apart (none stale)."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import serialize_message
    msg = WrenchStamped()
    msg.header.frame_id = 'object'
    msg.wrench.force.z, msg.wrench.torque.x = 15.0, 0.3
    now = time.time_ns()
    out = []
    for k in range(count):
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now + k, 1_000_000_000)
        out.append(serialize_message(msg))
    return out


def distributor(context):
    """Return an active distributor on two static contacts, in ``context``."""
    from wrench_distribution.config import DISTRIBUTOR_PARAMS
    from wrench_distribution.distributor_node import DistributorNode
    from wrench_distribution.ros.parameters import typed_parameter
    specs = {s.name: s for s in DISTRIBUTOR_PARAMS}
    return DistributorNode(context=context, start_parameter_services=False, parameter_overrides=[
        typed_parameter(specs[name], value) for name, value in PARAMS.items()])


def check_commands_arrive(context, node, handle) -> None:
    """Raise unless the distributor's commands for a few desired wrenches reach a subscriber."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from geometry_msgs.msg import WrenchStamped
    listener = rclpy.create_node('bench_lifecycle_listener', context=context)
    got = []
    listener.create_subscription(WrenchStamped, f'{EFFECTORS[0]}/wrench_command', got.append, 10)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(listener)
    deadline = time.monotonic() + 10.0
    while not got and time.monotonic() < deadline:
        for payload in desired_wrenches(3):
            handle(payload)
        executor.spin_once(timeout_sec=0.2)
    executor.shutdown()
    listener.destroy_node()
    if not got:
        raise RuntimeError('the distributor published no command: nothing to measure')


class _Checked(SimpleManagedEntity):
    """rclpy's lifecycle check (``when_enabled``, as on ``LifecyclePublisher.publish``) around an append."""

    def __init__(self, sink: list) -> None:
        super().__init__()
        self.sink = sink

    @SimpleManagedEntity.when_enabled
    def publish(self, msg) -> None:
        self.sink.append(msg)


def measure(args) -> dict:
    """Time the four paths, interleaved, ``args.rounds`` times; return name -> ns per call."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    context = rclpy.Context()
    rclpy.init(context=context)
    node = distributor(context)
    try:
        handle = next(s for s in node.subscriptions if s.topic_name == '/desired_wrench').callback
        check_commands_arrive(context, node, handle)
        plain = node.create_publisher(WrenchStamped, 'bench/plain', 10)
        managed = node.create_lifecycle_publisher(WrenchStamped, 'bench/managed', 10)
        managed.on_activate(None)  # as the node's activate does
        msg, sink = WrenchStamped(), []
        gated = node.when_active(sink.append)
        checked = _Checked(sink)
        checked.on_activate(None)
        paths = {'publish, plain': lambda: plain.publish(msg),
                 'publish, lifecycle': lambda: managed.publish(msg),
                 'callback, direct': lambda: sink.append(msg),
                 'callback, gated': lambda: gated(msg),
                 CHECK: lambda: checked.publish(msg)}
        rows = {name: [] for name in (*paths, WHOLE)}
        for round_index in range(args.rounds):
            order = list(paths) if round_index % 2 == 0 else list(reversed(paths))
            for name in order:  # each pair in both orders over the rounds
                rows[name].append(per_call_ns(paths[name], args.calls))
                sink.clear()
            payloads = iter(desired_wrenches(args.calls))
            rows[WHOLE].append(per_call_ns(lambda: handle(next(payloads)), args.calls))
        return {name: statistics.median(values) for name, values in rows.items()}
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--calls', type=int, default=20000, help='calls per path and round')
    parser.add_argument('--rounds', type=int, default=7, help='interleaved rounds (medians)')
    args = parser.parse_args()
    ns = measure(args)
    print('| path | ns per call (median) |\n|---|---|')
    for name, value in ns.items():
        print(f'| {name} | {value:.0f} |')
    added = (ns['callback, gated'] - ns['callback, direct']
             + len(EFFECTORS) * (ns[CHECK] - ns['callback, direct']))
    whole = ns[WHOLE]
    print(f'\nadded per desired wrench (the gate, {len(EFFECTORS)} lifecycle checks): {added:.0f} ns, '
          f'{added / whole:.4f} of the whole message ({whole / 1000:.1f} us)')


if __name__ == '__main__':
    main()
