#!/usr/bin/env python3
"""Benchmark of the pure core against the baselines (brief section 6, "Core").

Run from the repository root::

    .venv/bin/python benchmarks/bench_core.py            # full run (a few minutes)
    .venv/bin/python benchmarks/bench_core.py --quick    # smoke run (seconds)

Per contact count n (2 ... 64) and contact type (rigid, point) it measures, per sample:

(a) cached synthesis, geometry built once: ``LoadDistributor.wrench_commands`` (the
    control-loop path the distributor node uses) and ``LoadDistributor.synthesize`` (the full
    result record);
(b) uncached: build ``LoadDistributor`` and ``wrench_commands``, every sample;
(b') per tick: new poses (every contact moved by about 1 mm and 0.1 deg) and a new weight (contact
    0 ramping from 1 to 0.01) every sample, through the per-tick update
    ``WeightedDistributor.moved(ContactLayout.arrays(...), weights)``, then ``wrench_commands``
    (a walking trunk's feet or a hand's fingers at 1 kHz); not for fewer than 4 point contacts,
    whose subsets without contact 0 cannot produce the resultants;
(c) ``numpy.linalg.pinv(G) @ h_o`` every sample (Kumar and Waldron, eq. 3), and, as a floor,
    the same with ``pinv(G)`` cached (one matrix-vector product);
(d) a Donner-style decomposition QP (``baselines.donner_qp_decomposition``, clarabel) per sample;
(e) batch throughput of ``synthesize_batch`` and ``analyze_batch`` in samples/s.

Every figure is the median over repetitions of (loop time / samples), measured with
``time.perf_counter`` after a warm-up; the per-sample methods (a)-(d) are measured interleaved
(one loop of each in turn, repeated) so that their ratios survive changes of machine load.
Ratios and the growth exponent of time versus n (least squares on log-log between n = 4 and
64) are printed after the table. Figures depend on the machine; compare ratios measured in
one run, not absolute times across machines.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
import platform
import statistics
import sys
import time
from typing import Callable, Dict, List, Sequence, Tuple

_THREAD_VARS = ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS')


def _configure_blas_threads(argv: Sequence[str]) -> str:
    """Apply ``--blas-threads N`` (default 1) before numpy is imported.

    Small-matrix LAPACK calls (batched ``eigh``/``svd``) can be an order of magnitude slower
    with a multi-threaded BLAS on a busy 2-core machine, and a control loop runs one sample at
    a time, so the default pins BLAS to one thread. Variables already set in the environment
    win; ``--blas-threads 0`` leaves the library default.

    :param argv: command line.
    :return: description for the report header.
    """
    value = '1'
    for i, arg in enumerate(argv):
        if arg == '--blas-threads' and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith('--blas-threads='):
            value = arg.split('=', 1)[1]
    if value != '0':
        for var in _THREAD_VARS:
            os.environ.setdefault(var, value)
    preset = [f'{v}={os.environ[v]}' for v in _THREAD_VARS if v in os.environ]
    return ', '.join(preset) if preset else 'BLAS threads: library default'


if __name__ == '__main__':
    _THREADS = _configure_blas_threads(sys.argv[1:])
else:  # imported (e.g. by a test): leave the environment alone
    _THREADS = 'BLAS threads: as configured by the importer'

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wrench_distribution.core import baselines  # noqa: E402
from wrench_distribution.core import (  # noqa: E402
    Contact,
    DistributionOptions,
    LoadDistributor,
    ObjectModel,
)
from wrench_distribution.core.contacts import ContactLayout  # noqa: E402
from wrench_distribution.core.transitions import WeightedDistributor  # noqa: E402

SIZES = (2, 3, 4, 6, 8, 16, 32, 64)
TYPES = ('rigid', 'point')
COM = (0.01, -0.02, 0.015)  # inside the hull for n >= 4; off the line/plane for n = 2, 3


# ------------------------------------------------------------------------------ environment


def blas_summary() -> str:
    """One line describing the BLAS numpy uses (threadpoolctl if present, else show_config).

    :return: human-readable summary.
    """
    try:
        from threadpoolctl import threadpool_info  # type: ignore

        infos = [i for i in threadpool_info() if i.get('user_api') == 'blas']
        if infos:
            return '; '.join(
                f"{i.get('internal_api')} {i.get('version')} threads={i.get('num_threads')} "
                f"arch={i.get('architecture')}" for i in infos)
    except ImportError:
        pass
    try:
        config = np.show_config(mode='dicts')  # numpy >= 1.26
        blas = config.get('Build Dependencies', {}).get('blas', {})
        simd = config.get('SIMD Extensions', {})
        found = ', '.join(simd.get('found', [])[:6])
        return (f"{blas.get('name')} {blas.get('version')} (numpy.show_config; threadpoolctl not "
                f'installed), SIMD: {found}')
    except (TypeError, AttributeError):
        return 'unknown (numpy.show_config(mode="dicts") unavailable)'


def environment_lines() -> List[str]:
    """Lines describing the machine and library versions."""
    import scipy

    try:
        import clarabel

        clarabel_version = clarabel.__version__
    except ImportError:  # pragma: no cover
        clarabel_version = 'not installed'
    lines = [
        f'python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, '
        f'{platform.platform()}',
        f'numpy {np.__version__}, scipy {scipy.__version__}, clarabel {clarabel_version}',
        f'BLAS: {blas_summary()}',
    ]
    coretype = os.environ.get('OPENBLAS_CORETYPE')
    lines.append(f'OPENBLAS_CORETYPE={coretype}' if coretype else 'OPENBLAS_CORETYPE not set')
    lines.append(_THREADS)
    try:
        lines.append(f'load average at start: {os.getloadavg()[0]:.2f} (1 min)')
    except OSError:  # pragma: no cover
        pass
    return lines


# ------------------------------------------------------------------------------ problem set-up


def sphere_points(n: int, radius: float = 0.3) -> np.ndarray:
    """Deterministic, well spread contact positions (Fibonacci sphere; n = 2, 3 special).

    :param n: number of contacts.
    :param radius: sphere radius in metres.
    :return: positions (n, 3) in the object frame.
    """
    if n == 2:
        return radius * np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    if n == 3:
        ang = 2 * np.pi * np.arange(3) / 3
        return radius * np.stack([np.cos(ang), np.sin(ang), np.zeros(3)], axis=1)
    k = np.arange(n) + 0.5
    z = 1.0 - 2.0 * k / n
    phi = np.pi * (1.0 + 5.0 ** 0.5) * k
    rho = np.sqrt(1.0 - z * z)
    return radius * np.stack([rho * np.cos(phi), rho * np.sin(phi), z], axis=1)


def make_contacts(positions: np.ndarray, kind: str) -> List[Contact]:
    """Contacts with identity orientation (contact frame axes = object axes)."""
    return [Contact(name=f'c{i}', type=kind, position=tuple(p)) for i, p in enumerate(positions)]


def realisable_wrenches(grasp: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Resultants in the range of ``G`` (always realisable), as ``G h`` for random ``h``.

    :return: (count, 6).
    """
    return rng.normal(size=(count, grasp.shape[1])) @ grasp.T


