r"""Distributor node vs a bare rclpy relay, side by side, over real DDS.

One ``WrenchStamped`` in, four out (4 effectors); source, relay (or distributor) and
sink run in separate processes. For each rate, the relay and the distributor are run
one after the other with the same source and sink, and the script reports the rate
held, lost cycles (an input whose four outputs did not all arrive) and p50/p99
latency from the input's header stamp to the arrival of the last of its four outputs.

Usage::

    ROS_DOMAIN_ID=77 .venv/bin/python benchmarks/bench_relay.py --rates 500 1000 \
        --duration 10 --markdown

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

N_EFFECTORS = 4
NAMES = [f'e{i}' for i in range(N_EFFECTORS)]
OUT_TOPICS = [f'{n}/wrench_command' for n in NAMES]
IN_TOPIC = 'desired_wrench'


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


def _qos(kind: str):
    from wrench_distribution.ros.qos import qos_from_name
    return qos_from_name(kind, 10)


# -- roles (each runs in its own process) ---------------------------------------------
def role_relay(args) -> None:
    """Bare relay: SingleThreadedExecutor, copy the input to four outputs."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.executors import SingleThreadedExecutor
    rclpy.init()
    node = rclpy.create_node('bench_relay')
    from wrench_distribution.ros.runner import make_executor
    pubs = [node.create_publisher(WrenchStamped, t, _qos('reliable')) for t in OUT_TOPICS]
    outs = [WrenchStamped() for _ in OUT_TOPICS]

    def cb(msg):
        for m, p in zip(outs, pubs):
            m.header = msg.header
            m.wrench = msg.wrench
            p.publish(m)
    node.create_subscription(WrenchStamped, IN_TOPIC, cb, _qos('sensor_data'))
    ex = SingleThreadedExecutor() if args.relay_executor == 'single' else make_executor('events')
    ex.add_node(node)
    from wrench_distribution.ros.runner import spin_until_shutdown
    try:
        spin_until_shutdown(ex, node if args.relay_executor != 'single' else None)
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

    def cb(msg):
        t = time.time_ns()
        s = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        counts[s] = counts.get(s, 0) + 1
        last[s] = t
    qos = _qos('reliable')
    qos.depth = 100
    for t in OUT_TOPICS:
        node.create_subscription(WrenchStamped, t, cb, qos)
    ex = make_executor('events')
    ex.add_node(node)
    end = time.monotonic() + args.duration + args.settle + 4.0
    while time.monotonic() < end:
        ex.spin_once(timeout_sec=0.05)
    with open(args.out, 'w') as f:
        json.dump({'counts': {str(k): v for k, v in counts.items()},
                   'last': {str(k): v for k, v in last.items()}}, f)
    rclpy.try_shutdown()


