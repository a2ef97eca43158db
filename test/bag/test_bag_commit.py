"""Outputs committed whole or not at all, and fleets that keep every error.

A reader of the documented format (docs/bags.md) takes an output directory as a result when
it exists and :func:`read_result` accepts its ``manifest.json``; a directory run's result is
its ``index.parquet``. Whatever stops a run (an error, a full disk, Ctrl-C, SIGKILL), no
output may look complete unless it is, and a run again must give the files of a run that was
never stopped, byte for byte.

The full disk is a small tmpfs mounted in a mount namespace of the command's own
(``unshare --user --map-root-user --mount``: no privilege needed where user namespaces are
allowed, and nothing outlives the command); where that is refused, the files are bounded in
size instead (``RLIMIT_FSIZE`` in the child: the writes fail with EFBIG, "File too large",
where a full disk gives ENOSPC).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time

import distributed
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_bag_offline import run_cli

import bag_fixtures as F
from wrench_distribution.bag.outputs import bag_identity, read_result
from wrench_distribution.bag.shell import EXIT_INTERRUPTED

#: the options of every run here: plots cost a second of matplotlib, and add nothing to commit
ARGS = ('--no-plots', '--no-progress', '--csv', '--chunk', '60')
TRIES = 20
FLEET = {'day1/a': ('sqlite3', 1), 'day1/b': ('mcap', 2), 'day2/c': ('sqlite3', 3)}


def write_fleet(root: Path, samples: int = 120) -> Path:
    for rel, (storage, seed) in FLEET.items():
        F.write_scenario_bag(root / rel, F.make_scenario(samples, seed=seed), storage)
    return root


@pytest.fixture(scope='module')
def material(tmp_path_factory):
    """Return a bag, another one, a fleet of three and the parameter file."""
    root = tmp_path_factory.mktemp('commit')
    bag = F.write_scenario_bag(root / 'bag', F.make_scenario(300, seed=4), 'sqlite3')
    other = F.write_scenario_bag(root / 'other', F.make_scenario(200, seed=8), 'mcap')
    return bag, other, write_fleet(root / 'fleet'), F.write_params(root / 'p.yaml')


def check_committed(out: Path) -> dict:
    """Check ``out`` is a whole result: its manifest lists exactly its files; return it."""
    manifest = read_result(out)
    assert sorted(manifest['files']) == sorted(p.name for p in out.iterdir()
                                               if p.name != 'manifest.json')
    return manifest


# -- what a run leaves -------------------------------------------------------------------------
def test_a_result_is_its_manifest_and_every_file_it_lists(material, tmp_path):
    bag, _, _, cfg = material
    out = tmp_path / 'out'
    assert run_cli(bag, '--config', cfg, '--out', out, *ARGS) == 0
    manifest = check_committed(out)
    assert manifest['bag_identity'] == bag_identity(bag) and manifest['complete'] is True
    assert manifest['files']['samples.parquet']['rows'] == 300
    assert len((out / 'samples.csv').read_text().splitlines()) == 301
    assert hidden_free(tmp_path)
    # a file cut, or the manifest missing: not a result
    data = (out / 'samples.parquet').read_bytes()
    (out / 'samples.parquet').write_bytes(data[:-10])
    with pytest.raises(Exception, match='samples.parquet has'):
        read_result(out)
    (out / 'manifest.json').unlink()
    with pytest.raises(Exception, match='not a committed'):
        read_result(out)


def hidden_free(directory: Path) -> bool:
    return F.hidden_leftovers(directory) == []


def test_existing_output_refused_then_replaced_whole(material, tmp_path, capsys):
    bag, other, _, cfg = material
    out = tmp_path / 'out'
    assert run_cli(other, '--config', cfg, '--out', out, '--csv') == 0  # plots and CSV
    before = F.output_files(out)
    assert run_cli(bag, '--config', cfg, '--out', out, '--no-plots') == 2
    err = capsys.readouterr().err
    assert 'already exists' in err and '--replace' in err and '--resume' in err
    assert F.output_files(out) == before
    assert run_cli(bag, '--config', cfg, '--out', out, '--no-plots', '--replace') == 0
    # every file of the old run is gone: its CSV and plots, which this run does not write
    assert sorted(F.output_files(out)) == ['friction.parquet', 'manifest.json',
                                           'plotjuggler_layout.xml', 'samples.parquet',
                                           'summary.json']
    assert check_committed(out)['bag_identity'] == bag_identity(bag)
    assert json.loads((out / 'summary.json').read_text())['samples'] == 300
    assert hidden_free(tmp_path)


def test_resume_keeps_a_matching_output_and_redoes_any_other(material, tmp_path):
    bag, other, _, cfg = material
    out = tmp_path / 'out'
    assert run_cli(bag, '--config', cfg, '--out', out, *ARGS) == 0
    kept = {p.name: p.stat().st_ino for p in out.iterdir()}
    assert run_cli(bag, '--config', cfg, '--out', out, *ARGS, '--resume') == 0
    assert {p.name: p.stat().st_ino for p in out.iterdir()} == kept  # untouched
    # other settings (no CSV), then another bag: analysed again, the old run replaced whole
    assert run_cli(bag, '--config', cfg, '--out', out, '--no-plots', '--resume') == 0
    assert not (out / 'samples.csv').exists()
    assert run_cli(other, '--config', cfg, '--out', out, '--no-plots', '--resume') == 0
    assert check_committed(out)['bag_identity'] == bag_identity(other)


def test_replace_never_removes_a_file_analyze_bag_did_not_write(material, tmp_path, capsys):
    bag, _, fleet, cfg = material
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'notes.txt').write_text('mine')
    for target in (bag, fleet):
        assert run_cli(target, '--config', cfg, '--out', out, '--no-plots', '--replace',
                       '--jobs', '1') == 2
        assert 'notes.txt' in capsys.readouterr().err
    assert F.output_files(out) == {'notes.txt': b'mine'}


def test_a_failed_run_leaves_nothing(material, tmp_path, capsys):
    bag, _, _, cfg = material
    out = tmp_path / 'out'
    late = F.write_params(tmp_path / 'late.yaml', sync_tolerance=1e-9,
                          ft_frames=['x', 'y', 'z'])  # no reading in its frame: no sample
    assert run_cli(bag, '--config', late, '--out', out, '--no-plots') == 2
    assert 'error' in capsys.readouterr().err
    assert not out.exists() and hidden_free(tmp_path)


def test_fleet_refused_resumed_and_replaced(material, tmp_path, capsys):
    _, _, fleet, cfg = material
    out = tmp_path / 'out'
    assert run_cli(fleet, '--config', cfg, '--out', out, *ARGS, '--jobs', '1') == 0
    first = F.output_files(out)
    rows = pq.read_table(out / 'index.parquet').to_pylist()
    assert [r['status'] for r in rows] == ['done'] * 3 and all(r['complete'] for r in rows)
    assert json.loads(pq.read_schema(out / 'index.parquet').metadata[b'wrench_distribution']) \
        == {'bags': 3, 'done': 3, 'failed': 0, 'not_done': 0}
    assert run_cli(fleet, '--config', cfg, '--out', out, *ARGS) == 2
    assert 'already exists' in capsys.readouterr().err
    # every bag kept: no cluster is even started, and the same files come out
    assert run_cli(fleet, '--config', cfg, '--out', out, *ARGS, '--resume') == 0
    assert F.output_files(out) == first
    (out / 'day1' / 'a' / 'manifest.json').unlink()  # that bag's output is no result now
    stray = out / 'day2' / 'old_bag' / 'summary.json'
    stray.parent.mkdir()
    stray.write_text('{}')
    assert run_cli(fleet, '--config', cfg, '--out', out, *ARGS, '--resume', '--jobs', '1') == 0
    assert F.output_files(out) == dict(first, **{'day2/old_bag/summary.json': b'{}'})
    assert run_cli(fleet, '--config', cfg, '--out', out, *ARGS, '--replace', '--jobs', '1') == 0
    assert F.output_files(out) == first  # the old run's files are gone, the stray one too
    assert hidden_free(out)


def test_what_killed_runs_left_is_swept_and_never_blocks_a_run(material, tmp_path):
    """Sweep what killed runs left (a hidden directory, an index's temporary file).

    The next run into the same place removes them (their process has ended), whether it
    replaces the output or resumes it.
    """
    _, _, fleet, cfg = material
    out = tmp_path / 'out'
    assert run_cli(fleet, '--config', cfg, '--out', out, *ARGS, '--jobs', '1') == 0
    first = F.output_files(out)
    gone = subprocess.Popen(['true'])  # its pid names a process that has ended
    gone.wait()
    tag = f'{socket.gethostname().replace("-", "_")}-{gone.pid}-0123abcd'
    (out / f'.index.parquet.partial-{tag}').write_bytes(b'PAR1 torn')
    (out / 'day1' / f'.a.partial-{tag}').mkdir()
    (out / 'day1' / f'.a.partial-{tag}' / 'samples.parquet').write_bytes(b'torn')
    assert run_cli(fleet, '--config', cfg, '--out', out, *ARGS, '--replace', '--jobs', '1') == 0
    assert F.output_files(out) == first and hidden_free(out)
    (out / f'.index.parquet.partial-{tag}').write_bytes(b'PAR1 torn')
    assert run_cli(fleet, '--config', cfg, '--out', out, *ARGS, '--resume') == 0
    assert F.output_files(out) == first and hidden_free(out)


# -- a full disk -------------------------------------------------------------------------------
def _namespace_tmpfs_works() -> bool:
    try:
        probe = subprocess.run(['unshare', '--user', '--map-root-user', '--mount', 'sh', '-c',
                                'd=$(mktemp -d) && mount -t tmpfs -o size=4k tmpfs "$d"'],
                               capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


TMPFS = _namespace_tmpfs_works()


def run_on_small_disk(tmp_path: Path, argv: list, size_kib: int) -> tuple:
    """Run ``wrench-distribution argv`` with ``--out`` on a disk of ``size_kib`` KiB.

    :return: ``(status, stdout, stderr, copy of the output directory, text of a full disk)``.
    """
    from ros_harness import REPO, script
    disk, copy = tmp_path / 'disk', tmp_path / 'copy'
    disk.mkdir()
    command = [script('wrench-distribution'), *map(str, argv), '--out', str(disk / 'out')]
    if TMPFS:
        shell = ('mount -t tmpfs -o size="$1"k tmpfs "$2" || exit 99; shift 3; status=0; '
                 '"$@" || status=$?; cp -r "$0/out" "$0/../copy" 2>/dev/null; exit $status')
        proc = subprocess.run(['unshare', '--user', '--map-root-user', '--mount', 'sh', '-c',
                               shell, str(disk), str(size_kib), str(disk), '--', *command],
                              capture_output=True, text=True, cwd=REPO, timeout=300)
        shutil.move(str(copy), str(tmp_path / 'kept')) if copy.exists() else None
        return proc.returncode, proc.stdout, proc.stderr, tmp_path / 'kept', 'No space left'

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size_kib * 1024, size_kib * 1024))
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300,
                          preexec_fn=bounded)
    return proc.returncode, proc.stdout, proc.stderr, disk / 'out', 'File too large'


def test_full_disk_single_run_says_so_and_leaves_nothing(material, tmp_path):
    bag, _, _, cfg = material
    status, _, err, kept, full = run_on_small_disk(
        tmp_path, ['analyze-bag', bag, '--config', cfg, *ARGS], 64)
    assert status == 2, err
    assert err.count('\n') == 1 and err.startswith('error: ') and full in err, err
    assert 'Traceback' not in err and not kept.exists()


@pytest.mark.parametrize('size_kib', [160, 4])
def test_full_disk_fleet_prints_and_indexes_every_bag_error(material, tmp_path, size_kib):
    """Room for the index (160 KiB) but for no bag's files; then not even for the index."""
    _, _, fleet, cfg = material
    status, out, err, kept, full = run_on_small_disk(
        tmp_path, ['analyze-bag', fleet, '--config', cfg, *ARGS, '--jobs', '1'], size_kib)
    assert status == 2, err
    assert err.count('\n') == 1 and '3 of 3 bags failed' in err and 'Traceback' not in err, err
    for rel in FLEET:  # each bag's error printed
        line = next(row for row in out.splitlines() if row.startswith(str(fleet / rel)))
        assert 'error:' in line and full in line, out
    if size_kib == 4:
        assert 'index.parquet' in err and full in err
        return
    rows = pq.read_table(kept / 'index.parquet').to_pylist()
    assert len(rows) == 3
    for row in rows:
        assert row['status'] == 'failed' and full in row['error'], row
    assert [p.name for p in kept.rglob('*') if p.is_file()] == ['index.parquet']


# -- SIGINT and SIGKILL at random points --------------------------------------------------------
def reference_run(where: Path, argv: list, out: Path) -> tuple[dict, float]:
    """Run once into ``out``, uninterrupted; take its files away.

    :return: the files, and the seconds the package's code ran.
    """
    run = F.Command(argv + [out], where / 'log')
    started = run.running_package()
    status, _, err = run.finish()
    assert status == 0, err
    files = F.output_files(out)
    shutil.rmtree(out)
    return files, time.monotonic() - run.started_at - started


def check_after_stop(sig: int, status: int, err: str) -> None:
    """Check that a stopped run ended as the shell convention says: one line for Ctrl-C."""
    if sig == signal.SIGKILL:
        assert status in (0, -signal.SIGKILL), err
    else:
        assert status in (0, EXIT_INTERRUPTED), err
        if status == EXIT_INTERRUPTED:
            assert err.count('\n') == 1 and err.startswith('error: interrupted'), err


def check_result_or_nothing(out: Path, reference: dict) -> None:
    """``out`` is absent, or a whole result equal to the uninterrupted run's, file for file."""
    if out.exists():
        check_committed(out)
        assert F.output_files(out) == reference


def stop_at_random_points(argv: list, tmp_path: Path, sig: int, check) -> None:
    """Run ``argv --out OUT`` :data:`TRIES` times, each stopped by ``sig`` at a random point.

    The runs alternate ``--replace`` and ``--resume``; after each, ``check(out, reference,
    status, stderr)`` judges what it left; at the end an uninterrupted ``--resume`` must give the
    files of the uninterrupted reference run, byte for byte, and leave no hidden directory.
    """
    out = tmp_path / 'out'
    reference, span = reference_run(tmp_path / 'ref', argv, out)
    chance = random.Random(sig)
    for attempt in range(TRIES):
        run = F.Command(argv + [out, ('--replace', '--resume')[attempt % 2]],
                        tmp_path / f'log{attempt}')
        run.running_package()
        time.sleep(chance.uniform(0.0, span))
        run.signal(sig)
        status, _, err = run.finish(timeout=60)
        check_after_stop(sig, status, err)
        assert run.left_behind == []
        check(out, reference, status, err)
    run = F.Command(argv + [out, '--resume'], tmp_path / 'last')
    assert run.finish()[0] == 0
    assert F.output_files(out) == reference and hidden_free(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGKILL], ids=['SIGINT', 'SIGKILL'])