def measured_wrenches(n: int, kind: str, count: int, rng: np.random.Generator) -> np.ndarray:
    """Random applied wrenches (count, n, 6); zero torques for point contacts."""
    h = rng.normal(size=(count, n, 6))
    if kind == 'point':
        h[..., 3:] = 0.0
    return h


def per_tick_update(contacts: List[Contact], model: ObjectModel, options: DistributionOptions,
                    wrenches: np.ndarray, rng: np.random.Generator) -> Callable[[int], object]:
    """``tick(i)``: the per-tick update to new poses and weights, then the commands (column (b')).

    :return: the callable; each call moves on from the distribution of the call before.
    """
    count, n = len(wrenches), len(contacts)
    layout = ContactLayout(contacts)
    positions = np.array([c.position for c in contacts]) + 1e-3 * rng.normal(size=(count, n, 3))
    quaternions = np.array([0.0, 0.0, 0.0, 1.0]) + 1e-3 * rng.normal(size=(count, n, 4))
    weights = np.ones((count, n))
    weights[:, 0] = np.linspace(1.0, 0.01, count)
    state = [WeightedDistributor(layout.arrays(positions[0], quaternions[0]), model, options, weights[0])]

    def tick(i: int) -> object:
        state[0] = state[0].moved(layout.arrays(positions[i], quaternions[i]), weights[i])
        return state[0].wrench_commands(wrenches[i])
    return tick


