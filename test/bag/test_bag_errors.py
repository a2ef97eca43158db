"""Corrupt, truncated and mismatched bags: one ``error:`` line, exit status 2, no traceback."""
from __future__ import annotations

import argparse
import os
from pathlib import Path
import subprocess
import sys
import warnings

import pytest

import bag_fixtures as F
from ros_harness import REPO
from wrench_distribution.bag import command

ROOT = Path(REPO)


def run_cli(capsys, *argv) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    code = command.run(parser.parse_args([str(a) for a in argv]))
    err = capsys.readouterr().err
    return code, err


def assert_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: '), err
    assert 'Traceback' not in err
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])


@pytest.fixture(scope='module')
def scenario():
    return F.make_scenario(30)


@pytest.fixture
def cfg(tmp_path):
    return F.write_params(tmp_path / 'params.yaml')


def _storage_file(bag: Path) -> Path:
    return next(p for p in bag.iterdir() if p.suffix in ('.db3', '.mcap'))


def test_missing_topic(tmp_path, capsys, scenario):
    bag = F.write_scenario_bag(tmp_path / 'bag', scenario, 'sqlite3')
    cfg = F.write_params(tmp_path / 'p.yaml', ft_topics=['/left/ft_sensor', '/right/ft',
                                                         '/palm/ft_sensor'])
    code, err = run_cli(capsys, bag, '--config', cfg, '--out', tmp_path / 'o')
    assert_error(code, err, '/right/ft', 'not in bag', '/right/ft_sensor')


def test_wrong_message_type(tmp_path, capsys, scenario):
    bw = F.BagWriter(tmp_path / 'bag', 'mcap')
    for j, ns in enumerate(scenario.stamps_ns[:5]):
        for e in ('left', 'palm'):
            bw.add(f'/{e}/ft_sensor', F.WS, int(ns), F.wrench_msg(int(ns), e, [0.0] * 6))
        bw.add('/right/ft_sensor', F.PA, int(ns), F.pose_array_msg(int(ns), 'object', []))
    bag = bw.close()
    code, err = run_cli(capsys, bag, '--config', F.write_params(tmp_path / 'p.yaml'),
                        '--out', tmp_path / 'o')
    assert_error(code, err, '/right/ft_sensor', 'geometry_msgs/msg/PoseArray',
                 'expected geometry_msgs/msg/WrenchStamped')


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_truncated_file(tmp_path, capsys, scenario, cfg, storage):
    bag = F.write_scenario_bag(tmp_path / 'bag', scenario, storage)
    data = _storage_file(bag)
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    code, err = run_cli(capsys, bag, '--config', cfg, '--out', tmp_path / 'o')
    assert_error(code, err, str(bag), 'corrupt or truncated')


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_garbage_file(tmp_path, capsys, scenario, cfg, storage):
    bag = F.write_scenario_bag(tmp_path / 'bag', scenario, storage)
    data = _storage_file(bag)
    data.write_bytes(os.urandom(data.stat().st_size))
    code, err = run_cli(capsys, bag, '--config', cfg, '--out', tmp_path / 'o')
    assert_error(code, err, 'corrupt or truncated')


def test_corrupt_payload(tmp_path, capsys, cfg):
    """A message whose CDR payload is cut short inside a well-formed bag."""
    from rosbags.rosbag2 import Writer

    sc = F.make_scenario(3)
    with Writer(tmp_path / 'bag', version=8) as w:
        conns = {e: w.add_connection(f'/{e}/ft_sensor', F.WS, typestore=F.TYPESTORE)
                 for e in F.EFFECTORS}
        for j, ns in enumerate(sc.stamps_ns):
            for i, e in enumerate(F.EFFECTORS):
                raw = F.TYPESTORE.serialize_cdr(F.wrench_msg(int(ns), e, sc.readings[j, i]), F.WS)
                w.write(conns[e], int(ns), raw[:30] if (j, i) == (1, 1) else raw)
    code, err = run_cli(capsys, tmp_path / 'bag', '--config', cfg, '--out', tmp_path / 'o')
    assert_error(code, err, '/right/ft_sensor', 'corrupt')