def role_source(args) -> None:
    """Publish at a fixed rate with absolute deadlines; stamps from the system clock."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    rclpy.init()
    node = rclpy.create_node('bench_source')
    pub = node.create_publisher(WrenchStamped, IN_TOPIC, _qos('reliable'))
    deadline = time.monotonic() + 20
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    msg = WrenchStamped()
    msg.header.frame_id = 'object'
    msg.wrench.force.z = 10.0
    msg.wrench.torque.x = 0.1
    period = 1.0 / args.rate
    # warm-up at the same rate (not measured): discovery of relay -> sink completes
    t0 = time.perf_counter()
    for k in range(int(args.settle * args.rate)):
        d = t0 + k * period - time.perf_counter()
        if d > 0:
            time.sleep(d)
        s = time.time_ns()
        msg.header.stamp.sec = s // 1_000_000_000
        msg.header.stamp.nanosec = s % 1_000_000_000
        pub.publish(msg)
    n = int(args.duration * args.rate)
    stamps = []
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
    rclpy.try_shutdown()


# -- orchestration ----------------------------------------------------------------------
def write_distributor_params(path: str) -> None:
    """Write the distributor's parameter file of the relay benchmark (four static contacts).

    :param path: file to write.
    """
    import yaml
    pos = [0.3, 0.2, 0.0, 0.3, -0.2, 0.0, -0.3, 0.2, 0.0, -0.3, -0.2, 0.0]
    with open(path, 'w') as f:
        yaml.safe_dump({'/**': {'ros__parameters': {
            'effectors': NAMES, 'contact_types': ['rigid'] * N_EFFECTORS,
            'contact_source': 'static', 'contact_positions': pos,
            'object_com': [0.0, 0.0, 0.05], 'input_timeout': 0.0,
            'internal_load_handles': ['squeeze(e0,e1)=10.0']}}}, f)


def relay_figures(src_data: dict, sink_data: dict, label: str, rate: float) -> dict:
    """Loss and latency figures of one run from the source's and the sink's records.

    :param src_data: the source's JSON (stamps sent, elapsed time).
    :param sink_data: the sink's JSON (counts and last arrival per stamp).
    :param label: the ``target`` entry of the figures.
    :param rate: input rate (Hz).
    :return: dict of results.
    """
    stamps = src_data['stamps']
    counts = sink_data['counts']
    last = sink_data['last']
    lat = []
    lost = 0
    lost_idx = []
    for i, s in enumerate(stamps):
        if counts.get(str(s), 0) >= N_EFFECTORS:
            lat.append((last[str(s)] - s) * 1e-6)
        else:
            lost += 1
            lost_idx.append(i)
    lat = np.asarray(lat) if lat else np.asarray([np.nan])
    complete = len(stamps) - lost
    return {'target': label,
            'load1': round(os.getloadavg()[0], 2),
            'rate': rate, 'sent': len(stamps), 'lost': lost,
            'lost_pct': 100.0 * lost / max(len(stamps), 1),
            'held_hz': complete / src_data['elapsed'],
            'p50_ms': float(np.percentile(lat, 50)), 'p99_ms': float(np.percentile(lat, 99)),
            'lost_first_index': lost_idx[0] if lost_idx else None,
            'lost_last_index': lost_idx[-1] if lost_idx else None}


def run_one(target: str, rate: float, duration: float, settle: float, domain: int,
            executor: str) -> dict:
    """Run source, target (relay or distributor) and sink once; return the figures.

    :param target: ``relay`` or ``distributor``.
    :param rate: input rate (Hz).
    :param duration: seconds of publishing.
    :param settle: seconds of discovery before publishing.
    :param domain: ROS domain id.
    :param executor: distributor executor (``events`` or ``single``).
    :return: dict of results.
    """
    tmp = tempfile.mkdtemp(prefix='wd_bench_')
    env = ros_env(domain)
    me = [sys.executable, os.path.abspath(__file__)]
    common = ['--rate', str(rate), '--duration', str(duration), '--settle', str(settle)]
    procs = []
    try:
        if target == 'relay':
            procs.append(subprocess.Popen(me + ['--role', 'relay', '--relay-executor', executor],
                                          env=env))
        else:
            pf = os.path.join(tmp, 'p.yaml')
            write_distributor_params(pf)
            exe = os.path.join(os.path.dirname(sys.executable), 'distributor')
            e = dict(env, WRENCH_DISTRIBUTION_EXECUTOR=executor)
            procs.append(subprocess.Popen([exe, '--ros-args', '--params-file', pf,
                                           '--log-level', 'warn'], env=e))
        sink_out = os.path.join(tmp, 'sink.json')
        src_out = os.path.join(tmp, 'src.json')
        sink = subprocess.Popen(me + ['--role', 'sink', '--out', sink_out] + common, env=env)
        time.sleep(0.5)
        src = subprocess.Popen(me + ['--role', 'source', '--out', src_out] + common, env=env)
        src.wait(duration + settle + 30)
        sink.wait(duration + settle + 30)
    finally:
        for p in procs:
            stop(p)
    with open(src_out) as f:
        src_data = json.load(f)
    with open(sink_out) as f:
        sink_data = json.load(f)
    return relay_figures(src_data, sink_data, f'{target} ({executor})', rate)


def main(argv=None) -> int:
    """Command line: orchestrate (default) or run one role.

    :param argv: arguments.
    :return: exit code.
    """
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--role', choices=['source', 'relay', 'sink'])
    ap.add_argument('--out')
    ap.add_argument('--rate', type=float, default=500.0)
    ap.add_argument('--rates', type=float, nargs='+', default=[500.0, 1000.0])
    ap.add_argument('--duration', type=float, default=10.0)
    ap.add_argument('--settle', type=float, default=3.0,
                    help='seconds of unmeasured warm-up publishing')
    ap.add_argument('--executors', nargs='+', default=['events'],
                    help='distributor executors to run: events, single')
    ap.add_argument('--relay-executor', default='single',
                    help='executor of the baseline relay: single (the reference) or events')
    ap.add_argument('--relay-events', action='store_true',
                    help='also run the relay on EventsExecutor (same Python cost as the '
                         'distributor minus its own work)')
    ap.add_argument('--markdown', action='store_true')
    args = ap.parse_args(argv)
    if args.role:
        {'source': role_source, 'relay': role_relay, 'sink': role_sink}[args.role](args)
        return 0
    domain = int(os.environ.get('ROS_DOMAIN_ID', '77'))
    rows = []
    for rate in args.rates:
        relay = run_one('relay', rate, args.duration, args.settle, domain, 'single')
        rows.append(relay)
        extra = 0
        if args.relay_events:
            r = run_one('relay', rate, args.duration, args.settle, domain, 'events')
            r['p50_ratio'] = r['p50_ms'] / relay['p50_ms']
            r['p99_ratio'] = r['p99_ms'] / relay['p99_ms']
            rows.append(r)
            extra = 1
        for ex in args.executors:
            r = run_one('distributor', rate, args.duration, args.settle, domain, ex)
            r['p50_ratio'] = r['p50_ms'] / relay['p50_ms']
            r['p99_ratio'] = r['p99_ms'] / relay['p99_ms']
            rows.append(r)
        for r in rows[-1 - extra - len(args.executors):]:
            print(json.dumps(r), flush=True)
    if args.markdown:
        print('\n| target | rate (Hz) | held (Hz) | lost cycles | p50 (ms) | p99 (ms) | '
              'p50 / relay | p99 / relay | load avg |')
        print('|---|---|---|---|---|---|---|---|---|')
        for r in rows:
            ratio = (f"{r['p50_ratio']:.2f} | {r['p99_ratio']:.2f}" if 'p50_ratio' in r
                     else '1 | 1')
            print(f"| {r['target']} | {r['rate']:.0f} | {r['held_hz']:.0f} | "
                  f"{r['lost']} / {r['sent']} ({r['lost_pct']:.1f} %) | {r['p50_ms']:.2f} | "
                  f"{r['p99_ms']:.2f} | {ratio} | {r['load1']} |")
    return 0


if __name__ == '__main__':
    sys.exit(main())
