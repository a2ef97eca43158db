#!/usr/bin/env python3
"""Per-message CPU cost of the two nodes' callbacks, in process.

Run from the repository root (ROS environment as in docs/contributing.md)::

    ROS_DOMAIN_ID=210 .venv/bin/python benchmarks/bench_messages.py [--samples 5000]

It builds the real nodes (rclpy, their publishers on DDS with no subscriber) and calls
their subscription callbacks directly with prepared messages, without an executor, so the
figure is the Python and rclpy work of one message: conversion, engine, publishing.

- **analyzer, per sample at 2 sensors**: ``wrench_analyzer`` with two static rigid contacts,
  two F/T readings per sample (the two callbacks), each sample analysed and published on the
  outputs that have a subscriber (a subscriber node in this process, never spun): the
  measured internal load alone (the closed loop of ``bench_relay.py --analyzer-rate``), then
  every output (its 4 x 2 wrenches, with the invariant state, the resultant, the internal
  load and the two norms);
- **distributor, new poses and a moving weight every tick**: the distributor of
  ``bench_relay.py --moving-contacts`` (four rigid contacts from the topic), its poses and
  desired-wrench callbacks each tick, the first contact's weight ramping;
- **distributor, per desired wrench with feedback**: ``wrench_distributor`` with four
  static rigid contacts (the configuration of ``bench_relay.py``), ``internal_load_feedback``
  on, one measured internal load per desired wrench (the worst case: measurements at the
  command rate), its four commands published to a subscriber; the measurement callback is
  timed apart.

The budget is set from the 1 kHz period: both nodes share 2 cores with DDS, a source and a
sink, so each may take at most 25 % of 1 ms (250 us) per message on one core. Figures are
medians of ``--rounds`` loops, in CPU time of this process (what the message costs the shared
cores; the budget's measure) and in wall time (which grows with other jobs' load);
``--profile FILE`` writes a cProfile of one more loop.
"""
from __future__ import annotations

import argparse
import cProfile
import itertools
import os
from pathlib import Path
import statistics
import sys
import time

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: 25 % of the 1 kHz period, per message (seconds).
BUDGET_S = 0.25e-3
ANALYZER_POSITIONS = [[0.2, 0.0, 0.0], [-0.2, 0.0, 0.0]]
DISTRIBUTOR_POSITIONS = [0.3, 0.2, 0.0, -0.3, 0.2, 0.0, -0.3, -0.2, 0.0, 0.3, -0.2, 0.0]


def _parameters(values: dict) -> list:
    from rclpy.parameter import Parameter
    return [Parameter(name, value=value) for name, value in values.items()]


def analyzer_node():
    """Return an analyzer on two static rigid contacts (tool weights, sensor offsets)."""
    from wrench_distribution.analyzer_node import AnalyzerNode
    return AnalyzerNode('bench_analyzer', parameter_overrides=_parameters({
        'effectors': ['a', 'b'], 'contact_source': 'static',
        'contact_positions': [x for p in ANALYZER_POSITIONS for x in p],
        'sensor_positions': [0.0, 0.0, -0.05] * 2, 'tool_masses': [0.3] * 2,
        'object_com': [0.0, 0.0, 0.02], 'object_mass': 3.0, 'max_age': 0.0}))


def distributor_node():
    """Return a distributor on four static rigid contacts, internal-load feedback on."""
    from wrench_distribution.distributor_node import DistributorNode
    return DistributorNode('bench_distributor', parameter_overrides=_parameters({
        'effectors': ['e0', 'e1', 'e2', 'e3'], 'contact_types': ['rigid'] * 4,
        'contact_source': 'static', 'contact_positions': DISTRIBUTOR_POSITIONS,
        'object_com': [0.01, -0.02, 0.015], 'input_timeout': 0.0,
        'internal_load_handles': ['squeeze(e0,e1)=10.0'],
        'internal_load_feedback': True, 'feedback_timeout': 1.0}))