def test_single_run_stopped_at_random_points(material, tmp_path, sig):
    bag, _, _, cfg = material

    def check(out: Path, reference: dict, status: int, err: str) -> None:
        check_result_or_nothing(out, reference)
        if sig == signal.SIGINT:
            assert hidden_free(tmp_path), 'an interrupted run removes its hidden directory'
    stop_at_random_points(['analyze-bag', bag, '--config', cfg, *ARGS, '--out'], tmp_path, sig,
                          check)


#: what a bag command's process (and a local cluster's worker) gives Arrow to allocate with
POOL_PROBE = """
import sys
import {entry}
import distributed, pyarrow
print(pyarrow.default_memory_pool().backend_name)
if sys.argv[1] == 'cluster':
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host='127.0.0.1',
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        for name in client.run(lambda: __import__('pyarrow').default_memory_pool().backend_name).values():
            print(name)
"""


@pytest.mark.parametrize('entry', ['wrench_distribution.cli', 'wrench_distribution.bag.command'])
@pytest.mark.parametrize('chosen', [None] + [name for name in pa.supported_memory_backends() if name != 'system'])
def test_bag_commands_give_arrow_the_system_allocator_unless_the_user_chose_one(entry, chosen):
    """The entry points of ``analyze-bag`` set Arrow's allocator before pyarrow allocates."""
    from ros_harness import REPO
    env = {k: v for k, v in os.environ.items() if k != 'ARROW_DEFAULT_MEMORY_POOL'}
    if chosen is not None:
        env['ARROW_DEFAULT_MEMORY_POOL'] = chosen
    where = 'cluster' if chosen is None and entry.endswith('cli') else 'process'
    proc = subprocess.run([sys.executable, '-c', POOL_PROBE.format(entry=entry), where], env=env,
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    expected = [chosen or 'system'] * (2 if where == 'cluster' else 1)
    assert proc.stdout.split() == expected, proc.stdout


@pytest.fixture(scope='module')
def cluster():
    """Two worker processes on the loopback interface, for the fleet runs stopped at random.

    (One per pytest-xdist worker that runs a fleet test: the two fleet tests may run at once.)
    """
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host='127.0.0.1', dashboard_address='127.0.0.1:0',
                                  scheduler_kwargs={'dashboard': False}) as c, \
            distributed.Client(c) as client:
        yield c.scheduler_address, client


