"""Benchmark: parameter files refused before rcl reads them, and what a file within the bound costs.

1. Each node executable (``distributor``, ``analyzer``, ``cell``: ``wrench_distribution.entry``)
   run with a 50 MB parameter file and with a missing one (both refused from ``stat`` before the
   node's module is imported) and with a 0.94 MB list of values (within the size bound: the
   node's module imported, the file parsed by the bounded loader and refused for its count of
   values): all exit 2 before ``rclpy.init``. Medians over the rounds, alternating.
2. ``rclpy.init`` alone (rcl's parser, in a child with a time limit) on lists of values of 0.5
   and 1 MB (within the size bound), on the 50 MB file, and on the worst files the count bound
   (``MAX_PARAM_VALUES``) lets through: one list, one section of that many parameters, that many
   values over sections of two.
3. A file just under the bound (a 0.93 MB list of values beside a node's section) parsed by
   PyYAML's Python ``SafeLoader`` (no limits) and by the bounded loader (``core/safe_load``: its
   limits checked over the events, then libyaml where PyYAML has it).

Usage::

    .venv/bin/python benchmarks/bench_param_files.py [--rounds 5] [--rcl-limit 120]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from wrench_distribution.config.loading import MAX_PARAM_VALUES
from wrench_distribution.processes import console_command, loopback_environment, run_to_end

SCRIPTS = {'distributor': 'wrench_distribution.distributor_node',
           'analyzer': 'wrench_distribution.analyzer_node', 'cell': 'wrench_distribution.cell'}
MIB = 1024 * 1024


def values_file(path: str, size: int) -> str:
    """Write a parameter file of about ``size`` bytes: one node's list of doubles."""
    count = max(1, size // 8)
    with open(path, 'w', encoding='utf-8') as f:
        f.write('other_node:\n  ros__parameters:\n    values: [')
        f.write(', '.join(f'{i * 0.001:.3f}' for i in range(count)))
        f.write(']\n')
    return path


def shaped_file(path: str, shape: str, count: int) -> str:
    """Write a parameter file of ``count`` values: one list, one section of parameters, or sections of two."""
    with open(path, 'w', encoding='utf-8') as f:
        if shape == 'one list':
            f.write('other:\n  ros__parameters:\n    values: [' + ', '.join(['0.5'] * count) + ']\n')
        elif shape == 'parameters':
            f.write('other:\n  ros__parameters:\n' + ''.join(f'    p{i}: {i}\n' for i in range(count)))
        else:
            f.write(''.join(f'node{i}:\n  ros__parameters:\n    a: [1, 2]\n' for i in range(count // 2)))
    return path


def comments_file(path: str, size: int) -> str:
    """Write a parameter file of ``size`` bytes or more: a section and comment lines."""
    line = '    # ' + 'x' * 90 + '\n'
    with open(path, 'w', encoding='utf-8') as f:
        f.write('/**:\n  ros__parameters:\n    effectors: [left, right]\n')
        f.write(line * (size // len(line) + 1))
    return path


def refusal_seconds(script: str, path: str, env: dict) -> float:
    """Run a node entry point on one parameter file to its exit (2 expected); return the wall time."""
    command = console_command(script, SCRIPTS[script]) + ['--ros-args', '--params-file', path]
    start = time.monotonic()
    done = run_to_end(command, env, 60.0)
    elapsed = time.monotonic() - start
    if done.returncode != 2 or done.timed_out:
        raise SystemExit(f'{script} did not refuse {path}: {done.output[-500:]}')
    return elapsed


def rcl_seconds(path: str, env: dict, limit: float) -> str:
    """Time ``rclpy.init`` on a parameter file in a child; the limit when it does not finish."""
    code = ('import time, rclpy\nstart = time.monotonic()\n'
            f'rclpy.init(args=["x", "--ros-args", "--params-file", {path!r}])\n'
            'print(f"{time.monotonic() - start:.2f}")\nrclpy.shutdown()\n')
    done = run_to_end([sys.executable, '-c', code], env, limit)
    if done.timed_out:
        return f'> {limit:g} (stopped)'
    return done.output.strip().splitlines()[-1] if done.returncode == 0 else 'failed: ' + done.output[-200:]


def loader_seconds(path: str) -> tuple:
    """Parse a file by PyYAML's Python ``SafeLoader``, then by the bounded loader (libyaml where PyYAML has it)."""
    import yaml
    from wrench_distribution.core.safe_load import load_text
    with open(path, encoding='utf-8') as f:
        text = f.read()
    start = time.monotonic()
    yaml.load(text, Loader=yaml.SafeLoader)
    python = time.monotonic() - start
    start = time.monotonic()
    load_text(text, 'file')
    return python, time.monotonic() - start, hasattr(yaml, 'CSafeLoader')


def main(argv=None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--rcl-limit', type=float, default=120.0, help='seconds rcl may parse one file')
    args = parser.parse_args(argv)
    env = loopback_environment(int(os.environ.get('ROS_DOMAIN_ID', '0')))
    with tempfile.TemporaryDirectory(prefix='bench_param_files_') as tmp:
        big = comments_file(os.path.join(tmp, 'big.yaml'), 50 * MIB)
        missing = os.path.join(tmp, 'missing.yaml')
        values = values_file(os.path.join(tmp, 'values.yaml'), int(0.93 * 1e6))
        print(f'load average {os.getloadavg()[0]:.1f}; 50 MB file: {os.path.getsize(big)} bytes, list of values: '
              f'{os.path.getsize(values)} bytes')
        print('| entry point | refused, 50 MB file (s) | refused, 0.94 MB of values (s) | refused, missing file (s) |'
              ' differences (s) |')
        print('|---|---|---|---|---|')
        for script in SCRIPTS:
            times = {big: [], values: [], missing: []}
            for _ in range(args.rounds):
                for path in times:
                    times[path].append(refusal_seconds(script, path, env))
            b, v, m = (statistics.median(times[path]) for path in (big, values, missing))
            print(f'| {script} | {b:.2f} | {v:.2f} | {m:.2f} | {b - m:+.3f}, {v - m:+.3f} |')
        print('\n| file | rclpy.init (s) |\n|---|---|')
        for size in (MIB // 2, MIB):
            path = values_file(os.path.join(tmp, f'values_{size}.yaml'), size)
            print(f'| {os.path.getsize(path)} bytes of values | {rcl_seconds(path, env, args.rcl_limit)} |')
        print(f'| {os.path.getsize(big)} bytes (comments) | {rcl_seconds(big, env, args.rcl_limit)} |')
        for shape in ('one list', 'parameters', 'sections of two'):
            path = shaped_file(os.path.join(tmp, 'shape.yaml'), shape, MAX_PARAM_VALUES)
            print(f'| {MAX_PARAM_VALUES} values, {shape} ({os.path.getsize(path)} bytes) | '
                  f'{rcl_seconds(path, env, args.rcl_limit)} |')
        python, fast, has_libyaml = loader_seconds(values)
        print(f'\n{os.path.getsize(values)} bytes: Python SafeLoader {python:.2f} s, bounded loader '
              f'{fast:.2f} s (libyaml: {has_libyaml}); ratio {fast / python:.2f}')
        print(f'load average {os.getloadavg()[0]:.1f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
