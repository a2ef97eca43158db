"""Benchmark: offline bag analysis against merely reading and deserialising the bag.

Writes a bag of N synchronised samples from ``--effectors`` F/T sensors (4 by default,
``geometry_msgs/msg/WrenchStamped``; with ``--pose-topic`` also a
``geometry_msgs/msg/PoseArray`` contact topic every 10 samples, which the analysis then
reads), then times in the same run:

* ``read``: iterating the raw messages with rosbags (no deserialisation);
* ``read+deserialise``: the same plus ``typestore.deserialize_cdr`` of every message,
  i.e. what any rosbags script has to do before it can look at a wrench;
* ``analyze-bag``: the whole offline analysis (read, decode, synchronise, analyse,
  write ``samples.parquet`` (and ``samples.csv`` with ``--csv``), summary, plots,
  layout), with the time per stage.

With ``--bags N``, it instead times a directory of N copies of one bag (of
``--samples`` samples): analysed one after the other in this process
(``analyze_bag``), then as one Dask task per bag on a local cluster of 1 and of
``--workers`` worker processes (cluster start-up included).

The machine's load average (``os.getloadavg``) is printed before and after, since
the figures are only comparable within one run.

Usage::

    .venv/bin/python benchmarks/bench_bag.py [--samples 1000000] [--storage sqlite3|mcap]
        [--effectors 4] [--pose-topic] [--csv] [--workdir DIR] [--bag EXISTING_BAG] [--keep] [--profile OUT.prof]
        [--json OUT]
    .venv/bin/python benchmarks/bench_bag.py --bags 8 --samples 100000 [--workers 2]
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
from pathlib import Path
import shutil
import sys
import tempfile
import time

import numpy as np
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import get_typestore, Stores
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wrench_distribution.bag.pipeline import analyze_bag, Options  # noqa: E402
from wrench_distribution.bag.reader import default_typestore  # noqa: E402
from wrench_distribution.config.loading import load_analyzer_config  # noqa: E402

EFFECTORS = ['e0', 'e1', 'e2', 'e3']
POSITIONS = [[0.3, 0.0, 0.0], [0.0, 0.3, 0.0], [-0.3, 0.0, 0.0], [0.0, -0.3, 0.05]]


def encode(stamps_ns: np.ndarray, wrenches: np.ndarray, frame_id: str) -> np.ndarray:
    """Little-endian CDR payloads of WrenchStamped, one row per message."""
    k = len(stamps_ns)
    fid = frame_id.encode() + b'\0'
    off = 4 + ((12 + len(fid) + 7) // 8) * 8
    buf = np.zeros((k, off + 48), np.uint8)
    buf[:, 1] = 1
    buf[:, 4:8] = (stamps_ns // 10**9).astype('<i4').view(np.uint8).reshape(k, 4)
    buf[:, 8:12] = (stamps_ns % 10**9).astype('<u4').view(np.uint8).reshape(k, 4)
    buf[:, 12:16] = np.array([len(fid)], '<u4').view(np.uint8)
    buf[:, 16:16 + len(fid)] = np.frombuffer(fid, np.uint8)
    buf[:, off:] = wrenches.astype('<f8').view(np.uint8).reshape(k, 48)
    return buf


POSE_PERIOD = 10


def pose_array(ts, ns: int, effectors: int):
    """Return the PoseArray of the static contact poses, stamped ``ns``."""
    T = ts.types
    poses = [T['geometry_msgs/msg/Pose'](
        position=T['geometry_msgs/msg/Point'](x=p[0], y=p[1], z=p[2]),
        orientation=T['geometry_msgs/msg/Quaternion'](x=0.0, y=0.0, z=0.0, w=1.0))
        for p in POSITIONS[:effectors]]
    stamp = T['builtin_interfaces/msg/Time'](sec=ns // 10**9, nanosec=ns % 10**9)
    return T['geometry_msgs/msg/PoseArray'](
        header=T['std_msgs/msg/Header'](stamp=stamp, frame_id='object'), poses=poses)


def write_bag(path: Path, samples: int, storage: str, effectors: int = 4,
              pose_topic: bool = False) -> None:
    """Write the benchmark bag (F/T streams, and a PoseArray topic if asked)."""
    ts = get_typestore(Stores.ROS2_HUMBLE)
    rng = np.random.default_rng(0)
    plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
    names = EFFECTORS[:effectors]
    with Writer(path, version=8, storage_plugin=plugin) as w:
        conns = [w.add_connection(f'/{e}/ft_sensor', 'geometry_msgs/msg/WrenchStamped',
                                  typestore=ts) for e in names]
        pose_conn = w.add_connection('/contact_poses', 'geometry_msgs/msg/PoseArray',
                                     typestore=ts) if pose_topic else None
        step = 100_000
        for s in range(0, samples, step):
            k = min(step, samples - s)
            st = 1_700_000_000 * 10**9 + np.arange(s, s + k, dtype=np.int64) * 1_000_000
            base = np.column_stack([np.sin(st * 1e-9), np.cos(st * 1e-9), 5 + 0 * st,
                                    0 * st, 0 * st, 0 * st])
            bufs = [encode(st, base + rng.normal(scale=0.5, size=(k, 6)), f'{e}_ft')
                    for e in names]
            recv = (st + 200_000).tolist()
            for j in range(k):
                if pose_conn is not None and (s + j) % POSE_PERIOD == 0:
                    w.write(pose_conn, recv[j] - 100_000, ts.serialize_cdr(
                        pose_array(ts, int(st[j]), effectors), 'geometry_msgs/msg/PoseArray'))
                for c, b in zip(conns, bufs):
                    w.write(c, recv[j], b[j].tobytes())


def params(effectors: int = 4, pose_topic: bool = False) -> dict:
    """Return the analyzer parameters of the benchmark bag."""
    p = {'effectors': EFFECTORS[:effectors], 'contact_source': 'static',
         'contact_positions': [x for p in POSITIONS[:effectors] for x in p],
         'object_com': [0.0, 0.0, 0.02], 'object_mass': 3.0, 'max_age': 0.0,
         'sync_tolerance': 0.0005}
    if pose_topic:
        p.pop('contact_positions')
        p.update(contact_source='topic', contact_timeout=1.0)
    return {'wrench_analyzer': {'ros__parameters': p}}


def time_read(bag: Path, deserialise: bool) -> tuple[float, int]:
    """Time rosbags' own read (and deserialisation) of every message of the bag."""
    ts = default_typestore()
    t = time.perf_counter()
    count = 0
    with AnyReader([bag], default_typestore=ts) as reader:
        if deserialise:
            for conn, _, raw in reader.messages():
                reader.deserialize(raw, conn.msgtype)
                count += 1
        else:
            for _ in reader.messages():
                count += 1
    return time.perf_counter() - t, count