def wait_idle(client, timeout: float = 60.0) -> None:
    """Wait until no worker runs a task (a stopped client's tasks run on to their end)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = client.run(lambda dask_worker: len(dask_worker.active_threads))
        if not any(busy.values()):
            return
        time.sleep(0.1)
    raise AssertionError(f'workers still busy after {timeout} s: {busy}')


def check_fleet(out: Path, reference: dict, fleet: Path, interrupted: bool) -> None:
    """Each bag's output absent or whole; an index only when the run ended it, and true.

    :param interrupted: the run said how many bags were done: its index must be there.
    """
    for rel in FLEET:
        check_result_or_nothing(out / rel, {k.split('/', 2)[2]: v for k, v in reference.items()
                                            if k.startswith(rel + '/')})
    index = out / 'index.parquet'
    if index.exists():
        rows = pq.read_table(index).to_pylist()
        assert [r['bag'] for r in rows] == [str(fleet / rel) for rel in FLEET]
        for row in rows:
            assert row['status'] in ('done', 'not_done'), row
            if row['status'] == 'done':
                check_committed(Path(row['out']))
    else:
        assert not interrupted, 'Ctrl-C writes the index'


@pytest.mark.slow
@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGKILL], ids=['SIGINT', 'SIGKILL'])
def test_fleet_stopped_at_random_points(material, cluster, tmp_path, sig):
    _, _, fleet, cfg = material
    address, client = cluster

    def check(out: Path, reference: dict, status: int, err: str) -> None:
        # a Ctrl-C before the bags were looked at (start-up, emptying --out) has no index
        said = status == EXIT_INTERRUPTED and 'bags done' in err
        check_fleet(out, reference, fleet, said)
        wait_idle(client)  # tasks of a stopped client run on and commit: still nothing torn
        check_fleet(out, reference, fleet, said)
    stop_at_random_points(['analyze-bag', fleet, '--config', cfg, *ARGS, '--scheduler', address,
                           '--out'], tmp_path, sig, check)


@pytest.mark.slow
def test_ctrl_c_to_a_fleet_on_its_own_cluster(material, tmp_path):
    """Stop a fleet on a local cluster with a terminal's Ctrl-C (every process of the group).

    The local cluster's workers ignore it; the command stops them, marks what was done and
    prints one line.
    """
    _, _, fleet, cfg = material
    chance = random.Random(7)
    for attempt in range(3):
        out = tmp_path / f'out{attempt}'
        run = F.Command(['analyze-bag', fleet, '--config', cfg, *ARGS, '--jobs', '2',
                         '--out', out], tmp_path / f'log{attempt}')
        run.running_package()
        time.sleep(chance.uniform(0.5, 4.0))
        run.signal(signal.SIGINT, group=True)
        status, _, err = run.finish(timeout=60)
        check_after_stop(signal.SIGINT, status, err)
        assert run.left_behind == [] and 'Traceback' not in err
        if status == EXIT_INTERRUPTED and 'bags done' in err:
            rows = pq.read_table(out / 'index.parquet').to_pylist()
            done = [r for r in rows if r['status'] == 'done']
            assert f'{len(done)} of 3 bags done' in err
            for row in done:
                check_committed(Path(row['out']))
        assert hidden_free(out) if out.exists() else True
