"""Benchmark: cost of the named internal-load basis and of the analysis maps, by contact count.

Each size runs in a fresh process so that its peak memory (ru_maxrss) is its own::

    .venv/bin/python benchmarks/bench_basis.py --sizes 4 16 64 128 256

Prints, per size: construction (G_M+ only), the basis (first use, and the median of five
more builds in the same process), the read-out and ``N_m``
(:meth:`LoadDistributor.prepare`), the basis condition number and the peak RSS of the process.
Targets: n = 64 basis under 50 ms; n = 256 under 10 s with bounded memory.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import List, Optional, Sequence

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')


def measure(n: int, kind: str) -> dict:
    """Build a random grasp of ``n`` contacts and time each stage.

    :param n: number of contacts.
    :param kind: ``rigid``, ``point`` or ``mixed``.
    :return: figures in seconds and MiB.
    """
    import numpy as np

    from wrench_distribution.core import Contact, LoadDistributor, ObjectModel
    rng = np.random.default_rng(n)
    types = {'rigid': ['rigid'] * n, 'point': ['point'] * n,
             'mixed': ['rigid' if i % 2 else 'point' for i in range(n)]}[kind]
    contacts = [Contact(f'c{i}', t, rng.normal(size=3) * 0.3, rng.normal(size=4)) for i, t in enumerate(types)]
    start = time.perf_counter()
    grasp = LoadDistributor(contacts, ObjectModel(com=rng.normal(size=3) * 0.05))
    built = time.perf_counter()
    names = grasp.basis_names
    basis = time.perf_counter()
    grasp.prepare()
    prepared = time.perf_counter()
    warm = []
    for _ in range(5):  # the same build again in this process: no first-call costs
        again = LoadDistributor(contacts, grasp.object_model)
        tick = time.perf_counter()
        _ = again.basis_names
        warm.append(time.perf_counter() - tick)
    return {'n': n, 'kind': kind, 'construct_s': built - start, 'basis_s': basis - built,
            'basis_warm_s': sorted(warm)[2],
            'prepare_rest_s': prepared - basis, 'elements': len(names), 'condition': grasp.basis_condition,
            'peak_rss_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--sizes', type=int, nargs='*', default=[4, 16, 64, 128, 256])
    parser.add_argument('--kinds', nargs='*', default=['rigid', 'point'])
    parser.add_argument('--child', nargs=2, metavar=('N', 'KIND'), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(int(args.child[0]), args.child[1])))
        return 0
    print(f'# load average at start: {os.getloadavg()[0]:.2f}')
    print('| kind | n | elements | construct ms | basis ms (first) | basis ms (median of 5 more) '
          '| read-out + N_m ms | condition | peak RSS MiB |')
    print('|---|---|---|---|---|---|---|---|---|')
    rows: List[dict] = []
    for kind in args.kinds:
        for n in args.sizes:
            out = subprocess.run([sys.executable, __file__, '--child', str(n), kind], capture_output=True,
                                 text=True, check=True)
            row = json.loads(out.stdout)
            rows.append(row)
            print(f"| {kind} | {n} | {row['elements']} | {1e3 * row['construct_s']:.1f} | "
                  f"{1e3 * row['basis_s']:.1f} | {1e3 * row['basis_warm_s']:.1f} | "
                  f"{1e3 * row['prepare_rest_s']:.1f} | {row['condition']:.2f} | "
                  f"{row['peak_rss_mib']:.0f} |", flush=True)
    print(f'# load average at end: {os.getloadavg()[0]:.2f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
