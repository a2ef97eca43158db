"""Soak test of the distributor: N minutes at a fixed rate, four effectors, over real DDS.

Source, distributor and sink run in separate processes (the source and sink roles of
``bench_relay.py``, ``relay/roles.py``). Reports, per minute of the run: inputs sent, lost cycles (an input
whose four commands did not all arrive), latency percentiles from the input stamp to the
last of its four commands; and the distributor's resident memory sampled every few
seconds, with its least-squares slope after the first minute (kB per minute).

Usage::

    ROS_DOMAIN_ID=10 .venv/bin/python benchmarks/bench_soak.py --minutes 10 --rate 500

The machine is shared: the load average at the start and end is printed with the figures.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

from relay.fanout import distributor_params, FanOut, write_params
from relay.runs import read_role_json, start_role

from wrench_distribution.processes import Children, console_command, loopback_environment


def rss_kb(pid: int) -> int:
    """Resident set size of a process (kB), 0 when it is gone.

    :param pid: process id.
    :return: VmRSS in kB.
    """
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def per_minute(stamps: list, counts: dict, last: dict, n_out: int) -> list:
    """Figures per minute of the run.

    :param stamps: input stamps (ns) in sending order.
    :param counts: stamp (str) -> outputs received.
    :param last: stamp (str) -> arrival time (ns) of the last output.
    :param n_out: outputs per input.
    :return: one dict per minute.
    """
    t0 = stamps[0]
    rows = {}
    for s in stamps:
        m = int((s - t0) // 60_000_000_000)
        r = rows.setdefault(m, {'minute': m + 1, 'sent': 0, 'lost': 0, 'lat': []})
        r['sent'] += 1
        if counts.get(str(s), 0) >= n_out:
            r['lat'].append((last[str(s)] - s) * 1e-6)
        else:
            r['lost'] += 1
    out = []
    for m in sorted(rows):
        r = rows[m]
        lat = np.asarray(r.pop('lat') or [np.nan])
        r.update({f'p{q}_ms': float(np.percentile(lat, q)) for q in (50, 90, 99)})
        r['max_ms'] = float(np.max(lat))
        out.append(r)
    return out


def rss_slope(samples: list, skip_s: float = 60.0) -> float:
    """Least-squares slope of RSS after a warm-up (kB per minute).

    :param samples: ``(seconds since start, kB)`` pairs.
    :param skip_s: warm-up to ignore (s).
    :return: slope, NaN with fewer than 3 samples.
    """
    pts = np.asarray([p for p in samples if p[0] >= skip_s and p[1] > 0], float)
    if len(pts) < 3:
        return float('nan')
    return float(np.polyfit(pts[:, 0] / 60.0, pts[:, 1], 1)[0])


def run(minutes: float, rate: float, settle: float, domain: int, rss_period: float,
        target: str = 'distributor') -> dict:
    """Run the soak once.

    ``target`` ``relay`` runs the bare rclpy relay of ``bench_relay.py`` instead of the
    distributor: the same soak on the same machine tells what the machine itself loses.

    :return: ``{'minutes': [...], 'rss': [...], 'rss_slope_kb_per_min': float, ...}``.
    """
    duration = minutes * 60.0
    fan = FanOut()
    env = loopback_environment(domain)
    common = ['--rate', str(rate), '--duration', str(duration), '--settle', str(settle)]
    load0 = os.getloadavg()[0]
    rss = []
    with tempfile.TemporaryDirectory(prefix='wd_soak_') as tmp, Children() as procs:
        pf = os.path.join(tmp, 'p.yaml')
        write_params(pf, {'/**': distributor_params(fan)})
        sink_out, src_out = os.path.join(tmp, 'sink.json'), os.path.join(tmp, 'src.json')
        if target == 'relay':
            dist = start_role(procs, tmp, env, fan, 'relay', '--relay-executor', 'single')
        else:
            dist = procs.start('distributor', console_command('distributor', 'wrench_distribution.distributor_node')
                               + ['--ros-args', '--params-file', pf, '--log-level', 'warn'], env,
                               log=os.path.join(tmp, 'distributor.log'))
        sink = start_role(procs, tmp, env, fan, 'sink', '--out', sink_out, *common)
        time.sleep(0.5)
        src = start_role(procs, tmp, env, fan, 'source', '--out', src_out, *common)
        t0 = time.monotonic()
        while src.poll() is None:
            rss.append((time.monotonic() - t0 - settle, rss_kb(dist.pid)))
            time.sleep(rss_period)
        sink.wait(settle + 60)
        procs.stop()
        src_data, sink_data = read_role_json(procs, src_out), read_role_json(procs, sink_out)
    rows = per_minute(src_data['stamps'], sink_data['counts'], sink_data['last'], fan.effectors)
    return {'rate': rate, 'minutes': rows, 'rss': rss, 'load_start': round(load0, 2),
            'load_end': round(os.getloadavg()[0], 2),
            'rss_slope_kb_per_min': rss_slope(rss),
            'sent': sum(r['sent'] for r in rows), 'lost': sum(r['lost'] for r in rows)}


def main(argv=None) -> int:
    """Command line.

    :param argv: arguments.
    :return: exit code.
    """
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--minutes', type=float, default=10.0)
    ap.add_argument('--rate', type=float, default=500.0)
    ap.add_argument('--settle', type=float, default=3.0)
    ap.add_argument('--rss-period', type=float, default=5.0)
    ap.add_argument('--target', choices=['distributor', 'relay'], default='distributor')
    args = ap.parse_args(argv)
    res = run(args.minutes, args.rate, args.settle, int(os.environ.get('ROS_DOMAIN_ID', '77')),
              args.rss_period, args.target)
    print(f"{args.target}: rate {res['rate']:.0f} Hz, 4 effectors, {args.minutes:g} min: sent {res['sent']}, "
          f"lost {res['lost']}; RSS {res['rss'][1][1] if len(res['rss']) > 1 else 0}"
          f" -> {max((r for _, r in res['rss'][-3:]), default=0)} kB, slope after minute 1: "
          f"{res['rss_slope_kb_per_min']:.1f} kB/min; load avg {res['load_start']} -> "
          f"{res['load_end']}")
    print('\n| minute | sent | lost | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) |')
    print('|---|---|---|---|---|---|---|')
    for r in res['minutes']:
        print(f"| {r['minute']} | {r['sent']} | {r['lost']} | {r['p50_ms']:.2f} | "
              f"{r['p90_ms']:.2f} | {r['p99_ms']:.2f} | {r['max_ms']:.2f} |")
    return 0


if __name__ == '__main__':
    sys.exit(main())
