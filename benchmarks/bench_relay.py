r"""Distributor node vs a bare rclpy relay, side by side, over real DDS.

One ``WrenchStamped`` in, four out (4 effectors; ``--effectors`` 2 or 3 for fewer); source,
relay (or distributor) and sink run in separate processes. For each rate, the relay and
the distributor are run one after the other with the same source and sink, and the script reports the rate
held, lost cycles (an input whose four outputs did not all arrive) and p50/p99
latency from the input's header stamp to the arrival of the last of its four outputs.
Each of ``--executors`` (kinds of ``wrench_distribution.ros.runner.make_executor``) runs
the relay and the distributor; ratios are to the relay on ``--reference``. With
``--feedback`` the distributor also runs with ``internal_load_feedback`` on, fed by a
``measure`` process that publishes a labelled measured internal load at the input rate
(as the analyzer would: one measurement per command cycle); with ``--analyzer-rate HZ`` (and
``--effectors 2``) by the analyzer itself, in its own process, on two F/T streams at HZ from
an ``ft`` process: the whole loop. The F/T streams run on their own clock, ``--ft-sweeps``
F/T periods per window faster than nominal, so that each window sees every phase between
a sensor reading and a desired wrench, as a sensor's crystal drifts against the controller's.
The measured window opens once the sink has taken a whole cycle (the target's writers
matched its readers) and ``--settle`` seconds more, never before ``EARLIEST_WINDOW_S`` after
the source started, and closes when the source says it is done. With ``--windows K``, each
run's ``--duration`` is split into K windows, the runs alternating window by window, and
each run's cycles are pooled into one row: a process start's own luck (where its threads
land, the F/T phase it starts at) and the machine's drift fall on the relay and the loop
alike (the bare relay's median moved by up to 27 % from one start to the next on these
cores). Before that,
``--startup-trials`` start-up trials per kind and durability count the runs in which a
freshly started subscriber missed some of the first messages (:func:`startup_figures`).
The last line applies the rule of issue 32 (:func:`choose`).

Usage::

    ROS_DOMAIN_ID=77 .venv/bin/python benchmarks/bench_relay.py --rates 500 1000 \
        --duration 8 --executors single multi events --startup-trials 9 --markdown
    ROS_DOMAIN_ID=77 .venv/bin/python benchmarks/bench_relay.py --rates 500 1000 \
        --duration 5 --settle 2 --executors events --reference events --startup-trials 0 \
        --feedback --rounds 4 --markdown

DDS discovery stays on loopback (the script sets ``ROS_AUTOMATIC_DISCOVERY_RANGE`` and
``ROS_LOCALHOST_ONLY`` for every process).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

#: Fan-out (``--effectors``; children read it from the environment the orchestrator sets).
N_EFFECTORS = int(os.environ.get('BENCH_RELAY_EFFECTORS', '4'))
NAMES = [f'e{i}' for i in range(N_EFFECTORS)]
OUT_TOPICS = [f'{n}/wrench_command' for n in NAMES]
IN_TOPIC = 'desired_wrench'
#: Longest wait (s) for the target's outputs and, with feedback, a closed loop before warm-up.
READY_WAIT_S = 20.0
#: Earliest opening of the measured window (s after the source started): in about one run in
#: ten, 3.8 to 4.1 s after the processes started, DDS held the outputs bound for the sink for
#: 150 to 341 ms (the relay's own records show it published on time), in the bare relay's
#: runs as in the distributor's, with either executor in the sink and over UDP alone as over
#: shared memory; no run showed it later (docs/benchmarks.md)
EARLIEST_WINDOW_S = 6.0
#: The contacts: the first ``N_EFFECTORS`` corners of a 0.6 m x 0.4 m rectangle.
POSITIONS = [0.3, 0.2, 0.0, 0.3, -0.2, 0.0, -0.3, 0.2, 0.0, -0.3, -0.2, 0.0][:3 * N_EFFECTORS]
COM = [0.0, 0.0, 0.05]
#: The analyzer's F/T streams (``--analyzer-rate``): the first two effectors.
FT_NAMES = NAMES[:2]
#: Parts of the F/T period by which the whole loop's median is also given (``medians_by_part``).
PHASE_BINS = 4


def stop(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """SIGINT a role process, SIGKILL it after ``timeout``; always reap it.

    :param proc: the process.
    :param timeout: seconds to wait after each signal.
    """
    if proc.poll() is None:
        proc.send_signal(2)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def ros_env(domain: int) -> dict:
    """Return the environment of a child process: DDS on loopback, the given domain.

    :param domain: ROS_DOMAIN_ID.
    :return: a copy of ``os.environ`` with the ROS variables set.
    """
    env = dict(os.environ)
    env['ROS_DOMAIN_ID'] = str(domain)
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env['ROS_LOCALHOST_ONLY'] = '1'
    env.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    env['PYTHONUNBUFFERED'] = '1'
    return env


def node_command(script: str, module: str) -> list:
    """Return the console script next to this Python, else ``python -m module`` (as the demo does).

    A colcon install puts the scripts in ``lib/wrench_distribution``, not next to the Python.

    :param script: ``distributor``, ``analyzer`` or ``cell``.
    :param module: its module, e.g. ``wrench_distribution.distributor_node``.
    :return: the command's first words.
    """
    candidate = os.path.join(os.path.dirname(sys.executable), script)
    return [candidate] if os.path.exists(candidate) else [sys.executable, '-m', module]


def _qos(kind: str):
    from wrench_distribution.ros.qos import qos_from_name
    return qos_from_name(kind, 10)


# -- roles (each runs in its own process) ---------------------------------------------
def role_relay(args) -> None:
    """Bare relay: copy the input to four outputs, on the runner's executor and spin path."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from wrench_distribution.ros.runner import make_executor, spin_until_shutdown
    rclpy.init()
    node = rclpy.create_node('bench_relay')
    pubs = [node.create_publisher(WrenchStamped, t, _qos('reliable')) for t in OUT_TOPICS]
    outs = [WrenchStamped() for _ in OUT_TOPICS]

    def cb(msg):
        for m, p in zip(outs, pubs):
            m.header = msg.header
            m.wrench = msg.wrench
            p.publish(m)
    node.create_subscription(WrenchStamped, IN_TOPIC, cb, _qos('sensor_data'))
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
    counts = {}
    last = {}
    complete = [False]  # a whole cycle (every output of one input) has arrived

    def cb(msg):
        t = time.time_ns()
        s = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        counts[s] = counts.get(s, 0) + 1
        last[s] = t
        complete[0] = complete[0] or counts[s] >= N_EFFECTORS
    qos = _qos('reliable')
    qos.depth = 100
    for t in OUT_TOPICS:
        node.create_subscription(WrenchStamped, t, cb, qos)

    closed = [not args.closed_loop]
    if args.closed_loop:  # the distributor's feedback status: measurements are coming in
        from diagnostic_msgs.msg import DiagnosticArray

        def on_diagnostics(msg):
            closed[0] = closed[0] or any(kv.key == 'state' and kv.value.startswith('closed loop')
                                         for status in msg.status for kv in status.values)
        node.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics, 10)

    ready, finished = _sink_signals(node, args, complete, closed)
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