# ------------------------------------------------------------------------------ timing


def per_sample(fns: Dict[str, Tuple[Callable[[int], object], int, float]], reps: int,
               warmup: int = 3) -> Dict[str, float]:
    """Median per-call time of several callables, measured interleaved.

    Each entry is ``name: (fn, samples, budget)``; ``fn(i)`` is called with sample indices
    ``0 .. samples-1``. The first call of each callable is timed to choose its loop length (about
    ``budget`` seconds per loop, at least 1 call). Then, ``reps`` times, one loop of every
    callable runs in turn, so that a change of machine load affects all of them alike and the
    ratios stay meaningful. Slow callables (one call longer than their budget) get at most 3
    loops and no extra warm-up.

    :param fns: callables with their sample count and per-loop budget (s).
    :param reps: loops per callable (median taken).
    :param warmup: untimed calls before timing.
    :return: seconds per call, by name.
    """
    plan = {}
    for name, (fn, samples, budget) in fns.items():
        t0 = time.perf_counter()
        fn(0)
        estimate = max(time.perf_counter() - t0, 1e-7)
        own_reps = reps
        if estimate < budget:
            for i in range(1, min(warmup, samples)):
                fn(i)
            t0 = time.perf_counter()
            fn(0)
            estimate = max(time.perf_counter() - t0, 1e-7)
        else:
            own_reps = min(reps, 3)
        plan[name] = (fn, int(min(samples, max(1, budget / estimate))), own_reps)
    times: Dict[str, List[float]] = {name: [] for name in fns}
    for rep in range(reps):
        for name, (fn, count, own_reps) in plan.items():
            if rep >= own_reps:
                continue
            t0 = time.perf_counter()
            for i in range(count):
                fn(i)
            times[name].append((time.perf_counter() - t0) / count)
    return {name: statistics.median(values) for name, values in times.items()}


def batch_rate(fn: Callable[[np.ndarray], object], data: np.ndarray, reps: int,
               budget: float) -> Tuple[float, int]:
    """Measure the samples per second of a batch call (median over repetitions, after a warm-up).

    The batch size is ``len(data)`` unless one call would take longer than ``budget``
    seconds, judged from a 256-sample warm-up; then it is reduced (at least 256).

    :param fn: batch function taking an array of samples.
    :param data: samples along axis 0.
    :param reps: repetitions.
    :param budget: target seconds per call.
    :return: (samples per second, batch size used).
    """
    k0 = min(len(data), 256)
    fn(data[:k0])
    t0 = time.perf_counter()
    fn(data[:k0])
    per = max((time.perf_counter() - t0) / k0, 1e-9)
    k = int(min(len(data), max(k0, budget / per)))
    if per * k > budget:
        reps = min(reps, 3)
    chunk = data[:k]
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(chunk)
        times.append(time.perf_counter() - t0)
    return k / statistics.median(times), k


def growth_exponent(sizes: Sequence[int], times: Sequence[float]) -> float:
    """Slope of log(time) against log(n) (least squares)."""
    return float(np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(times)), 1)[0])


# ------------------------------------------------------------------------------ main


