"""The relay benchmark's process roles: each runs in its own process, started by the orchestrator.

``source`` publishes the desired wrench at a fixed rate; ``relay`` is the bare rclpy relay (one
input, one copy per effector); ``sink`` records when each input's outputs arrived; ``measure``
publishes a measured internal load (the feedback runs without the analyzer); ``ft`` publishes
two F/T streams on their own clock (the whole loop); ``probe`` and ``talker`` make the start-up
trials. The orchestrator (:mod:`.runs`) starts them as ``bench_relay.py --role <role>``.
"""
import json
import os
import time
from typing import Iterator

import numpy as np
from scipy.spatial.transform import Rotation

from wrench_distribution.core.codec import NS_PER_S, seconds_to_ns, stamp_to_ns

from .fanout import (COM, EARLIEST_WINDOW_S, FanOut, IN_TOPIC, qos, READY_WAIT_S, STARTUP_MESSAGES,
                     STARTUP_TOPIC)


def stamp(msg, ns: int) -> None:
    """Stamp a message's header with ``ns`` (system clock) in place, without a new message."""
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, NS_PER_S)


def paced(rate: float, t0: float, seconds: float) -> Iterator[int]:
    """Yield 0, 1, 2, ... each at its deadline ``t0 + k / rate`` (``perf_counter``), for ``seconds``.

    Absolute deadlines: a late tick does not delay the next ones. No busy wait: the publishing
    role must not take the CPU from the processes it measures.

    :param rate: ticks per second.
    :param t0: the first deadline.
    :param seconds: how long after ``t0`` ticks are yielded.
    """
    period = 1.0 / rate
    k = 0
    while time.perf_counter() < t0 + seconds:
        delay = t0 + k * period - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        yield k
        k += 1


def _until_stopped(args) -> float:
    """Seconds a role that publishes until it is stopped may run: beyond any run's window."""
    return args.duration + args.settle + READY_WAIT_S + 10.0


def role_relay(args) -> None:
    """Bare relay: copy the input to four outputs, on the runner's executor and spin path.

    With ``--moving-contacts`` it also takes the messages the moving distributor takes (the
    contact poses and weights, as bytes, kept and not read) and publishes, after each input's
    copies, the last weights it took on ``contact_weights/actual``: the same messages in and
    out as the distributor of that run, with no work between them.
    """
    import rclpy
    from geometry_msgs.msg import PoseArray, WrenchStamped
    from std_msgs.msg import Float64MultiArray
    from wrench_distribution.ros.runner import make_executor, spin_until_shutdown
    rclpy.init()
    node = rclpy.create_node('bench_relay')
    out_topics = FanOut(args.effectors).out_topics
    pubs = [node.create_publisher(WrenchStamped, t, qos('reliable')) for t in out_topics]
    outs = [WrenchStamped() for _ in out_topics]
    kept = {}
    if args.moving_contacts:
        for msg_type, topic in ((PoseArray, 'contact_poses'), (Float64MultiArray, 'contact_weights')):
            node.create_subscription(msg_type, topic, lambda payload, topic=topic:
                                     kept.__setitem__(topic, payload), qos('reliable'), raw=True)
        weights_pub = node.create_publisher(Float64MultiArray, 'contact_weights/actual',
                                            qos('reliable'))

    def cb(msg):
        for m, p in zip(outs, pubs):
            m.header = msg.header
            m.wrench = msg.wrench
            p.publish(m)
        if 'contact_weights' in kept:
            weights_pub.publish(kept['contact_weights'])
    node.create_subscription(WrenchStamped, IN_TOPIC, cb, qos('sensor_data'))
    ex = make_executor(args.relay_executor)
    ex.add_node(node)
    try:
        spin_until_shutdown(ex, node)
    except KeyboardInterrupt:
        pass
    rclpy.try_shutdown()


