"""Benchmark: the cost of the sensor health checks per sample, live and per chunk.

The analysis engine with and without a health monitor (per-sensor checks and the set's
consistency at rest), on the same synchronised readings of 2 and 4 rigid contacts (sensor
offsets, tool weights, noise 0.05 N): per message as the analyzer node calls it
(:meth:`AnalysisEngine.offer`) and per chunk as ``analyze-bag`` does (:meth:`push_chunk`).
Rounds alternate with and without the monitor; the figures are medians over the rounds, and
the ratio is the checks' share of the engine's own cost, measured in the same run. The
monitor alone (``HealthMonitor.observe`` on one sample, and on a chunk) is timed as well.

Usage::

    .venv/bin/python benchmarks/bench_health.py [--samples 2000] [--chunk 100000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from wrench_distribution.config.loading import load_analyzer_config
from wrench_distribution.engine import AnalysisEngine, StaticPoses
from wrench_distribution.engine.health import HealthMonitor

LAYOUTS = {2: [[0.0, -0.2, 0.0], [0.0, 0.2, 0.0]],
           4: [[0.2, 0.0, 0.0], [-0.2, 0.0, 0.0], [0.0, 0.2, 0.05], [0.0, -0.2, -0.05]]}
PERIOD_NS = 1_000_000


def engine(n: int, health: bool) -> AnalysisEngine:
    """Return a fresh engine on ``n`` static rigid contacts, with a health monitor (at rest) or none."""
    positions = LAYOUTS[n]
    config = load_analyzer_config({'wrench_analyzer': {'ros__parameters': {
        'effectors': [f'e{i}' for i in range(n)], 'contact_source': 'static',
        'contact_positions': [x for p in positions for x in p],
        'sensor_positions': [0.0, 0.0, -0.05] * n, 'tool_masses': [0.3] * n,
        'object_com': [0.0, 0.0, 0.02], 'object_mass': 3.0, 'max_age': 0.0}}})
    out = AnalysisEngine(config, StaticPoses(np.array([p + [0.0, 0.0, 0.0, 1.0] for p in positions])))
    if health:
        out.health = HealthMonitor.for_config(config, 'rest')
    return out


def readings(n: int, k: int, seed: int = 0, drift: float = 0.0) -> tuple:
    """Return the stamps (k,) and the sensors' values (k, n, 6) of the object held at rest.

    The noise is 0.05 N and 0.005 N m. The contact wrenches are the engine's own distribution
    of the object's weight (a benchmark needs a consistent set, not an independent reference);
    ``drift`` (N per sample) is added to the first sensor's fx, which makes the set
    inconsistent (isolation runs every block).
    """
    eng = engine(n, False)
    eng.check_static(np.array(LAYOUTS[n]), np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)))
    gravity = np.asarray(eng.gravity_model.gravity)
    weight = np.concatenate([-eng.config.object_model.mass * gravity, np.zeros(3)])
    contact = eng.cache.distributor.synthesize_batch(weight[None]).wrench_contact[0]
    held = np.stack([s.reading(h, gravity) for s, h in zip(eng.config.sensors, contact)])
    rng = np.random.default_rng(seed)
    stamps = 10 ** 18 + PERIOD_NS * np.arange(k, dtype=np.int64)
    values = held + rng.normal(size=(k, n, 6)) * np.r_[[0.05] * 3, [0.005] * 3]
    values[:, 0, 0] += drift * np.arange(k)
    return stamps, values


def live_us(n: int, health: bool, stamps: np.ndarray, values: np.ndarray) -> float:
    """Microseconds per sample through :meth:`AnalysisEngine.offer` (a warm-up of 600 samples first)."""
    eng = engine(n, health)
    warm = 600
    for j in range(warm):
        for i in range(n):
            eng.offer(i, int(stamps[j]), values[j, i], int(stamps[j]) + 1000)
    start = time.perf_counter()
    for j in range(warm, len(stamps)):
        stamp = int(stamps[j])
        for i in range(n):
            eng.offer(i, stamp, values[j, i], stamp + 1000)
    return (time.perf_counter() - start) / (len(stamps) - warm) * 1e6


def chunk_us(n: int, health: bool, stamps: np.ndarray, values: np.ndarray) -> float:
    """Microseconds per sample through one :meth:`AnalysisEngine.push_chunk`."""
    eng = engine(n, health)
    stream = np.tile(np.arange(n), len(stamps))
    stamp = np.repeat(stamps, n)
    start = time.perf_counter()
    eng.push_chunk(stream, stamp + 1000, stamp, values.reshape(-1, 6))
    return (time.perf_counter() - start) / len(stamps) * 1e6


def monitor_us(n: int, stamps: np.ndarray, values: np.ndarray, chunked: bool) -> float:
    """Microseconds per sample of ``HealthMonitor.observe`` alone (contact wrenches given)."""
    eng = engine(n, True)
    monitor = eng.health
    eng.health = None
    eng.push_chunk(np.tile(np.arange(n), 2), np.repeat(stamps[:2], n), np.repeat(stamps[:2], n),
                   values[:2].reshape(-1, 6))  # builds the solver (the pose, the sensors' maps)
    pose = np.array([p + [0.0, 0.0, 0.0, 1.0] for p in LAYOUTS[n]])
    contact = eng.sensing.contact_wrenches(values, pose, None, None, stamps)
    gravity = np.asarray(eng.gravity_model.gravity)
    if chunked:
        start = time.perf_counter()
        monitor.observe(stamps, values, contact, pose, None, gravity)
        return (time.perf_counter() - start) / len(stamps) * 1e6
    for j in range(600):
        monitor.observe(stamps[j:j + 1], values[j:j + 1], contact[j:j + 1], pose, None, gravity)
    start = time.perf_counter()
    for j in range(600, len(stamps)):
        monitor.observe(stamps[j:j + 1], values[j:j + 1], contact[j:j + 1], pose, None, gravity)
    return (time.perf_counter() - start) / (len(stamps) - 600) * 1e6


def measure(n: int, samples: int, chunk: int, rounds: int) -> dict:
    """Medians over alternating rounds of every figure for ``n`` sensors."""
    live_stamps, live_values = readings(n, samples)
    chunk_stamps, chunk_values = readings(n, chunk, seed=1)
    _, drifting = readings(n, chunk, seed=2, drift=1e-4)
    figures: dict = {key: [] for key in ('live_off', 'live_on', 'chunk_off', 'chunk_on',
                                         'monitor_live', 'monitor_chunk', 'monitor_fault')}
    for _ in range(rounds):
        for health in (False, True):
            key = 'on' if health else 'off'
            figures[f'live_{key}'].append(live_us(n, health, live_stamps, live_values))
            figures[f'chunk_{key}'].append(chunk_us(n, health, chunk_stamps, chunk_values))
        figures['monitor_live'].append(monitor_us(n, live_stamps, live_values, False))
        figures['monitor_chunk'].append(monitor_us(n, chunk_stamps, chunk_values, True))
        figures['monitor_fault'].append(monitor_us(n, chunk_stamps, drifting, True))
    return {key: statistics.median(values) for key, values in figures.items()}


def main() -> None:
    """Measure 2 and 4 sensors and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--samples', type=int, default=2000, help='samples per live round')
    parser.add_argument('--chunk', type=int, default=100_000, help='samples of the chunk rounds')
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--sensors', type=int, nargs='+', default=[2, 4], choices=sorted(LAYOUTS))
    args = parser.parse_args()
    print(f'load average before: {os.getloadavg()}')
    print('| sensors | path | engine us/sample | engine + health us/sample | ratio | '
          'monitor alone us/sample | monitor alone, set inconsistent us/sample |')
    print('|---|---|---|---|---|---|---|')
    for n in args.sensors:
        f = measure(n, args.samples, args.chunk, args.rounds)
        for path in ('live', 'chunk'):
            off, on = f[f'{path}_off'], f[f'{path}_on']
            fault = f"{f['monitor_fault']:.2f}" if path == 'chunk' else '-'
            print(f'| {n} | {path} | {off:.1f} | {on:.1f} | {on / off:.2f}x | '
                  f"{f[f'monitor_{path}']:.2f} | {fault} |")
    print(f'load average after: {os.getloadavg()}')


if __name__ == '__main__':
    main()