def measure(kind: str, n: int, batch: int, reps: int, budgets: Tuple[float, float, float],
            rng: np.random.Generator) -> Tuple[Dict[str, float], str, str]:
    """Measure one contact type and count.

    :param budgets: ``(budget, qp_budget, batch_budget)`` in seconds.
    :return: ``(row of figures, regime name, QP statuses seen)``.
    """
    budget, qp_budget, batch_budget = budgets
    pos = sphere_points(n)
    contacts = make_contacts(pos, kind)
    model = ObjectModel(com=COM)
    options = DistributionOptions()
    dist = LoadDistributor(contacts, model, options)
    r = pos - np.array(COM)
    types = [kind] * n
    grasp = baselines.grasp_matrix(r, types)
    nsamp = 4096
    wrenches = realisable_wrenches(grasp, nsamp, rng)
    measured = measured_wrenches(n, kind, 256, rng)

    gp = np.linalg.pinv(grasp)
    statuses: Dict[str, int] = {}

    def qp(i: int) -> None:
        dec = baselines.donner_qp_decomposition(r, types, measured[i])
        statuses[dec.status] = statuses.get(dec.status, 0) + 1

    row: Dict[str, float] = dict(per_sample({
        'cached': (lambda i: dist.wrench_commands(wrenches[i]), nsamp, budget),
        'record': (lambda i: dist.synthesize(wrenches[i]), nsamp, budget),
        'uncached': (lambda i: LoadDistributor(contacts, model, options)
                     .wrench_commands(wrenches[i]), nsamp, budget),
        'pinv': (lambda i: np.linalg.pinv(grasp) @ wrenches[i], nsamp, budget),
        'pinv_cached': (lambda i: gp @ wrenches[i], nsamp, budget),
        'pinv_dot': (lambda i: gp.dot(wrenches[i]), nsamp, budget),
        'qp': (qp, measured.shape[0], qp_budget),
        **({'tick': (per_tick_update(contacts, model, options, wrenches, rng), nsamp, budget)}
           if kind == 'rigid' or n >= 4 else {}),
    }, reps))
    row.setdefault('tick', math.nan)

    # bound memory: an analysis may hold (k, 6n, ~2n) arrays; about 400 MB each at most
    kmax = int(min(batch, max(256, 400e6 / (8 * 6 * n * (2 * n + 6)))))
    wb = realisable_wrenches(grasp, kmax, rng)
    mb = measured_wrenches(n, kind, kmax, rng)
    row['synth_rate'], row['synth_k'] = batch_rate(dist.synthesize_batch, wb, reps,
                                                   batch_budget)
    row['analyze_rate'], row['analyze_k'] = batch_rate(dist.analyze_batch, mb, reps,
                                                       batch_budget)
    del wb, mb
    return row, dist.regime.name, ','.join(sorted(statuses))


def run(sizes: Sequence[int], batch: int, reps: int, budget: float, qp_budget: float,
        batch_budget: float, seed: int = 1) -> Dict[Tuple[str, int], Dict[str, float]]:
    """Measure everything; print rows as they complete.

    :return: results keyed by (type, n).
    """
    rng = np.random.default_rng(seed)
    results: Dict[Tuple[str, int], Dict[str, float]] = {}
    header = ('| type | n | regime | (a) cached wrench_commands us | (a) cached synthesize us '
              "| (b) uncached us | (b') per tick, new poses and weight us | (c) pinv(G)@h us "
              '| pinv cached us | pinv cached .dot us | (d) QP us [status] | (e) synth_batch /s '
              '| (e) analyze_batch /s |')
    print(header)
    print('|' + '|'.join(['---'] * 13) + '|')
    for kind in TYPES:
        for n in sizes:
            row, regime, status = measure(kind, n, batch, reps, (budget, qp_budget, batch_budget),
                                          rng)
            results[(kind, n)] = row
            print(f"| {kind} | {n} | {regime} | {row['cached'] * 1e6:.1f} | "
                  f"{row['record'] * 1e6:.1f} | {row['uncached'] * 1e6:.0f} | {_us(row['tick'])} | "
                  f"{row['pinv'] * 1e6:.1f} | "
                  f"{row['pinv_cached'] * 1e6:.2f} | {row['pinv_dot'] * 1e6:.2f} | {row['qp'] * 1e6:.0f} [{status}] | "
                  f"{row['synth_rate']:,.0f} (k={row['synth_k']}) | "
                  f"{row['analyze_rate']:,.0f} (k={row['analyze_k']}) |",
                  flush=True)
    return results


def _us(seconds: float) -> str:
    """Microseconds, or ``-`` for a figure not measured."""
    return '-' if math.isnan(seconds) else f'{seconds * 1e6:.0f}'