def moving_loop(samples: int):
    """Return a callable of ``samples`` ticks of a distributor with new contacts every tick.

    The distributor of ``bench_relay.py --moving-contacts`` (four rigid contacts from the topic):
    each tick its poses callback takes new poses (:class:`relay.roles.ContactStream`), then its
    desired-wrench callback a wrench, while the first contact's weight ramps (a new target every
    0.5 s of ticks at 1 kHz).
    """
    from copy import deepcopy
    import rclpy
    from rclpy.serialization import serialize_message
    from wrench_distribution.distributor_node import DistributorNode
    from relay.fanout import distributor_params, FanOut
    from relay.roles import ContactStream
    fan = FanOut(4)
    node = DistributorNode('bench_moving', parameter_overrides=_parameters(distributor_params(fan, moving=True)))
    stream = ContactStream(rclpy.create_node('bench_contact_stream'), fan, 1000.0)
    ticks = []
    for _ in range(samples):
        stream.tick()
        ticks.append((serialize_message(stream.poses),  # the poses' subscription is raw, as the wrench's
                      deepcopy(stream.weights) if stream.ticks % 500 == 1 else None))
    wrenches = [serialize_message(msg) for msg in wrench_messages(samples, '', 5)]
    callbacks = {sub.topic_name: sub.callback for sub in node.subscriptions}
    on_poses, on_weights, on_wrench = (callbacks[topic] for topic in (
        '/contact_poses', '/contact_weights', '/desired_wrench'))

    def loop() -> None:
        for (poses, weights), wrench in zip(ticks, wrenches):
            on_poses(poses)
            if weights is not None:
                on_weights(weights)
            on_wrench(wrench)
    loop.node = node
    return loop


def relay_node():
    """Return a bare relay (``bench_relay.py``'s): one ``WrenchStamped`` in, four copies out."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from wrench_distribution.ros.qos import qos_from_name
    node = rclpy.create_node('bench_bare_relay')
    pubs = [node.create_publisher(WrenchStamped, f'r{i}/wrench_command', qos_from_name('reliable'))
            for i in range(4)]
    outs = [WrenchStamped() for _ in pubs]

    def relay(msg) -> None:
        for m, p in zip(outs, pubs):
            m.header = msg.header
            m.wrench = msg.wrench
            p.publish(m)
    node.relay = relay
    return node


def wrench_messages(count: int, frame: str, seed: int) -> list:
    """Return ``count`` stamped wrenches, 1 us apart, the last one now (system clock)."""
    import numpy as np
    from geometry_msgs.msg import WrenchStamped
    from wrench_distribution.core.codec import ns_to_stamp
    from builtin_interfaces.msg import Time
    rng = np.random.default_rng(seed)
    start = time.time_ns() - count * 1000
    out = []
    for k, row in enumerate(rng.normal(scale=5.0, size=(count, 6)).tolist()):
        msg = WrenchStamped()
        msg.header.frame_id = frame
        msg.header.stamp = ns_to_stamp(start + k * 1000, Time)
        f, t = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z, t.x, t.y, t.z = row
        out.append(msg)
    return out


_READERS = itertools.count()


def subscribe(node, topics: list, timeout: float = 10.0):
    """Return a node subscribed to ``topics`` (never spun) once the node's publishers match.

    :param node: the node under test.
    :param topics: its output topics to subscribe (resolved names).
    :param timeout: seconds to wait for matching.
    :return: the subscriber node (destroy it to unsubscribe).
    """
    import rclpy
    pubs = {p.topic_name: p for p in node.publishers}
    reader = rclpy.create_node(f'bench_reader_{next(_READERS)}')
    for topic in topics:
        reader.create_subscription(pubs[topic].msg_type, topic, lambda _msg: None, 10)
    end = time.monotonic() + timeout
    while time.monotonic() < end and not all(pubs[t].get_subscription_count() for t in topics):
        time.sleep(0.01)
    return reader


def output_topics(node) -> list:
    """Return the analyzer's output topics (everything it publishes but diagnostics)."""
    return [p.topic_name for p in node.publishers
            if p.topic_name not in ('/diagnostics', '/rosout', '/parameter_events')]