def test_missing_metadata(tmp_path, capsys, scenario, cfg):
    bag = F.write_scenario_bag(tmp_path / 'bag', scenario, 'sqlite3')
    (bag / 'metadata.yaml').unlink()
    code, err = run_cli(capsys, bag, '--config', cfg, '--out', tmp_path / 'o')
    assert_error(code, err, 'metadata.yaml', 'reindex')


def test_bag_not_found(tmp_path, capsys, cfg):
    code, err = run_cli(capsys, tmp_path / 'nope', '--config', cfg, '--out', tmp_path / 'o')
    assert_error(code, err, 'not found')


def test_pose_array_does_not_match_effectors(tmp_path, capsys, scenario):
    bw = F.BagWriter(tmp_path / 'bag', 'sqlite3')
    for j, ns in enumerate(scenario.stamps_ns):
        for i, e in enumerate(F.EFFECTORS):
            bw.add(f'/{e}/ft_sensor', F.WS, int(ns),
                   F.wrench_msg(int(ns), e, scenario.readings[j, i]))
    bw.add('/contact_poses', F.PA, int(scenario.stamps_ns[0]),
           F.pose_array_msg(int(scenario.stamps_ns[0]), 'object', scenario.poses[0, :2]))
    bag = bw.close()
    cfg = F.write_params(tmp_path / 'p.yaml', 'topic')
    code, err = run_cli(capsys, bag, '--config', cfg, '--out', tmp_path / 'o')
    assert_error(code, err, '/contact_poses', '2 poses', '3 effectors')


def test_tf_source_without_tf(tmp_path, capsys, scenario):
    bag = F.write_scenario_bag(tmp_path / 'bag', scenario, 'mcap')
    code, err = run_cli(capsys, bag, '--config', F.write_params(tmp_path / 'p.yaml', 'tf'),
                        '--out', tmp_path / 'o')
    assert_error(code, err, '/tf', '/tf_static')


def test_tf_frames_not_connected(tmp_path, capsys):
    sc = F.make_scenario(21, moving=True)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'mcap', poses='tf')
    cfg = F.write_params(tmp_path / 'p.yaml', 'tf',
                         contact_frames=['left_contact', 'right_tool', 'palm_contact'])
    code, err = run_cli(capsys, bag, '--config', cfg, '--out', tmp_path / 'o')
    assert_error(code, err, 'no tf path from object to right_tool')


def test_zero_quaternion_in_tf_is_one_error_line(tmp_path, capsys):
    import dataclasses
    sc = F.make_scenario(21, moving=True)
    poses = sc.poses.copy()
    poses[10, 1, 3:] = 0.0  # a broken transform in the recording
    bag = F.write_scenario_bag(tmp_path / 'bag', dataclasses.replace(sc, poses=poses), 'mcap', poses='tf')
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # the one line is the whole output: no RuntimeWarning before it
        code, err = run_cli(capsys, bag, '--config', F.write_params(tmp_path / 'p.yaml', 'tf'),
                            '--out', tmp_path / 'o')
    assert_error(code, err, 'refuses', 'quaternion')


def test_stamps_never_synchronise(tmp_path, capsys):
    sc = F.make_scenario(20)
    sc.stamps_ns = sc.stamps_ns.copy()
    bw = F.BagWriter(tmp_path / 'bag', 'sqlite3')
    for j, ns in enumerate(sc.stamps_ns):  # right is 0.1 s behind: never within 1 ms
        for i, e in enumerate(F.EFFECTORS):
            st = int(ns) - (100_000_000 if e == 'right' else 0)
            bw.add(f'/{e}/ft_sensor', F.WS, int(ns), F.wrench_msg(st, e, sc.readings[j, i]))
    bag = bw.close()
    code, err = run_cli(capsys, bag, '--config', F.write_params(tmp_path / 'p.yaml'),
                        '--out', tmp_path / 'o')
    assert_error(code, err, 'no synchronised sample', 'sync_tolerance')