def summary(results: Dict[Tuple[str, int], Dict[str, float]], sizes: Sequence[int]) -> None:
    """Print ratios, targets and growth exponents."""
    print()
    print('Ratios and targets')
    for kind in TYPES:
        if (kind, 4) in results:
            row = results[(kind, 4)]
            speedup = row['pinv'] / row['cached']
            floor = row['cached'] / row['pinv_cached']
            print(f'- {kind}, n=4: speed-up of cached synthesis (wrench_commands) over pinv(G)@h_o per sample = '
                  f"{speedup:.2f}x (target >= 24x: {'met' if speedup >= 24 else 'NOT met'}); "
                  f"over the QP {row['qp'] / row['cached']:.0f}x; "
                  f"uncached/cached = {row['uncached'] / row['cached']:.0f}x; "
                  f'cached synthesis / cached pinv matvec `gp @ h` = {floor:.2f} (target <= 1.5: '
                  f"{'met' if floor <= 1.5 else 'NOT met'}), / `gp.dot(h)` = "
                  f"{row['cached'] / row['pinv_dot']:.2f}")
            rate = row['analyze_rate']
            for n, target in ((4, 100e-6), (8, 250e-6)):
                tick = results.get((kind, n), {}).get('tick', math.nan)
                if not math.isnan(tick):
                    cached = results[(kind, n)]['cached']
                    uncached = results[(kind, n)]['uncached']
                    print(f"- {kind}, n={n}: per tick with new poses and weight (b') {tick * 1e6:.0f} us = "
                          f'{tick / cached:.0f}x the cached solve, {tick / uncached:.2f} of '
                          f'the uncached build (target <= {target * 1e6:.0f} us, issue 48: '
                          f"{'met' if tick <= target else 'NOT met'} in this run)")
            print(f'- {kind}, n=4: analyze_batch {rate:,.0f} samples/s (target >= 1,000,000/s: '
                  f"{'met' if rate >= 1_000_000 else 'NOT met'}); synthesize_batch "
                  f"{row['synth_rate']:,.0f} samples/s")
    grow = [n for n in sizes if 4 <= n <= 64]
    if len(grow) >= 2:
        print()
        print(f'Growth exponent p in time ~ n^p, least squares over n = {grow}')
        for kind in TYPES:
            if not all((kind, n) in results for n in grow):
                continue
            parts = []
            for key, label in (('cached', 'cached synth'), ('record', 'synthesize record'),
                               ('uncached', 'uncached'),
                               ('pinv', 'pinv'), ('qp', 'QP'),
                               ('synth_rate', 'synth_batch/sample'),
                               ('analyze_rate', 'analyze_batch/sample')):
                values = [results[(kind, n)][key] for n in grow]
                if key.endswith('_rate'):
                    values = [1.0 / v for v in values]  # seconds per sample
                parts.append(f'{label} {growth_exponent(grow, values):.2f}')
            print(f'- {kind}: ' + ', '.join(parts))


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='few sizes, short budgets (smoke run)')
    parser.add_argument('--batch', type=int, default=100_000,
                        help='samples per batch call (fewer for large n: memory and time bounds)')
    parser.add_argument('--reps', type=int, default=9, help='repetitions per figure (median)')
    parser.add_argument('--sizes', type=int, nargs='*', default=list(SIZES), help='contact counts')
    parser.add_argument('--blas-threads', type=int, default=1,
                        help='BLAS/OpenMP threads (set before numpy loads); 0 = library default')
    args = parser.parse_args(argv)
    sizes = args.sizes
    budget, qp_budget, batch_budget, batch, reps = 0.1, 0.2, 3.0, args.batch, args.reps
    if args.quick:
        sizes = [n for n in sizes if n in (2, 4, 8)] or sizes[:2]
        budget, qp_budget, batch_budget, batch, reps = 0.02, 0.05, 0.1, min(batch, 5000), 3
    print('# bench_core: ' + ' '.join([Path(sys.executable).name, *sys.argv]))
    for line in environment_lines():
        print('# ' + line)
    print('# times are per sample (median of repetitions); us = microseconds')
    print()
    results = run(sizes, batch, reps, budget, qp_budget, batch_budget)
    summary(results, sizes)
    try:
        print(f'# load average at end: {os.getloadavg()[0]:.2f} (1 min)')
    except OSError:  # pragma: no cover
        pass
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