def _sink_signals(node, args, complete: list, closed: list) -> tuple:
    """Create the sink's timers that tell the source when to start and when it is done.

    ``<ready>``: the target's outputs are discovered here and, with feedback, the
    distributor takes measurements (the warm-up starts); ``<ready>.flowing``: a whole cycle
    has arrived, so the target's writers have matched this sink's readers (the window may
    open); ``<ready>.done`` (written by the source): its last input was sent.

    :param node: the sink's node.
    :param args: the role's arguments (``ready``).
    :param complete: ``[True]`` once a whole cycle has arrived.
    :param closed: ``[True]`` once the loop is closed (or when there is no loop).
    :return: ``(ready, finished)`` futures.
    """
    from rclpy.task import Future
    ready, finished = Future(), Future()

    def announce_ready():
        # DDS discovery (up to a participant announcement period, 3 s, between the F/T
        # source and the analyzer) is not the loop's latency; a window that opened before it
        # lost 100 to 500 cycles
        if closed[0] and all(node.count_publishers(t) > 0 for t in OUT_TOPICS):
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


def role_source(args) -> None:
    """Publish at a fixed rate with absolute deadlines; stamps from the system clock."""
    started = time.perf_counter()
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    rclpy.init()
    node = rclpy.create_node('bench_source')
    pub = node.create_publisher(WrenchStamped, IN_TOPIC, _qos('reliable'))
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
        s = time.time_ns()
        msg.header.stamp.sec = s // 1_000_000_000
        msg.header.stamp.nanosec = s % 1_000_000_000
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
        s = time.time_ns()
        msg.header.stamp.sec = s // 1_000_000_000
        msg.header.stamp.nanosec = s % 1_000_000_000
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
    pos = np.reshape(POSITIONS, (-1, 3))
    names = LoadDistributor([Contact(n, 'rigid', p) for n, p in zip(NAMES, pos)],
                            ObjectModel(com=COM)).basis_names
    msg = make_internal_load_msg(names)
    values = np.zeros(len(names))
    values[0] = 9.0  # 90 % of the 10 N squeeze: the loop has something to correct
    msg.data = values.tolist()
    pub = node.create_publisher(Float64MultiArray, 'measured/internal_load', _qos('reliable'))
    period = 1.0 / args.rate
    t0 = time.perf_counter()
    end = t0 + args.duration + args.settle + READY_WAIT_S + 10.0  # stopped by the orchestrator
    k = 0
    while time.perf_counter() < end:
        d = t0 + k * period - time.perf_counter()
        if d > 0:
            time.sleep(d)
        pub.publish(msg)
        k += 1
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
    pubs = [node.create_publisher(WrenchStamped, f'{n}/ft_sensor', _qos('sensor_data'))
            for n in FT_NAMES]
    msgs = [WrenchStamped() for _ in FT_NAMES]
    period = 1.0 / args.rate
    t0 = time.perf_counter()
    if args.out:  # the clock's ticks on the system clock: the orchestrator's phase figures
        with open(args.out, 'w') as f:
            json.dump({'t0_ns': time.time_ns() - round((time.perf_counter() - t0) * 1e9),
                       'rate': args.rate}, f)
    end = t0 + args.duration + args.settle + READY_WAIT_S + 10.0  # stopped by the orchestrator
    k = 0
    while time.perf_counter() < end:
        d = t0 + k * period - time.perf_counter()
        if d > 0:
            time.sleep(d)
        s = time.time_ns()
        ripple = 0.01 * (k % 100)
        for sign, msg, pub in zip((1.0, -1.0), msgs, pubs):
            msg.header.stamp.sec = s // 1_000_000_000
            msg.header.stamp.nanosec = s % 1_000_000_000
            msg.wrench.force.y = sign * (-10.0 - ripple)
            msg.wrench.force.z = 5.0
            pub.publish(msg)
        k += 1
    rclpy.try_shutdown()