def report(args, out: Path, n: int, read_s: float, deser_s: float, full_s: float,
           stages: dict, loads: tuple) -> dict:
    """Print the ratios, the output sizes and the load; return the figures."""
    load_before, load_after = loads
    sizes = {p.name: p.stat().st_size / 1e6 for p in out.glob('samples.*')}
    result = {'samples': args.samples, 'effectors': args.effectors,
              'pose_topic': args.pose_topic, 'messages': n,
              'storage': args.storage, 'read_s': read_s, 'read_deserialise_s': deser_s,
              'analyze_s': full_s, 'stages_s': stages, 'output_MB': sizes,
              'ratio_vs_read_deserialise': full_s / deser_s,
              'ratio_vs_read': full_s / read_s,
              'loadavg_before': load_before, 'loadavg_after': load_after}
    print(f'ratio analyze / (read+deserialise) = {full_s / deser_s:.2f} '
          '(target <= 1.0, aim 0.5)')
    print(f'ratio analyze / read               = {full_s / read_s:.2f}')
    print('outputs ' + ', '.join(f'{k} {v:.0f} MB' for k, v in sorted(sizes.items())))
    print('load average (1, 5, 15 min) before: '
          + ' '.join(f'{x:.2f}' for x in load_before)
          + ', after: ' + ' '.join(f'{x:.2f}' for x in load_after))
    return result


def bench_directory(args, work: Path) -> int:
    """Sequential analysis of N bags against Dask tasks on local clusters."""
    from wrench_distribution.bag.parallel import analyze_directory
    root = work / 'fleet'
    write_bag(root / 'bag000', args.samples, args.storage, args.effectors, args.pose_topic)
    for j in range(1, args.bags):
        shutil.copytree(root / 'bag000', root / f'bag{j:03d}')
    cfg_path = work / 'params.yaml'
    cfg_path.write_text(yaml.safe_dump(params(args.effectors, args.pose_topic)))
    config = load_analyzer_config(cfg_path)
    print(f'{args.bags} bags x {args.samples} samples x 4 effectors ({args.storage}); '
          f'load average before: {os.getloadavg()[0]:.2f}', flush=True)
    t = time.perf_counter()
    for bag in sorted(root.iterdir()):
        analyze_bag(bag, config, work / 'seq' / bag.name, Options(plots=False))
    seq_s = time.perf_counter() - t
    print(f'sequential, this process      {seq_s:8.2f} s', flush=True)
    for workers in sorted({1, args.workers}):
        t = time.perf_counter()
        results = analyze_directory(root, config, work / f'dask{workers}', Options(plots=False),
                                    jobs=workers).results
        dask_s = time.perf_counter() - t
        assert all(r.error is None for r in results), [r.error for r in results]
        print(f'Dask, {workers} worker process(es)  {dask_s:8.2f} s  '
              f'(sequential / Dask = {seq_s / dask_s:.2f})', flush=True)
    print(f'load average after: {os.getloadavg()[0]:.2f}; usable cores: '
          f'{len(os.sched_getaffinity(0))}')
    return 0