def role_sink(args) -> None:
    """Record, per input stamp, how many outputs arrived and when the last one did."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from wrench_distribution.ros.runner import make_executor
    rclpy.init()
    node = rclpy.create_node('bench_sink')
    fan = FanOut(args.effectors)
    counts = {}
    last = {}
    complete = [False]  # a whole cycle (every output of one input) has arrived

    def cb(msg):
        t = time.time_ns()
        s = stamp_to_ns(msg.header.stamp)
        counts[s] = counts.get(s, 0) + 1
        last[s] = t
        complete[0] = complete[0] or counts[s] >= fan.effectors
    depth_100 = qos('reliable')
    depth_100.depth = 100
    for t in fan.out_topics:
        node.create_subscription(WrenchStamped, t, cb, depth_100)

    closed = [not args.closed_loop]
    if args.closed_loop:  # the distributor's feedback status: measurements are coming in
        from diagnostic_msgs.msg import DiagnosticArray

        def on_diagnostics(msg):
            closed[0] = closed[0] or any(kv.key == 'state' and kv.value.startswith('closed loop')
                                         for status in msg.status for kv in status.values)
        node.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics, 10)

    ready, finished = _sink_signals(node, args, fan, complete, closed)
    ex = make_executor(args.sink_executor)
    ex.add_node(node)
    ex.spin_until_future_complete(ready, timeout_sec=READY_WAIT_S)
    # then one timed spin: spin_once re-entry stalls EventsExecutor (ros/runner.py)
    ex.spin_until_future_complete(finished, timeout_sec=args.duration + args.settle
                                  + READY_WAIT_S + 4.0)
    with open(args.out, 'w') as f:
        json.dump({'counts': {str(k): v for k, v in counts.items()},
                   'last': {str(k): v for k, v in last.items()}, 'loop_closed': closed[0]}, f)
    rclpy.try_shutdown()


def _sink_signals(node, args, fan: FanOut, complete: list, closed: list) -> tuple:
    """Create the sink's timers that tell the source when to start and when it is done.

    ``<ready>``: the target's outputs are discovered here and, with feedback, the
    distributor takes measurements (the warm-up starts); ``<ready>.flowing``: a whole cycle
    has arrived, so the target's writers have matched this sink's readers (the window may
    open); ``<ready>.done`` (written by the source): its last input was sent.

    :param node: the sink's node.
    :param args: the role's arguments (``ready``).
    :param fan: the run's effectors.
    :param complete: ``[True]`` once a whole cycle has arrived.
    :param closed: ``[True]`` once the loop is closed (or when there is no loop).
    :return: ``(ready, finished)`` futures.
    """
    from rclpy.task import Future
    ready, finished = Future(), Future()

    def announce_ready():
        # DDS discovery (up to a participant announcement period, 3 s, between the F/T
        # source and the analyzer) is not the loop's latency: a window opened before it would
        # count the discovery as lost cycles
        if closed[0] and all(node.count_publishers(t) > 0 for t in fan.out_topics):
            if args.ready:
                open(args.ready, 'w').close()
            timers[0].cancel()
            ready.set_result(True)

    def announce_flowing():
        # seeing a publisher is one side of discovery: the other is the target's writers
        # matching this sink's readers, which a whole cycle received shows
        if complete[0]:
            if args.ready:
                open(args.ready + '.flowing', 'w').close()
            timers[1].cancel()

    def see_done():
        if args.ready and os.path.exists(args.ready + '.done'):
            finished.set_result(True)
            timers[2].cancel()
    timers = [node.create_timer(period, callback) for period, callback in
              ((0.02, announce_ready), (0.02, announce_flowing), (0.05, see_done))]
    return ready, finished


class ContactStream:
    """New contact poses every tick and a weight ramp (``--moving-contacts``): a walking trunk.

    Each tick every contact moves about its corner by up to 1 mm and turns by up to 0.1 deg
    (a slow sine, each contact in its own phase), published on ``contact_poses`` before the
    desired wrench; every :attr:`TOGGLE_S` seconds of ticks the first contact's target weight
    alternates between 1 and :attr:`LOW_WEIGHT` on ``contact_weights``. The distributor's ramp
    (``contact_transition_time`` :data:`.fanout.MOVING_TRANSITION_S`) takes longer than a toggle,
    so a weight changes at every tick.

    :param node: the source's node.
    :param fan: the run's effectors.
    :param rate: ticks per second.
    """

    TOGGLE_S = 0.5
    LOW_WEIGHT = 0.3

    def __init__(self, node, fan: FanOut, rate: float) -> None:
        from geometry_msgs.msg import Pose, PoseArray
        from std_msgs.msg import Float64MultiArray, MultiArrayDimension
        self.corners = np.reshape(fan.positions, (-1, 3))
        self.toggle_ticks = max(1, round(self.TOGGLE_S * rate))
        self.ticks = 0  # warm-up and measured window alike
        self.poses = PoseArray()
        self.poses.header.frame_id = 'object'
        self.poses.poses = [Pose() for _ in fan.names]
        self.weights = Float64MultiArray()
        self.weights.layout.dim.append(MultiArrayDimension(label=fan.names[0], size=1, stride=1))
        self.pose_pub = node.create_publisher(PoseArray, 'contact_poses', qos('reliable'))
        self.weight_pub = node.create_publisher(Float64MultiArray, 'contact_weights', qos('reliable'))

    def tick(self) -> None:
        """Publish the next tick's poses (and a new weight target every ``toggle_ticks``)."""
        k = self.ticks
        self.ticks += 1
        swing = np.sin(0.01 * k + np.arange(len(self.corners)))  # each contact in its own phase
        positions = self.corners + 1e-3 * swing[:, None]
        turns = Rotation.from_rotvec(np.radians(0.1) * swing[:, None] * [1.0, 0.0, 0.0]).as_quat()
        for pose, position, turn in zip(self.poses.poses, positions.tolist(), turns.tolist()):
            pose.position.x, pose.position.y, pose.position.z = position
            pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = turn
        stamp(self.poses, time.time_ns())
        self.pose_pub.publish(self.poses)
        if k % self.toggle_ticks == 0:
            self.weights.data = [self.LOW_WEIGHT if (k // self.toggle_ticks) % 2 == 0 else 1.0]
            self.weight_pub.publish(self.weights)


def role_source(args) -> None:
    """Publish at a fixed rate with absolute deadlines; stamps from the system clock."""
    started = time.perf_counter()
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    rclpy.init()
    node = rclpy.create_node('bench_source')
    pub = node.create_publisher(WrenchStamped, IN_TOPIC, qos('reliable'))
    contacts = ContactStream(node, FanOut(args.effectors), args.rate) if args.moving_contacts else None
    deadline = time.monotonic() + READY_WAIT_S
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    while args.ready and not os.path.exists(args.ready) and time.monotonic() < deadline:
        time.sleep(0.05)  # the sink sees the target's outputs (see role_sink)
    msg = WrenchStamped()
    msg.header.frame_id = 'object'
    msg.wrench.force.z = 10.0
    msg.wrench.torque.x = 0.1
    period = 1.0 / args.rate
    # warm-up at the same rate (not measured): until the sink has taken a whole cycle (the
    # target's writers matched its readers, see role_sink), then --settle seconds more, and
    # at least until EARLIEST_WINDOW_S after this process started
    t0 = time.perf_counter()
    earliest = int((started + EARLIEST_WINDOW_S - t0) * args.rate)
    flowing_at = None if args.ready else 0
    k = 0
    while flowing_at is None or k < max(flowing_at + int(args.settle * args.rate), earliest):
        if flowing_at is None and (k % 10 == 0 and os.path.exists(args.ready + '.flowing')
                                   or time.perf_counter() > t0 + READY_WAIT_S):
            flowing_at = k
        d = t0 + k * period - time.perf_counter()
        if d > 0:
            time.sleep(d)
        if contacts is not None:
            contacts.tick()
        stamp(msg, time.time_ns())
        pub.publish(msg)
        k += 1
    n = int(args.duration * args.rate)
    stamps = []
    open(args.out + '.start', 'w').close()  # the orchestrator's CPU window (cpu_shares)
    t0 = time.perf_counter()
    for k in range(n):
        d = t0 + k * period - time.perf_counter()
        if d > 0:
            time.sleep(d)  # no busy wait: the source must not steal the relay's CPU
        if contacts is not None:
            contacts.tick()
        s = time.time_ns()
        stamp(msg, s)
        msg.wrench.force.x = 0.001 * (k % 100)
        pub.publish(msg)
        stamps.append(s)
    with open(args.out, 'w') as f:
        json.dump({'stamps': stamps, 'elapsed': time.perf_counter() - t0}, f)
    time.sleep(0.5)
    if args.ready:
        open(args.ready + '.done', 'w').close()
    rclpy.try_shutdown()


def role_measure(args) -> None:
    """Publish a measured internal load in the distributor's basis at ``--rate`` (feedback runs)."""
    import rclpy
    from std_msgs.msg import Float64MultiArray
    from wrench_distribution.core import Contact, LoadDistributor, ObjectModel
    from wrench_distribution.ros.conversions import make_internal_load_msg
    rclpy.init()
    node = rclpy.create_node('bench_measure')
    fan = FanOut(args.effectors)
    pos = np.reshape(fan.positions, (-1, 3))
    names = LoadDistributor([Contact(n, 'rigid', p) for n, p in zip(fan.names, pos)],
                            ObjectModel(com=COM)).basis_names
    msg = make_internal_load_msg(names)
    values = np.zeros(len(names))
    values[0] = 9.0  # 90 % of the 10 N squeeze: the loop has something to correct
    msg.data = values.tolist()
    pub = node.create_publisher(Float64MultiArray, 'measured/internal_load', qos('reliable'))
    for _ in paced(args.rate, time.perf_counter(), _until_stopped(args)):
        pub.publish(msg)
    rclpy.try_shutdown()


def role_ft(args) -> None:
    """Publish two F/T streams (``e0/ft_sensor``, ``e1/ft_sensor``) at ``--rate``, one stamp.

    The readings are a 10 N squeeze between the first two contacts with a small ripple, in
    the sensor frames (the analyzer's default sensors sit at the contacts, no tool mass).
    """
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    rclpy.init()
    node = rclpy.create_node('bench_ft')
    pubs = [node.create_publisher(WrenchStamped, f'{n}/ft_sensor', qos('sensor_data'))
            for n in FanOut(args.effectors).ft_names]
    msgs = [WrenchStamped() for _ in pubs]
    t0 = time.perf_counter()
    if args.out:  # the clock's ticks on the system clock: the orchestrator's phase figures
        with open(args.out, 'w') as f:
            json.dump({'t0_ns': time.time_ns() - seconds_to_ns(time.perf_counter() - t0),
                       'rate': args.rate}, f)
    for k in paced(args.rate, t0, _until_stopped(args)):
        s = time.time_ns()
        ripple = 0.01 * (k % 100)
        for sign, msg, pub in zip((1.0, -1.0), msgs, pubs):
            stamp(msg, s)
            msg.wrench.force.y = sign * (-10.0 - ripple)
            msg.wrench.force.z = 5.0
            pub.publish(msg)
    rclpy.try_shutdown()


def _startup_qos(durability: str):
    """Reliable, keep-last deep enough for every start-up message (nothing may be dropped).

    :param durability: ``volatile`` or ``transient_local`` (the late-joining reader gets the
        writer's history, so DDS discovery order cannot lose a message: only the executor can).
    :return: the QoS profile.
    """
    from rclpy.qos import DurabilityPolicy
    profile = qos('reliable')
    profile.depth = 2 * STARTUP_MESSAGES
    profile.durability = DurabilityPolicy.TRANSIENT_LOCAL if durability == 'transient_local' \
        else DurabilityPolicy.VOLATILE
    return profile


def role_probe(args) -> None:
    """Start-up probe: subscribe, then spin on the runner's executor and spin path.

    ``--probe-delay`` d >= 0: d s pass between the subscription and the first spin, as a
    node's construction would; d < 0: the subscription is created by a one-shot timer |d| s
    after the spin started (a subscription added to a spinning executor). On exit the
    probe writes the indices it received.
    """
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from wrench_distribution.ros.runner import make_executor, spin_until_shutdown
    rclpy.init()
    node = rclpy.create_node('bench_probe')
    got = []

    def subscribe():
        node.create_subscription(WrenchStamped, STARTUP_TOPIC,
                                 lambda m: got.append(m.header.stamp.sec),
                                 _startup_qos(args.durability))
    if args.probe_delay >= 0:
        subscribe()
        time.sleep(args.probe_delay)
    else:
        timers = []

        def once():
            node.destroy_timer(timers[0])
            subscribe()
        timers.append(node.create_timer(-args.probe_delay, once))
    ex = make_executor(args.relay_executor)
    ex.add_node(node)
    from rclpy.executors import ExternalShutdownException
    try:
        spin_until_shutdown(ex, node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        with open(args.out, 'w') as f:
            json.dump({'received': got}, f)
        rclpy.try_shutdown()


def role_talker(args) -> None:
    """Start-up talker: once the probe is matched, send ``STARTUP_MESSAGES`` at 100 Hz."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    rclpy.init()
    node = rclpy.create_node('bench_talker')
    pub = node.create_publisher(WrenchStamped, STARTUP_TOPIC, _startup_qos(args.durability))
    deadline = time.monotonic() + 15.0
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.002)
    matched = pub.get_subscription_count() > 0
    msg = WrenchStamped()
    for k in range(STARTUP_MESSAGES):
        msg.header.stamp.sec = k
        pub.publish(msg)
        time.sleep(0.01)
    time.sleep(1.0)  # reliable resends and the probe's spin
    with open(args.out, 'w') as f:
        json.dump({'matched': matched}, f)
    rclpy.try_shutdown()


def run_role(args) -> int:
    """Run one role process; the orchestrator's stop (SIGINT) ends it quietly.

    :param args: the parsed arguments (``--role`` set).
    :return: exit code 0.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException
    try:
        ROLES[args.role](args)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass  # the F/T and measure roles publish until they are stopped
    except RuntimeError:  # rclpy's RCLError: a publish after SIGINT shut the context down
        if rclpy.ok():
            raise
    return 0


#: ``--role`` -> the function run in that process.
ROLES = {'source': role_source, 'relay': role_relay, 'sink': role_sink, 'probe': role_probe,
         'talker': role_talker, 'measure': role_measure, 'ft': role_ft}