def analyzer_params() -> dict:
    """Return the analyzer's parameters: the first two contacts, static, default outputs.

    Its ``measured/internal_load`` is the distributor's default ``feedback_topic``; with
    ``--effectors 2`` both name the same basis, so the distributor takes the measurements.
    """
    return {'effectors': FT_NAMES, 'contact_source': 'static',
            'contact_positions': POSITIONS[:6], 'object_com': COM}


def write_params(path: str, sections: dict) -> None:
    """Write a ROS parameter file.

    :param path: file to write.
    :param sections: node name (or ``/**``) -> parameters.
    """
    import yaml
    data = {name: {'ros__parameters': params} for name, params in sections.items()}
    with open(path, 'w') as f:  # through JSON: no shared list, so no YAML alias (rcl refuses them)
        yaml.safe_dump(json.loads(json.dumps(data)), f)


STARTUP_TOPIC = 'startup_probe'
#: Messages the start-up talker sends once it sees the probe's subscription.
STARTUP_MESSAGES = 50


def _startup_qos(durability: str):
    """Reliable, keep-last deep enough for every start-up message (nothing may be dropped).

    :param durability: ``volatile`` or ``transient_local`` (the late-joining reader gets the
        writer's history, so DDS discovery order cannot lose a message: only the executor can).
    :return: the QoS profile.
    """
    from rclpy.qos import DurabilityPolicy
    qos = _qos('reliable')
    qos.depth = 2 * STARTUP_MESSAGES
    qos.durability = DurabilityPolicy.TRANSIENT_LOCAL if durability == 'transient_local' \
        else DurabilityPolicy.VOLATILE
    return qos


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


# -- orchestration ----------------------------------------------------------------------
def distributor_params(feedback: bool = False) -> dict:
    """Return the distributor's parameters of the relay benchmark (static contacts).

    :param feedback: run with ``internal_load_feedback`` on.
    """
    return {'effectors': NAMES, 'contact_types': ['rigid'] * N_EFFECTORS,
            'contact_source': 'static', 'contact_positions': POSITIONS,
            'object_com': COM, 'input_timeout': 0.0,
            'internal_load_handles': ['squeeze(e0,e1)=10.0'],
            'internal_load_feedback': feedback, 'feedback_timeout': 1.0}


def phase_parts(stamps, ft_clock: dict, bins: int = PHASE_BINS) -> np.ndarray:
    """Part of the F/T period in which each desired wrench was sent.

    The phase of a desired wrench stamped ``s`` is how far into its F/T period it was sent:
    ``((s - t0_ns) * rate / 1e9) mod 1``, the F/T process ticking at ``t0_ns + k / rate``.

    :param stamps: stamps (ns, system clock).
    :param ft_clock: the ``ft`` process's ``{'t0_ns', 'rate'}``.
    :param bins: equal parts of the F/T period.
    :return: per stamp, its part, 0 (just after the tick) to ``bins - 1``.
    """
    elapsed = np.asarray(stamps, dtype=np.int64) - int(ft_clock['t0_ns'])
    phase = np.mod(elapsed * (ft_clock['rate'] / 1e9), 1.0)
    return np.minimum((phase * bins).astype(int), bins - 1)


def medians_by_part(part: np.ndarray, latencies, bins: int = PHASE_BINS) -> list:
    """Return the median of ``latencies`` in each part ``0 .. bins - 1``, NaN where none fell."""
    latencies = np.asarray(latencies, dtype=float)
    return [float(np.median(latencies[part == k])) if np.any(part == k) else float('nan')
            for k in range(bins)]


def relay_figures(windows: list, label: str, rate: float) -> dict:
    """Loss and latency figures of one target from its windows, their cycles pooled.

    :param windows: per window, ``(source's JSON, sink's JSON, F/T clock or None)``: the
        stamps sent and the time they took; the outputs' counts and last arrival per stamp;
        the F/T streams' ``{'t0_ns', 'rate'}`` when they ran (adds ``p50_by_phase_ms``,
        :func:`medians_by_part` of :func:`phase_parts`, when every window has one).
    :param label: the ``target`` entry of the figures.
    :param rate: input rate (Hz).
    :return: dict of results (``lost_*_index``: counted over the windows in order).
    """
    lat, parts, lost_idx = [], [], []
    sent, elapsed = 0, 0.0
    for src_data, sink_data, ft_clock in windows:
        counts, last = sink_data['counts'], sink_data['last']
        done = []
        for i, s in enumerate(src_data['stamps']):
            if counts.get(str(s), 0) >= N_EFFECTORS:
                lat.append((last[str(s)] - s) * 1e-6)
                done.append(s)
            else:
                lost_idx.append(sent + i)
        if ft_clock:
            parts.append(phase_parts(done, ft_clock))
        sent += len(src_data['stamps'])
        elapsed += src_data['elapsed']
    by_phase = ({'p50_by_phase_ms': medians_by_part(np.concatenate(parts), lat)}
                if lat and len(parts) == len(windows) else {})
    lat = np.asarray(lat) if lat else np.asarray([np.nan])
    lost = len(lost_idx)
    return {**by_phase, 'target': label,
            'load1': round(os.getloadavg()[0], 2),
            'rate': rate, 'sent': sent, 'lost': lost,
            'lost_pct': 100.0 * lost / max(sent, 1),
            'held_hz': (sent - lost) / elapsed if elapsed > 0 else 0.0,
            'p50_ms': float(np.percentile(lat, 50)), 'p99_ms': float(np.percentile(lat, 99)),
            'lost_first_index': lost_idx[0] if lost_idx else None,
            'lost_last_index': lost_idx[-1] if lost_idx else None}