def parse_args() -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--samples', type=int, default=1_000_000)
    parser.add_argument('--storage', choices=('sqlite3', 'mcap'), default='sqlite3')
    parser.add_argument('--workdir', type=Path, default=None)
    parser.add_argument('--keep', action='store_true', help='keep the bag and outputs')
    parser.add_argument('--json', type=Path, default=None, help='write the figures here')
    parser.add_argument('--csv', action='store_true', help='also write samples.csv')
    parser.add_argument('--effectors', type=int, default=4, choices=(2, 3, 4),
                        help='F/T sensors in the bag (default: %(default)s)')
    parser.add_argument('--pose-topic', action='store_true',
                        help='also record a PoseArray contact topic (every 10 samples) and '
                             'read the contacts from it')
    parser.add_argument('--bag', type=Path, default=None,
                        help='reuse a bag written by an earlier run (--keep); --samples '
                             'and --storage must match it')
    parser.add_argument('--profile', type=Path, default=None,
                        help='write a cProfile of analyze-bag here (slows it down)')
    parser.add_argument('--bags', type=int, default=0,
                        help='time a directory of this many bags on Dask instead')
    parser.add_argument('--workers', type=int, default=2,
                        help='worker processes of the local cluster (with --bags)')
    return parser.parse_args()


def bench_one_bag(args: argparse.Namespace, work: Path) -> None:
    """Time reading, deserialising and analysing one bag; print (and write) the figures."""
    bag = args.bag or work / f'bag_{args.storage}'
    if args.bag is None:
        t = time.perf_counter()
        write_bag(bag, args.samples, args.storage, args.effectors, args.pose_topic)
        print(f'wrote {args.samples} samples x {args.effectors} effectors ({args.storage}, '
              f'{sum(p.stat().st_size for p in bag.iterdir()) / 1e6:.0f} MB) '
              f'in {time.perf_counter() - t:.1f} s', flush=True)
    load_before = os.getloadavg()
    cfg_path = work / 'params.yaml'
    cfg_path.write_text(yaml.safe_dump(params(args.effectors, args.pose_topic)))
    config = load_analyzer_config(cfg_path)
    time_read(bag, False)  # warm the page cache
    read_s, n = time_read(bag, False)
    print(f'read               {read_s:8.2f} s  {args.samples / read_s:10.0f} samples/s',
          flush=True)
    cpu = time.process_time()
    deser_s, _ = time_read(bag, True)
    deser_cpu = time.process_time() - cpu
    print(f'read+deserialise   {deser_s:8.2f} s  {args.samples / deser_s:10.0f} samples/s',
          flush=True)
    stages: dict = {}
    profiler = cProfile.Profile() if args.profile else None
    t, cpu = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    summary = analyze_bag(bag, config, work / 'out', Options(timings=stages, csv=args.csv))
    full_s, full_cpu = time.perf_counter() - t, time.process_time() - cpu
    if profiler:
        profiler.disable()
        profiler.dump_stats(args.profile)
    load_after = os.getloadavg()
    assert summary['samples'] == args.samples, summary['samples']
    print(f'analyze-bag        {full_s:8.2f} s  {args.samples / full_s:10.0f} samples/s',
          flush=True)
    for stage, sec in stages.items():
        print(f'   {stage:<20} {sec:8.2f} s')
    result = report(args, work / 'out', n, read_s, deser_s, full_s, stages,
                    (load_before, load_after))
    # CPU time of this process (every thread): less moved by other processes' load
    print(f'CPU time: read+deserialise {deser_cpu:.2f} s, analyze-bag {full_cpu:.2f} s, '
          f'ratio {full_cpu / deser_cpu:.2f}')
    result.update(read_deserialise_cpu_s=deser_cpu, analyze_cpu_s=full_cpu)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + '\n')


def main() -> int:
    """Run the benchmark; return the exit code."""
    args = parse_args()
    work = Path(tempfile.mkdtemp(prefix='bench_bag_', dir=args.workdir))
    if args.bags:
        try:
            return bench_directory(args, work)
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    try:
        bench_one_bag(args, work)
    finally:
        if args.keep:
            print(f'kept {work}')
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
