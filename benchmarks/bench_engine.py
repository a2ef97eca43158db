"""Benchmark: the analysis engine per message (the analyzer node's path) and per chunk.

Feeds the same synchronised readings of 4 rigid contacts with sensor offsets and tool
weights to :meth:`AnalysisEngine.offer` one message at a time, as the node does, and to
:meth:`AnalysisEngine.push_chunk` in one chunk, as ``analyze-bag`` does, and prints the
cost per sample of each (no ROS: what the node adds on top is message conversion).

Usage::

    .venv/bin/python benchmarks/bench_engine.py [--samples 3000]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from wrench_distribution.config.loading import load_analyzer_config
from wrench_distribution.engine import AnalysisEngine, StaticPoses

EFFECTORS = ['a', 'b', 'c', 'd']
POSITIONS = [[0.2, 0.0, 0.0], [-0.2, 0.0, 0.0], [0.0, 0.2, 0.05], [0.0, -0.2, -0.05]]
PERIOD_NS = 1_000_000


def config():
    """Return the analyzer configuration (static contacts, sensors offset, tools weighed)."""
    return load_analyzer_config({'wrench_analyzer': {'ros__parameters': {
        'effectors': EFFECTORS, 'contact_source': 'static',
        'contact_positions': [x for p in POSITIONS for x in p],
        'sensor_positions': [0.0, 0.0, -0.05] * 4, 'tool_masses': [0.3] * 4,
        'object_com': [0.0, 0.0, 0.02], 'object_mass': 3.0, 'max_age': 0.0}}})


def engine() -> AnalysisEngine:
    """Return a fresh engine on the benchmark's contacts."""
    poses = np.array([p + [0.0, 0.0, 0.0, 1.0] for p in POSITIONS])
    return AnalysisEngine(config(), StaticPoses(poses))


def main() -> None:
    """Time both entry points on the same readings and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--samples', type=int, default=3000)
    k = parser.parse_args().samples
    n = len(EFFECTORS)
    rng = np.random.default_rng(0)
    stamps = 10**18 + PERIOD_NS * np.arange(k, dtype=np.int64)
    readings = rng.normal(size=(k, n, 6))
    live = engine()
    t = time.perf_counter()
    count = 0
    for j in range(k):
        stamp = int(stamps[j])
        for i in range(n):
            count += len(live.offer(i, stamp, readings[j, i], stamp + 1000).samples)
    live_s = time.perf_counter() - t
    offline = engine()
    stream = np.tile(np.arange(n), k)
    stamp = np.repeat(stamps, n)
    t = time.perf_counter()
    chunk = offline.push_chunk(stream, stamp + 1000, stamp, readings.reshape(-1, 6))
    chunk_s = time.perf_counter() - t
    assert count == len(chunk) == k
    print(f'{k} samples of {n} contacts; load average before the end: {os.getloadavg()}')
    print(f'per message (offer, the node):     {live_s / k * 1e6:8.1f} us per sample')
    print(f'per chunk (push_chunk, analyze-bag): {chunk_s / k * 1e6:8.1f} us per sample')


if __name__ == '__main__':
    main()