def timed(loop, rounds: int) -> tuple:
    """Median CPU and wall seconds of ``loop()`` over ``rounds`` calls (one warm-up first).

    A loop may carry a ``prepare`` attribute, run untimed before each call. CPU time
    (``time.process_time``: this process, every thread) is what a message costs the cores
    the nodes share; wall time also counts the time the scheduler gave to other processes.

    :return: ``(cpu seconds, wall seconds)``.
    """
    prepare = getattr(loop, 'prepare', lambda: None)
    prepare()
    loop()
    cpu, wall = [], []
    for _ in range(rounds):
        prepare()
        c0, t0 = time.process_time(), time.perf_counter()
        loop()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return statistics.median(cpu), statistics.median(wall)


def per_message(figures: tuple, samples: int) -> tuple:
    """Return ``(cpu, wall)`` seconds of a loop divided by its messages."""
    return tuple(x / samples for x in figures)


def analyzer_loop(node, samples: int):
    """Return a callable feeding ``samples`` synchronised samples of two sensors.

    The analyzer's F/T subscriptions are raw: each reading is handed over as the CDR bytes
    rclpy gives a raw subscription (serialized in ``prepare``, outside the timing).
    """
    from rclpy.serialization import serialize_message
    msgs = [wrench_messages(samples, '', seed) for seed in (1, 2)]
    payloads = [[b''] * samples, [b''] * samples]

    def prepare() -> None:
        # fresh stamps each loop, 1 us apart and in the past: the engine drops samples older
        # than the last one and readings stamped ahead of the node clock
        from wrench_distribution.core.codec import ns_to_stamp
        from builtin_interfaces.msg import Time
        base = time.time_ns() - samples * 1000
        for k in range(samples):
            stamp = ns_to_stamp(base + k * 1000, Time)
            for stream in (0, 1):
                msgs[stream][k].header.stamp = stamp
                payloads[stream][k] = serialize_message(msgs[stream][k])

    def loop() -> None:
        on_ft = node._on_ft
        first, second = payloads
        for k in range(samples):
            on_ft(0, first[k])
            on_ft(1, second[k])
    loop.prepare = prepare
    return loop


def relay_loop(node, samples: int):
    """Return a callable relaying ``samples`` desired wrenches."""
    msgs = wrench_messages(samples, '', 4)

    def loop() -> None:
        relay = node.relay
        for msg in msgs:
            relay(msg)
    return loop


def distributor_loops(node, samples: int) -> tuple:
    """Return ``(desired-wrench loop, measurement loop)`` over ``samples`` messages.

    The desired-wrench subscription is raw, as the analyzer's: each desired wrench is handed
    over as its CDR bytes (serialized here, outside the timing).
    """
    from rclpy.serialization import serialize_message
    from wrench_distribution.ros.conversions import make_internal_load_msg
    msgs = [serialize_message(msg) for msg in wrench_messages(samples, '', 3)]
    measured = make_internal_load_msg(node._engine.basis_names)
    values = [0.0] * len(node._engine.basis_names)
    values[0] = 9.0
    measured.data = values

    def wrenches() -> None:
        on_wrench, on_measured = node._on_wrench, node._on_measured
        for msg in msgs:
            on_measured(measured)
            on_wrench(msg)

    def measurements() -> None:
        on_measured = node._on_measured
        for _ in range(samples):
            on_measured(measured)
    return wrenches, measurements


def print_rows(rows: list, args) -> None:
    """Print the figures (label, (CPU s, wall s) per message) against the budget."""
    print(f'# {args.samples} messages per loop, median of {args.rounds} loops; budget '
          f'{BUDGET_S * 1e6:.0f} us per message (25 % of the 1 kHz period)')
    print('| path | CPU us per message | share of the budget (CPU) | wall us per message |')
    print('|---|---|---|---|')
    for label, (cpu, wall) in rows:
        print(f'| {label} | {cpu * 1e6:.1f} | {cpu / BUDGET_S * 100:.0f} % | {wall * 1e6:.1f} |')