def start_nodes(tmp: str, env: dict, target: str, analyzer_rate: float, layout: str,
                common: list) -> list:
    """Start the distributor and what feeds its feedback (parameter files in ``tmp``).

    ``feedback`` with ``analyzer_rate > 0``: the analyzer and the ``ft`` process feeding it,
    the two nodes in two processes (``layout`` ``processes``) or in one (``one-process``:
    the ``cell`` executable); ``feedback`` alone: a ``measure`` process.

    :param tmp: directory for the parameter files.
    :param env: environment of the nodes (their executor chosen in it).
    :param target: ``distributor`` or ``feedback``.
    :param analyzer_rate: F/T rate (Hz), 0 for none.
    :param layout: ``processes`` or ``one-process``.
    :param common: the role arguments (rate, duration, settle).
    :return: the processes by name.
    """
    me = [sys.executable, os.path.abspath(__file__)]
    dist = distributor_params(feedback=target == 'feedback')
    quiet = ['--log-level', 'warn']
    if target == 'feedback' and analyzer_rate > 0:
        ft = subprocess.Popen(me + ['--role', 'ft'] + common[2:] + ['--rate', str(analyzer_rate),
                                                                    '--out', ft_clock_file(tmp)],
                              env=env)
        pf = os.path.join(tmp, 'p.yaml')
        write_params(pf, {'wrench_distributor': dist, 'wrench_analyzer': analyzer_params()})
        if layout == 'one-process':
            cell = node_command('cell', 'wrench_distribution.cell')
            return {'ft': ft, 'cell': subprocess.Popen(
                cell + ['--ros-args', '--params-file', pf] + quiet, env=env)}
        return dict({'ft': ft}, **{exe: subprocess.Popen(
            node_command(exe, f'wrench_distribution.{exe}_node') + ['--ros-args', '--params-file', pf]
            + quiet, env=env) for exe in ('analyzer', 'distributor')})
    procs = {}
    if target == 'feedback':
        procs['measure'] = subprocess.Popen(me + ['--role', 'measure'] + common, env=env)
    pf = os.path.join(tmp, 'p.yaml')
    write_params(pf, {'/**': dist})
    procs['distributor'] = subprocess.Popen(
        node_command('distributor', 'wrench_distribution.distributor_node')
        + ['--ros-args', '--params-file', pf] + quiet, env=env)
    return procs


def ft_clock_file(tmp: str) -> str:
    """Return where the ``ft`` process writes its clock (first tick, rate) in a run's ``tmp``."""
    return os.path.join(tmp, 'ft.json')


def read_json(path: str) -> dict:
    """Return what a role process wrote to ``path``."""
    with open(path) as f:
        return json.load(f)


