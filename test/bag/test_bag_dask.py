"""A directory of bags on a real local Dask cluster (two worker processes, loopback only).

The per-bag results must be those of the single-process path (``analyze_bag`` called
here), sample by sample; the index must have one complete row per bag, with figures
checked against the known recordings; a corrupt bag is reported, never stops the
others, and makes the exit status 2.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
import shutil
import subprocess
import sys

import distributed
import numpy as np
import pyarrow.parquet as pq
import pytest

import bag_fixtures as F
from ros_harness import REPO
from wrench_distribution.bag.parallel import analyze_directory
from wrench_distribution.bag.pipeline import analyze_bag, Options
from wrench_distribution.config import load_analyzer_config

ROOT = Path(REPO)
# one worker under pytest-xdist: the tests share the module's bags and two-worker cluster
pytestmark = pytest.mark.xdist_group('bag_dask')
#: relative bag path -> (storage, samples, dropped (sample, effector) messages, seed)
BAGS = {
    'day1/run_a': ('sqlite3', 120, (), 11),
    'day1/run_b': ('mcap', 90, ((10, 1), (40, 0)), 12),
    'day2/run_c': ('mcap', 60, (), 13),
    'day2/run_d': ('sqlite3', 75, ((5, 2),), 14),
}
CORRUPT = 'day2/broken'


@pytest.fixture(scope='module')
def bags(tmp_path_factory):
    """Return the bags, their scenarios and the parameter file."""
    root = tmp_path_factory.mktemp('fleet')
    scenarios = {}
    for rel, (storage, k, drop, seed) in BAGS.items():
        scenarios[rel] = F.make_scenario(k, seed=seed)
        F.write_scenario_bag(root / 'bags' / rel, scenarios[rel], storage, drop=list(drop))
    broken = F.write_scenario_bag(root / 'bags' / CORRUPT, F.make_scenario(20), 'mcap')
    data = next(broken.glob('*.mcap'))
    data.write_bytes(data.read_bytes()[:200])  # truncated mid-file
    cfg = F.write_params(root / 'params.yaml')
    return root, scenarios, cfg


@pytest.fixture(scope='module')
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host='127.0.0.1', dashboard_address=None) as c:
        yield c


@pytest.fixture(scope='module')
def cluster_run(bags, cluster, tmp_path_factory):
    """Return the directory analysed through a client of the two-worker cluster."""
    root, _, cfg = bags
    out = tmp_path_factory.mktemp('cluster_out')
    with distributed.Client(cluster) as client:
        assert len(client.scheduler_info()['workers']) == 2
        results = analyze_directory(root / 'bags', load_analyzer_config(cfg), out,
                                    Options(plots=False), client=client).results
    return out, results


def kept_rows(k: int, drop) -> np.ndarray:
    """Return the samples that survive the dropped messages (a sample needs every effector)."""
    keep = np.ones(k, bool)
    keep[[j for j, _ in drop]] = False
    return np.flatnonzero(keep)


def test_cluster_results_equal_the_single_process_path(bags, cluster_run, tmp_path):
    root, scenarios, cfg = bags
    out, results = cluster_run
    assert [r.bag for r in results] == [str(root / 'bags' / rel)
                                        for rel in sorted(list(BAGS) + [CORRUPT])]
    config = load_analyzer_config(cfg)
    for rel, (storage, k, drop, _) in BAGS.items():
        analyze_bag(root / 'bags' / rel, config, tmp_path / rel, Options(plots=False))
        local = pq.read_table(tmp_path / rel / 'samples.parquet')
        remote = pq.read_table(out / rel / 'samples.parquet')
        assert remote.schema.equals(local.schema, check_metadata=False)
        assert remote.column_names == local.column_names and remote.num_rows == local.num_rows
        for name in local.column_names:  # sample by sample, bit for bit
            np.testing.assert_array_equal(remote.column(name).to_numpy(),
                                          local.column(name).to_numpy(), err_msg=name)
        # and both are right: the recorded stamps and resultant come back
        sc = scenarios[rel]
        rows = kept_rows(k, drop)
        assert remote.column('stamp_ns').to_pylist() == sc.stamps_ns[rows].tolist()
        res = np.column_stack([remote.column(f'resultant.{c}').to_numpy()
                               for c in ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')])
        np.testing.assert_allclose(res, sc.resultant[rows], atol=1e-8)
        summary = json.loads((out / rel / 'summary.json').read_text())
        assert summary == json.loads((tmp_path / rel / 'summary.json').read_text())
        assert summary['storage'] == storage


def test_index_has_one_complete_row_per_bag(bags, cluster_run):
    root, scenarios, _ = bags
    out, results = cluster_run
    table = pq.read_table(out / 'index.parquet')
    rows = {Path(r['bag']).relative_to(root / 'bags').as_posix(): r for r in table.to_pylist()}
    assert sorted(rows) == sorted(list(BAGS) + [CORRUPT])
    basis = [c for c in table.column_names if c.startswith('internal_load_max_abs.')]
    assert len(basis) == 9 and f'internal_load_max_abs.{F.SQUEEZE}' in basis
    for rel, (storage, k, drop, _) in BAGS.items():
        row, sc = rows[rel], scenarios[rel]
        kept = kept_rows(k, drop)
        assert row['error'] is None and row['storage'] == storage
        assert row['out'] == str(out / rel)
        assert row['samples'] == len(kept)
        assert row['duration'] == pytest.approx(
            (sc.stamps_ns[kept[-1]] - sc.stamps_ns[kept[0]]) * 1e-9)
        # each dropped message leaves the other effectors' readings unpaired
        assert row['dropped.unsynchronised'] == 2 * len(drop)
        assert row['dropped.stale'] == 0 and row['dropped.rejected_nan'] == 0
        assert row['dropped.no_contact_pose'] == 0
        assert row['dropped.future'] == row['dropped.wrong_frame'] == row['dropped.out_of_order'] == 0
        # the squeeze was prescribed by hand: its largest value comes back, the rest is 0
        assert row[f'internal_load_max_abs.{F.SQUEEZE}'] == pytest.approx(
            sc.squeeze[kept].max(), rel=1e-9)
        assert all(row[c] < 1e-6 for c in basis if c != f'internal_load_max_abs.{F.SQUEEZE}')
        assert row['internal_load_norm_max'] > 0 and row['max_resultant_residual'] < 1e-9
        assert row['regimes'] and all(isinstance(g, str) for g in row['regimes'])
    broken = rows[CORRUPT]
    assert 'corrupt' in broken['error'] and CORRUPT in broken['error']
    assert broken['samples'] is None and broken['regimes'] is None
    assert not (out / CORRUPT / 'samples.parquet').exists() or broken['error']


def _cli(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND='Agg')
    return subprocess.run([sys.executable, '-m', 'wrench_distribution.bag.command', *argv],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def test_cli_on_an_existing_scheduler_reports_the_corrupt_bag(bags, cluster, tmp_path):
    root, _, cfg = bags
    proc = _cli(str(root / 'bags'), '--config', str(cfg), '--out', str(tmp_path / 'o'),
                '--no-plots', '--no-progress', '--scheduler', cluster.scheduler_address)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: 1 of 5 bags failed'), proc.stderr
    assert CORRUPT in lines[0] and 'Traceback' not in proc.stderr
    # every other bag was analysed, and the printed table names them all
    for rel in BAGS:
        assert (tmp_path / 'o' / rel / 'samples.parquet').exists()
        assert str(root / 'bags' / rel) in proc.stdout
    assert pq.read_table(tmp_path / 'o' / 'index.parquet').num_rows == 5


@pytest.mark.timing  # the local cluster's workers must stop within distributed's 4 s grace, or it logs a traceback
def test_cli_local_cluster_with_progress(bags, tmp_path):
    root, _, cfg = bags
    good = tmp_path / 'good'
    for rel in ('day1/run_a', 'day2/run_c'):
        shutil.copytree(root / 'bags' / rel, good / rel)
    proc = _cli(str(good), '--config', str(cfg), '--out', str(tmp_path / 'o'), '--no-plots',
                '--progress', '--scheduler', 'local', '--jobs', '2')
    assert proc.returncode == 0, proc.stderr
    assert '2/2 bags' in proc.stderr and 'Traceback' not in proc.stderr
    assert 'error' not in proc.stderr
    index = pq.read_table(tmp_path / 'o' / 'index.parquet').to_pylist()
    assert [r['samples'] for r in index] == [120, 60] and all(r['error'] is None for r in index)


def test_jobs_only_for_a_local_cluster(bags, tmp_path):
    root, _, cfg = bags
    proc = _cli(str(root / 'bags'), '--config', str(cfg), '--out', str(tmp_path / 'o'),
                '--scheduler', 'tcp://127.0.0.1:8786', '--jobs', '2')
    assert proc.returncode == 2 and proc.stderr.startswith('error: --jobs')


def test_unreachable_scheduler_is_one_error_line(bags, tmp_path):
    root, _, cfg = bags
    env = dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT='2s')
    proc = subprocess.run(
        [sys.executable, '-m', 'wrench_distribution.bag.command', str(root / 'bags'),
         '--config', str(cfg), '--out', str(tmp_path / 'o'), '--scheduler',
         'tcp://127.0.0.1:9'], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: cannot reach the Dask scheduler '
                                                   'tcp://127.0.0.1:9'), proc.stderr