def analyzer_only(args) -> int:
    """Measure the analyzer's two rows alone, as :func:`main` does, and print them.

    It runs on older trees too (``PYTHONPATH``): their figures interleaved with today's.
    """
    import gc
    import rclpy
    rclpy.init()
    print(f'# load average at start: {os.getloadavg()}')
    try:
        analyzer = analyzer_node()
        gc.freeze()  # as the nodes' entry points do after start-up
        a_loop = analyzer_loop(analyzer, args.samples)
        readers = [subscribe(analyzer, ['/measured/internal_load'])]
        loop_s = per_message(timed(a_loop, args.rounds), args.samples)
        readers.append(subscribe(analyzer, output_topics(analyzer)))
        analyzer_s = per_message(timed(a_loop, args.rounds), args.samples)
        print_rows([('analyzer, per sample at 2 sensors (2 readings; the measured internal load '
                     'subscribed, as in the loop)', loop_s),
                    ('analyzer, per sample at 2 sensors (2 readings; every output subscribed: 12 '
                     'messages, the invariant state computed)', analyzer_s)], args)
        for node in readers + [analyzer]:
            node.destroy_node()
    finally:
        rclpy.try_shutdown()
        print(f'# load average at end: {os.getloadavg()}')
    return 0


def main(argv=None) -> int:
    """Measure both nodes and print the figures against the budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--samples', type=int, default=5000, help='messages per loop')
    parser.add_argument('--rounds', type=int, default=5, help='loops (median)')
    parser.add_argument('--profile', default='', help='write a cProfile of one more loop of '
                        'each node to FILE.analyzer and FILE.distributor')
    parser.add_argument('--analyzer-only', action='store_true', help="the analyzer's rows alone")
    args = parser.parse_args(argv)
    if args.analyzer_only:
        return analyzer_only(args)
    import gc
    import rclpy
    rclpy.init()
    print(f'# load average at start: {os.getloadavg()}')
    try:
        analyzer = analyzer_node()
        distributor = distributor_node()
        relay = relay_node()
        readers = [subscribe(node, [p.topic_name for p in node.publishers
                                    if p.topic_name.endswith('wrench_command')])
                   for node in (distributor, relay)]
        gc.freeze()  # as the nodes' entry points do after start-up
        a_loop = analyzer_loop(analyzer, args.samples)
        d_loop, m_loop = distributor_loops(distributor, args.samples)
        readers.append(subscribe(analyzer, ['/measured/internal_load']))
        loop_s = per_message(timed(a_loop, args.rounds), args.samples)
        readers.append(subscribe(analyzer, output_topics(analyzer)))
        analyzer_s = per_message(timed(a_loop, args.rounds), args.samples)
        measured_s = per_message(timed(m_loop, args.rounds), args.samples)
        both_s = per_message(timed(d_loop, args.rounds), args.samples)
        relay_s = per_message(timed(relay_loop(relay, args.samples), args.rounds), args.samples)
        moving = moving_loop(args.samples)
        readers.append(subscribe(moving.node, [p.topic_name for p in moving.node.publishers
                                               if p.topic_name.endswith('wrench_command')]))
        moving_s = per_message(timed(moving, args.rounds), args.samples)
        if args.profile:
            for prepare in (getattr(a_loop, 'prepare', None), getattr(d_loop, 'prepare', None)):
                if prepare is not None:
                    prepare()
            cProfile.runctx('a_loop()', globals(), {'a_loop': a_loop}, args.profile + '.analyzer')
            cProfile.runctx('d_loop()', globals(), {'d_loop': d_loop}, args.profile + '.distributor')
        rows = [('analyzer, per sample at 2 sensors (2 readings; the measured internal load '
                 'subscribed, as in the loop)', loop_s),
                ('analyzer, per sample at 2 sensors (2 readings; every output subscribed: 12 '
                 'messages, the invariant state computed)', analyzer_s),
                ('distributor + feedback, per desired wrench (4 commands published)',
                 tuple(b - m for b, m in zip(both_s, measured_s))),
                ('distributor + feedback, per measured internal load', measured_s),
                ('distributor + feedback, desired wrench + one measurement', both_s),
                ('bare relay (bench_relay.py), per input (4 copies published)', relay_s),
                ('distributor, new poses and a moving weight every tick (bench_relay.py '
                 '--moving-contacts): poses + desired wrench', moving_s)]
        print_rows(rows, args)
        for node in readers + [analyzer, distributor, relay, moving.node]:
            node.destroy_node()
    finally:
        rclpy.try_shutdown()
        print(f'# load average at end: {os.getloadavg()}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