def test_invalid_config(tmp_path, capsys, scenario):
    bag = F.write_scenario_bag(tmp_path / 'bag', scenario, 'sqlite3')
    bad = tmp_path / 'bad.yaml'
    bad.write_text('wrench_analyzer:\n  ros__parameters:\n    effectors: [a]\n    bogus: 1\n')
    code, err = run_cli(capsys, bag, '--config', bad, '--out', tmp_path / 'o')
    assert_error(code, err)
    broken = tmp_path / 'broken.yaml'
    broken.write_text('wrench_analyzer: [\n')
    code, err = run_cli(capsys, bag, '--config', broken, '--out', tmp_path / 'o')
    assert_error(code, err, 'YAML')
    code, err = run_cli(capsys, bag, '--config', tmp_path / 'none.yaml', '--out', tmp_path / 'o')
    assert_error(code, err, 'none.yaml')


def test_directory_with_a_bad_bag(tmp_path, capsys, scenario, cfg):
    F.write_scenario_bag(tmp_path / 'bags' / 'good', scenario, 'sqlite3')
    bad = F.write_scenario_bag(tmp_path / 'bags' / 'bad', scenario, 'mcap')
    _storage_file(bad).write_bytes(b'\0' * 100)
    code, err = run_cli(capsys, tmp_path / 'bags', '--config', cfg, '--out', tmp_path / 'o',
                        '--jobs', '1')
    assert_error(code, err, '1 of 2 bags failed', 'bad')
    assert (tmp_path / 'o' / 'good' / 'samples.parquet').exists()


def test_process_exit_status_and_no_traceback(tmp_path, scenario, cfg):
    bag = F.write_scenario_bag(tmp_path / 'bag', scenario, 'mcap')
    data = _storage_file(bag)
    data.write_bytes(data.read_bytes()[:data.stat().st_size * 3 // 5])  # cut in its messages
    proc = subprocess.run(
        [sys.executable, '-m', 'wrench_distribution.bag.command', str(bag), '--config', str(cfg),
         '--out', str(tmp_path / 'o')], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith('error: ') and 'Traceback' not in proc.stderr


def test_a_command_that_fails_at_once_lets_the_plot_import_finish_before_the_interpreter_ends():
    """The matplotlib preload is joined at exit: no thread of ours is inside C++ code at finalization."""
    script = ('import atexit, sys\n'
              'from wrench_distribution.bag import plots\n'
              'plots.preload()\n'  # the analysis starts it, then fails at once (a truncated bag)
              "atexit.register(lambda: print('pyplot imported at exit:', 'matplotlib.pyplot' in sys.modules))\n"
              'sys.exit(2)\n')
    proc = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == 'pyplot imported at exit: True\n' and proc.stderr == ''


def test_missing_pyarrow_or_dask_is_one_error_line(tmp_path, capsys, scenario, cfg, monkeypatch):
    """Without pyarrow (or, for a directory, without Dask): one line saying what to install."""
    import builtins
    real_import = builtins.__import__
    missing = set()

    def fake_import(name, *args, **kwargs):
        if name.split('.')[0] in missing:
            raise ImportError(f'No module named {name!r}')
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, '__import__', fake_import)
    F.write_scenario_bag(tmp_path / 'bags' / 'one', scenario, 'sqlite3')
    missing.add('distributed')
    code, err = run_cli(capsys, tmp_path / 'bags', '--config', cfg, '--out', tmp_path / 'o')
    assert_error(code, err, 'Dask', 'pip install dask distributed')
    missing.add('pyarrow')
    code, err = run_cli(capsys, tmp_path / 'bags' / 'one', '--config', cfg,
                        '--out', tmp_path / 'o')
    assert_error(code, err, 'pyarrow', 'pip install pyarrow')