def _cpu_seconds(proc: subprocess.Popen) -> float:
    """CPU time (user + system, every thread) a running process has used, or NaN."""
    try:
        with open(f'/proc/{proc.pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    except (OSError, IndexError, ValueError):
        return float('nan')


def cpu_shares(procs: dict, src_out: str, timeout: float) -> dict:
    """Share of one core each process used while the source published its measured inputs.

    The window runs from the source's ``<out>.start`` file (written as its measured loop
    begins) to its ``<out>`` file (written when it ends); ``/proc/<pid>/stat`` (Linux).

    :param procs: name -> running process.
    :param src_out: the source's output file.
    :param timeout: seconds to wait for each file.
    :return: name -> percent of one core (empty when the window was not seen).
    """
    def wait_for(path: str) -> bool:
        end = time.monotonic() + timeout
        while not os.path.exists(path) and time.monotonic() < end:
            time.sleep(0.005)
        return os.path.exists(path)
    if not wait_for(src_out + '.start'):
        return {}
    start = {name: _cpu_seconds(p) for name, p in procs.items()}
    t0 = time.monotonic()
    if not wait_for(src_out):
        return {}
    elapsed = time.monotonic() - t0
    return {name: round(100.0 * (_cpu_seconds(p) - start[name]) / elapsed, 1)
            for name, p in procs.items()}


def run_one(target: str, rate: float, duration: float, settle: float, domain: int,
            executor: str, sink_executor: str = 'events', analyzer_rate: float = 0.0,
            layout: str = 'processes', ft_sweeps: float = 0.0) -> dict:
    """Run source, target (relay or distributor) and sink once; return its window's record.

    :param target: ``relay``, ``distributor`` or ``feedback`` (the distributor with
        internal-load feedback on and a ``measure`` process).
    :param rate: input rate (Hz).
    :param duration: seconds of publishing.
    :param settle: seconds of discovery before publishing.
    :param domain: ROS domain id.
    :param executor: executor kind of the relay or distributor (``runner.EXECUTOR_KINDS``).
    :param sink_executor: executor kind of the sink.
    :param analyzer_rate: with ``feedback``: > 0 runs the analyzer on two F/T streams at this
        rate instead of the ``measure`` process.
    :param layout: with the analyzer: ``processes`` (each node in its own) or ``one-process``.
    :param ft_sweeps: with the analyzer: the F/T streams run ``ft_sweeps / duration`` Hz
        faster than ``analyzer_rate``, so that their phase against the desired wrench sweeps
        that many F/T periods in the window (a sensor's own clock); 0: a phase fixed by chance.
    :return: ``window`` (for :func:`relay_figures`), ``cpu`` (:func:`cpu_shares`) and
        ``loop_closed``.
    """
    env = ros_env(domain)
    me = [sys.executable, os.path.abspath(__file__)]
    common = ['--rate', str(rate), '--duration', str(duration), '--settle', str(settle)]
    procs: dict = {}
    with tempfile.TemporaryDirectory(prefix='wd_bench_') as tmp:
        try:
            if target == 'relay':
                procs['relay'] = subprocess.Popen(me + ['--role', 'relay', '--relay-executor',
                                                        executor], env=env)
            else:
                ft_rate = analyzer_rate + ft_sweeps / duration if analyzer_rate > 0 else 0.0
                procs.update(start_nodes(tmp, dict(env, WRENCH_DISTRIBUTION_EXECUTOR=executor),
                                         target, ft_rate, layout, common))
            sink_out = os.path.join(tmp, 'sink.json')
            src_out = os.path.join(tmp, 'src.json')
            common += ['--ready', os.path.join(tmp, 'sink.ready')]
            procs['sink'] = subprocess.Popen(me + ['--role', 'sink', '--out', sink_out,
                                                   '--sink-executor', sink_executor] + common
                                             + ['--closed-loop'] * (target == 'feedback'), env=env)
            time.sleep(0.5)
            procs['source'] = subprocess.Popen(me + ['--role', 'source', '--out', src_out] + common,
                                               env=env)
            longest = duration + settle + READY_WAIT_S + 30
            cpu = cpu_shares(procs, src_out, longest)
            procs['source'].wait(longest)
            procs['sink'].wait(longest)
        finally:  # every process started here is stopped, the measuring ones too
            for p in procs.values():
                stop(p)
        src_data, sink_data = (read_json(path) for path in (src_out, sink_out))
        ft_clock = read_json(ft_clock_file(tmp)) if os.path.exists(ft_clock_file(tmp)) else None
    if not sink_data.get('loop_closed', True):  # measured all the same, and said so
        print(f'{_label(target, analyzer_rate, layout)}: the feedback loop did not close '
              f'within {READY_WAIT_S:g} s', file=sys.stderr)
    return {'window': (src_data, sink_data, ft_clock), 'cpu': cpu,
            'loop_closed': sink_data.get('loop_closed', True)}


def _label(target: str, analyzer_rate: float, layout: str) -> str:
    """Name the ``target`` entry of a run's figures (without the executor kind)."""
    if target != 'feedback':
        return target
    if analyzer_rate <= 0:
        return 'distributor + feedback'
    label = f'distributor + feedback + analyzer ({len(FT_NAMES)} F/T at {analyzer_rate:g} Hz)'
    return label + ', one process' if layout == 'one-process' else label


def startup_trial(kind: str, delay: float, domain: int, durability: str) -> dict:
    """Start the probe on ``kind``, the talker right after; count what the probe received.

    :param kind: executor kind of the probe.
    :param delay: seconds between the probe's subscription and its first spin.
    :param domain: ROS domain id.
    :param durability: QoS durability of both ends (see :func:`_startup_qos`).
    :return: ``received`` (count), ``first`` (lowest index received or None), ``matched``.
    """
    env = ros_env(domain)
    me = [sys.executable, os.path.abspath(__file__)]
    with tempfile.TemporaryDirectory(prefix='wd_startup_') as tmp:
        probe_out = os.path.join(tmp, 'probe.json')
        talker_out = os.path.join(tmp, 'talker.json')
        probe = subprocess.Popen(me + ['--role', 'probe', '--out', probe_out, '--relay-executor',
                                       kind, '--probe-delay', str(delay), '--durability',
                                       durability], env=env)
        try:
            talker = subprocess.Popen(me + ['--role', 'talker', '--out', talker_out,
                                            '--durability', durability], env=env)
            try:
                talker.wait(40)
            finally:
                stop(talker)
            time.sleep(0.3)
        finally:
            stop(probe)
        try:
            got = read_json(probe_out)['received']
            matched = read_json(talker_out)['matched']
        except (OSError, ValueError, KeyError):
            return {'received': 0, 'first': None, 'matched': False}
    return {'received': len(set(got)), 'first': min(got) if got else None, 'matched': matched}


def startup_figures(kind: str, trials: int, domain: int, durability: str) -> dict:
    """Run ``trials`` start-up trials, the probe's three start-ups in turn.

    The three: spin right after subscribing; spin 0.25 s after subscribing; subscribe
    0.25 s after the spin started (see :func:`role_probe`).

    A trial *misses* when the probe did not receive every message the talker sent after
    seeing its subscription (reliable, keep-last deeper than the burst: nothing may be lost).

    :param kind: executor kind.
    :param trials: number of trials.
    :param domain: ROS domain id.
    :return: dict of results.
    """
    res = [startup_trial(kind, (0.0, 0.25, -0.25)[k % 3], domain, durability)
           for k in range(trials)]
    ok = [r for r in res if r['matched']]
    return {'target': f'start-up ({kind}, {durability})', 'kind': kind, 'durability': durability,
            'trials': len(res),
            'unmatched': len(res) - len(ok),
            'missed': sum(r['received'] < STARTUP_MESSAGES for r in ok),
            'missed_first': sum(r['first'] != 0 for r in ok),
            'none': sum(r['received'] == 0 for r in ok),
            'received': [r['received'] for r in res]}


def _ratios(row: dict, ref: dict, suffix: str = '') -> None:
    row['p50_ratio' + suffix] = row['p50_ms'] / ref['p50_ms']
    row['p99_ratio' + suffix] = row['p99_ms'] / ref['p99_ms']


def choose(rows: list, startup: list, reference: str, limit: float = 1.2) -> list:
    """Executor kinds and loop layouts that meet the rule, in the order measured.

    Rule (issue 32 item 1): at every rate the judged rows lost no more cycles than the
    reference relay at that rate, their p50 and p99 are at most ``limit`` times the
    relay's and, with feedback, their loop was closed when the window opened; and no
    start-up trial missed a message (the ``transient_local`` trials where there are any:
    there only the executor can miss; none run with ``--startup-trials 0``). The judged rows
    are the whole loop's, each layout (``processes``, ``one-process``) on its own rows; the
    distributor alone is judged when no loop ran, and reported beside it otherwise.

    :param rows: latency rows (with ``kind``, ``rate``, ``is_distributor``, ``layout``, ratios).
    :param startup: start-up rows.
    :param reference: the reference relay's kind.
    :param limit: ratio limit.
    :return: the kinds meeting the rule, each with its layout when the loop ran in several,
        e.g. ``events (processes)``.
    """
    relay_lost = {r.get('rate'): r['lost'] for r in rows
                  if not r['is_distributor'] and r['kind'] == reference}
    ok = []
    for kind in dict.fromkeys([r['kind'] for r in rows if r['is_distributor']]
                              + [st['kind'] for st in startup]):
        trials = [st for st in startup if st['kind'] == kind]
        trials = [st for st in trials if st['durability'] == 'transient_local'] or trials
        if not all(st['missed'] == 0 and st['unmatched'] == 0 for st in trials):
            continue
        mine = [r for r in rows if r['is_distributor'] and r['kind'] == kind]
        layouts = list(dict.fromkeys(r.get('layout') for r in mine if r.get('layout')))
        for layout in layouts or [None]:
            judged = [r for r in mine if r.get('layout') == layout]
            if judged and all(r['lost'] <= relay_lost.get(r.get('rate'), 0)
                              and r['p50_ratio'] <= limit and r['p99_ratio'] <= limit
                              and r.get('loop_closed', True) for r in judged):
                ok.append(kind if len(layouts) < 2 else f'{kind} ({layout})')
    return ok


def _cpu_text(cpu: dict) -> str:
    """``name share`` of each process, the target's first, source and sink last."""
    order = [k for k in cpu if k not in ('sink', 'source')] + ['sink', 'source']
    return ', '.join(f'{k} {cpu[k]:.0f}' for k in order if k in cpu) or '-'


def _span(row: dict) -> str:
    if row['lost_first_index'] is None:
        return '-'
    return f"{row['lost_first_index']}..{row['lost_last_index']}"


def _print_phase_table(rows: list, reference: str) -> None:
    """Print the whole loop's median by the desired wrench's phase against the F/T clock."""
    phased = [r for r in rows if 'p50_by_phase_ms' in r]
    if not phased:
        return
    relay_p50 = {r['rate']: r['p50_ms'] for r in rows
                 if not r['is_distributor'] and r['kind'] == reference}
    parts = [f'{100 * k // PHASE_BINS}-{100 * (k + 1) // PHASE_BINS} %' for k in range(PHASE_BINS)]
    print("\nThe whole loop's p50 (ms, and / relay) by how far into the F/T period the desired "
          'wrench was sent:')
    print(f'\n| target | rate (Hz) | relay ({reference}) p50 (ms) | ' + ' | '.join(parts) + ' |')
    print('|---|---|---|' + '---|' * PHASE_BINS)
    for r in phased:
        ref = relay_p50.get(r['rate'], float('nan'))
        cells = ' | '.join('-' if not np.isfinite(v) else f'{v:.2f} ({v / ref:.2f})'
                           for v in r['p50_by_phase_ms'])
        print(f"| {r['target']} | {r['rate']:.0f} | {ref:.2f} | {cells} |")


def _print_tables(rows: list, startup: list, reference: str) -> None:
    print('\n| target | rate (Hz) | held (Hz) | lost cycles | p50 (ms) | p99 (ms) | '
          f'p50 / relay ({reference}) | p99 / relay ({reference}) | p50 / relay (same) | '
          'p99 / relay (same) | lost indices | load avg | CPU, % of one core |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for r in rows:
        same = (f"{r['p50_ratio_same']:.2f} | {r['p99_ratio_same']:.2f}"
                if 'p50_ratio_same' in r else '1 | 1')
        if 'p50_ratio_range' in r:  # medians over rounds: show the spread of the ratios
            spread = '; '.join(f'{low:.2f}..{high:.2f}' for low, high in
                               (r['p50_ratio_range'], r['p99_ratio_range']))
            same = f'{same} (rounds {spread})' if r['is_distributor'] else same
        print(f"| {r['target']} | {r['rate']:.0f} | {r['held_hz']:.0f} | "
              f"{r['lost']} / {r['sent']} ({r['lost_pct']:.1f} %) | {r['p50_ms']:.2f} | "
              f"{r['p99_ms']:.2f} | {r['p50_ratio']:.2f} | {r['p99_ratio']:.2f} | {same} | "
              f"{_span(r)} | {r['load1']} | {_cpu_text(r.get('cpu') or {})} |")
    _print_phase_table(rows, reference)
    if startup:
        print(f'\n| executor | durability | trials | missed (any of {STARTUP_MESSAGES}) | '
              'missed the first | received none | never matched |')
        print('|---|---|---|---|---|---|---|')
        for st in startup:
            print(f"| {st['kind']} | {st['durability']} | {st['trials']} | {st['missed']} | "
                  f"{st['missed_first']} | {st['none']} | {st['unmatched']} |")


def _latency_rows(args, domain: int) -> list:
    """Run ``--rounds`` rounds of every latency run; one round: its rows as measured."""
    rounds = [_latency_round(args, domain) for _ in range(args.rounds)]
    return rounds[0] if args.rounds == 1 else [merge_rounds(same) for same in zip(*rounds)]


def merge_rounds(same: tuple) -> dict:
    """One row from the rows of one target and rate over the rounds.

    Counts add up; latencies and ratios are medians over the rounds. A ratio is taken within
    its round (relay and target run one after the other, under the same load), so the
    median of the ratios is what the machine's drift between rounds leaves alone.

    :param same: that target's row of each round.
    :return: the merged row (``*_range`` keys: the lowest and highest ratio of the rounds).
    """
    row = dict(same[0], rounds=len(same))
    for key in ('sent', 'lost'):
        row[key] = sum(r[key] for r in same)
    row['lost_pct'] = 100.0 * row['lost'] / max(row['sent'], 1)
    row['held_hz'] = float(np.mean([r['held_hz'] for r in same]))
    row['load1'] = round(float(np.mean([r['load1'] for r in same])), 2)
    row['loop_closed'] = all(r.get('loop_closed', True) for r in same)
    cpu = [r.get('cpu') or {} for r in same]
    row['cpu'] = {name: float(np.median([c[name] for c in cpu if name in c]))
                  for name in dict.fromkeys(k for c in cpu for k in c)}
    lossy = [r for r in same if r['lost_first_index'] is not None]
    for key in ('lost_first_index', 'lost_last_index'):
        row[key] = lossy[0][key] if lossy else None
    if all('p50_by_phase_ms' in r for r in same):  # per part of the F/T period
        row['p50_by_phase_ms'] = [float(np.nanmedian(part)) if np.isfinite(part).any()
                                  else float('nan') for part in
                                  zip(*(r['p50_by_phase_ms'] for r in same))]
    for key in ('p50_ms', 'p99_ms', 'p50_ratio', 'p99_ratio', 'p50_ratio_same',
                'p99_ratio_same'):
        if key in row:
            values = [r[key] for r in same]
            row[key] = float(np.median(values))
            if 'ratio' in key:
                row[key + '_range'] = (min(values), max(values))
    return row


def _latency_round(args, domain: int) -> list:
    """Run one round: at each rate, every run's ``--windows`` windows, the runs alternating.

    :return: the round's rows, each run's windows pooled (:func:`relay_figures`).
    """
    rows = []
    for rate in args.rates:
        relays = [('relay', kind, None) for kind in dict.fromkeys([args.reference] + args.executors)]
        targets = [('distributor', 'processes')] + (
            [('feedback', layout) for layout in (args.layouts if args.analyzer_rate > 0
                                                 else ['processes'])] if args.feedback else [])
        runs = relays + [(target, kind, layout) for kind in args.executors
                         for target, layout in targets]
        records = {run: [] for run in runs}
        for _ in range(args.windows):  # the runs alternate: the machine's drift falls on each
            for run in runs:
                target, kind, layout = run
                records[run].append(run_one(
                    target, rate, args.duration / args.windows, args.settle, domain, kind,
                    args.sink_executor, args.analyzer_rate, layout or 'processes',
                    args.ft_sweeps))
        for target, kind, layout in runs:
            rows.append(_pooled_row(records[target, kind, layout], target, kind, layout, rate,
                                    args.analyzer_rate))
        relay_rows = {r['kind']: r for r in rows[-len(runs):] if not r['is_distributor']}
        for r in rows[-len(runs):]:
            _ratios(r, relay_rows[args.reference])
            if r['is_distributor'] and r['kind'] in relay_rows:
                _ratios(r, relay_rows[r['kind']], '_same')
            print(json.dumps(r), flush=True)
    return rows


def _pooled_row(records: list, target: str, kind: str, layout, rate: float,
                analyzer_rate: float) -> dict:
    """One run's row from its windows' records (:func:`run_one`), the cycles pooled.

    :return: the row: figures, CPU shares (medians over the windows), ``kind``,
        ``is_distributor``, ``layout`` (the loop's only) and ``windows``.
    """
    label = _label(target, analyzer_rate, layout or 'processes')
    row = relay_figures([rec['window'] for rec in records], f'{label} ({kind})', rate)
    cpu = [rec['cpu'] or {} for rec in records]
    row.update(cpu={name: float(np.median([c[name] for c in cpu if name in c]))
                    for name in dict.fromkeys(k for c in cpu for k in c)},
               loop_closed=all(rec['loop_closed'] for rec in records), kind=kind,
               is_distributor=target != 'relay', windows=len(records),
               layout=layout if target == 'feedback' else None)
    return row


def _loop_arguments(ap: argparse.ArgumentParser) -> None:
    """Add the options of the whole loop (issue 32): fan-out and the analyzer's F/T rate."""
    ap.add_argument('--effectors', type=int, default=N_EFFECTORS, choices=[2, 3, 4],
                    help='fan-out of the relay and contacts of the distributor (first corners '
                         'of the rectangle)')
    ap.add_argument('--analyzer-rate', type=float, default=0.0,
                    help='with --feedback: the measurement comes from the analyzer on two F/T '
                         'streams at this rate (needs --effectors 2: the analyzer and the '
                         'distributor must name the same basis)')
    ap.add_argument('--layouts', nargs='+', default=['processes'],
                    choices=['processes', 'one-process'],
                    help='with --analyzer-rate: the distributor and the analyzer each in its '
                         "own process (the launch files' default), or both in one process (the "
                         'cell executable)')
    ap.add_argument('--ft-sweeps', type=float, default=2.0,
                    help='with --analyzer-rate: F/T periods by which the F/T phase against the '
                         'desired wrench drifts over one window, as a sensor on its own clock '
                         '(the F/T rate is raised by FT_SWEEPS / duration Hz); 0: the phase '
                         'stays where the processes happened to start')


def _repeat_arguments(ap: argparse.ArgumentParser) -> None:
    """Add the options that repeat the latency runs: rounds, and windows within a round."""
    ap.add_argument('--rounds', type=int, default=1,
                    help='rounds of the latency runs; with more than one, medians over rounds')
    ap.add_argument('--windows', type=int, default=1,
                    help='windows per run and round, each --duration / WINDOWS seconds, the '
                         'runs alternating window by window; their cycles pooled into one row')


def run_role(args) -> int:
    """Run one role process; the stop signal of :func:`stop` ends it quietly.

    :param args: the parsed arguments (``--role`` set).
    :return: exit code 0.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException
    try:
        {'source': role_source, 'relay': role_relay, 'sink': role_sink, 'probe': role_probe,
         'talker': role_talker, 'measure': role_measure, 'ft': role_ft}[args.role](args)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass  # stop(): the F/T and measure roles publish until they are stopped
    except RuntimeError:  # rclpy's RCLError: a publish after SIGINT shut the context down
        if rclpy.ok():
            raise
    return 0


def main(argv=None) -> int:
    """Command line: orchestrate (default) or run one role.

    :param argv: arguments.
    :return: exit code.
    """
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--role', choices=['source', 'relay', 'sink', 'probe', 'talker', 'measure',
                                       'ft'])
    ap.add_argument('--out')
    ap.add_argument('--ready', help=argparse.SUPPRESS)
    ap.add_argument('--closed-loop', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--rate', type=float, default=500.0)
    ap.add_argument('--rates', type=float, nargs='*', default=[500.0, 1000.0],
                    help='input rates (Hz) of the latency runs (none: start-up trials only)')
    ap.add_argument('--duration', type=float, default=10.0)
    ap.add_argument('--settle', type=float, default=3.0,
                    help='seconds of unmeasured warm-up publishing')
    ap.add_argument('--executors', nargs='+', default=['single', 'multi', 'events'],
                    help='executor kinds to compare (wrench_distribution.ros.runner.EXECUTOR_KINDS)')
    ap.add_argument('--reference', default='single',
                    help='executor kind of the reference bare relay (the ratio columns)')
    ap.add_argument('--relay-executor', default='single', help=argparse.SUPPRESS)
    ap.add_argument('--sink-executor', default='events',
                    help='executor kind of the sink (the same for every run)')
    ap.add_argument('--startup-trials', type=int, default=9,
                    help='start-up trials per executor kind (0: none)')
    ap.add_argument('--probe-delay', type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument('--durability', nargs='+', default=['transient_local', 'volatile'],
                    help='QoS durability of the start-up trials; transient_local isolates the '
                         'executor, volatile adds the DDS discovery race')
    ap.add_argument('--feedback', action='store_true',
                    help='also run the distributor with internal_load_feedback on')
    _loop_arguments(ap)
    _repeat_arguments(ap)
    ap.add_argument('--markdown', action='store_true')
    args = ap.parse_args(argv)
    if args.role:
        return run_role(args)
    if args.analyzer_rate > 0 and (args.effectors != 2 or not args.feedback):
        ap.error('--analyzer-rate needs --feedback and --effectors 2 (the analyzer sees two '
                 "contacts; its measured internal load must be in the distributor's basis)")
    if args.effectors != N_EFFECTORS:  # the constants are read at import: run afresh with them
        return subprocess.call([sys.executable, os.path.abspath(__file__)]
                               + list(sys.argv[1:] if argv is None else argv),
                               env=dict(os.environ, BENCH_RELAY_EFFECTORS=str(args.effectors)))
    domain = int(os.environ.get('ROS_DOMAIN_ID', '77'))
    startup = []
    for kind in args.executors if args.startup_trials > 0 else []:
        for durability in args.durability:
            startup.append(startup_figures(kind, args.startup_trials, domain, durability))
            print(json.dumps(startup[-1]), flush=True)
    rows = _latency_rows(args, domain)
    if args.markdown:
        _print_tables(rows, startup, args.reference)
    print(f'\nrule: the whole loop (else the distributor) loses no more than the relay '
          f'({args.reference}), p50 and p99 <= 1.2x its, at every rate, no start-up miss; '
          f'kinds meeting it: {choose(rows, startup, args.reference) or "none"}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
