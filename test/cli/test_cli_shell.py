"""Every subcommand of ``wrench-distribution`` ends as a shell tool should.

A closed pipe (the reader gone before the output is written: ``| head`` that has read what
it wanted, a ``less`` quit early) ends quietly with status 141 (128 + SIGPIPE, what a shell
reports); Ctrl-C at any point after the program has started prints one line and exits 130
(128 + SIGINT). Run as a user runs them: the console script, in a process of its own.
"""
from __future__ import annotations

import os
from pathlib import Path
import random
import signal
import subprocess
import time

import pytest

import bag_fixtures as F
from ros_harness import REPO, script
from test_identify_cli import write_example
from wrench_distribution.bag.shell import EXIT_CLOSED_PIPE, EXIT_INTERRUPTED

PROBLEM = 'examples/dual_arm_problem.yaml'


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
    """Return the arguments of every subcommand, on inputs that work."""
    root = tmp_path_factory.mktemp('shell')
    F.write_scenario_bag(root / 'bags' / 'one', F.make_scenario(200), 'sqlite3')
    F.write_scenario_bag(root / 'bags' / 'two', F.make_scenario(100, seed=3), 'mcap')
    cfg = F.write_params(root / 'p.yaml')
    write_example(str(root / 'cell'), str(root / 'cell.yaml'))
    cell = ['--config', root / 'cell.yaml']
    return {
        'synthesize': ['synthesize', '--problem', PROBLEM],
        'analyze': ['analyze', '--problem', 'examples/sphere_ix_c.yaml'],
        'basis': ['basis', '--problem', PROBLEM],
        'synthesize-error': ['synthesize', '--problem', root / 'missing.yaml'],  # JSON error
        'check-config': ['check-config', 'config/dual_arm.yaml'],
        'check-config-text': ['check-config', 'config/dual_arm.yaml', '--format', 'text'],
        'analyze-bag': ['analyze-bag', root / 'bags' / 'one', '--config', cfg, '--no-plots',
                        '--replace', '--out', root / 'out'],
        'analyze-bag-fleet': ['analyze-bag', root / 'bags', '--config', cfg, '--no-plots',
                              '--jobs', '1', '--replace', '--out', root / 'fleet_out'],
        'identify': ['identify', root / 'cell', *cell, '--out', root / 'calibration.yaml',
                     '--free', '0:7.49', '--held', '7.5:100'],
        'check-signs': ['check-signs', root / 'cell', *cell, '--held', '7.5:100'],
    }


NAMES = ['synthesize', 'analyze', 'basis', 'synthesize-error', 'check-config',
         'check-config-text', 'analyze-bag', 'analyze-bag-fleet', 'identify', 'check-signs']


@pytest.mark.parametrize('name', NAMES)
def test_closed_pipe_ends_quietly_with_141(inputs, name):
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before anything is written
    try:
        proc = subprocess.run([script('wrench-distribution'), *map(str, inputs[name])],
                              stdout=writer, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              text=True, cwd=REPO, timeout=300)
    finally:
        os.close(writer)
    assert proc.returncode == EXIT_CLOSED_PIPE, proc.stderr
    assert proc.stderr == ''


def test_a_pipe_that_reads_everything_changes_nothing(inputs):
    proc = subprocess.run(f'{script("wrench-distribution")} basis --problem {PROBLEM} | cat',
                          shell=True, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith('{') and proc.stderr == ''


@pytest.mark.slow
@pytest.mark.parametrize('name', NAMES)
def test_ctrl_c_at_any_point_prints_one_line(inputs, tmp_path, name):
    """Three Ctrl-C at random points of the command's run, after the program has started.

    Each run either ends as it would have (the Ctrl-C came after the work) or prints exactly
    one line and exits 130; nothing runs on.
    """
    argv = inputs[name]
    first = F.Command(argv, tmp_path / 'ref')
    started = first.running_package()
    status, out, _ = first.finish()
    span = time.monotonic() - first.started_at - started
    chance = random.Random(name)
    interrupted = 0
    for attempt in range(3):
        run = F.Command(argv, tmp_path / f'run{attempt}')
        run.running_package()
        time.sleep(0.0 if attempt == 0 else chance.uniform(0.0, span))  # the first: at once
        run.signal(signal.SIGINT)
        code, _, err = run.finish(timeout=60)
        assert run.left_behind == []
        assert 'Traceback' not in err and 'Exception ignored' not in err, err
        if code == EXIT_INTERRUPTED:
            interrupted += 1
            assert err.count('\n') == 1 and err.startswith('error: interrupted'), err
        else:
            assert code == status, err  # it had finished its work
    assert interrupted, f'no run of {name} was interrupted (each run takes {span:.2f} s)'


def test_interrupted_error_line_is_the_only_output_of_a_single_run(inputs, tmp_path):
    """An interrupted analysis writes nothing: neither its output nor a partial one."""
    argv = inputs['analyze-bag'][:-1] + [tmp_path / 'out']
    run = F.Command(argv, tmp_path / 'log')
    run.running_package()
    time.sleep(0.3)
    run.signal(signal.SIGINT)
    code, out, err = run.finish(timeout=60)
    if code == EXIT_INTERRUPTED:
        assert out == '' and err == 'error: interrupted\n'
        assert not (tmp_path / 'out').exists() and F.hidden_leftovers(tmp_path) == []
    else:
        assert code == 0 and Path(tmp_path / 'out' / 'manifest.json').exists()


def test_an_error_a_ctrl_c_became_is_the_ctrl_c(capsys):
    """End with one line and 130 when a library turned the Ctrl-C into another error.

    As a C extension being imported does: ``ImportError: initialization failed``.
    """
    from wrench_distribution.bag import shell

    def body() -> int:
        try:
            os.kill(os.getpid(), signal.SIGINT)  # the command's handler raises KeyboardInterrupt
            time.sleep(5)
        except KeyboardInterrupt:
            raise ImportError('initialization failed') from None
        return 0
    before = signal.getsignal(signal.SIGINT)
    assert shell.run(body) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == 'error: interrupted\n'
    assert signal.getsignal(signal.SIGINT) is before  # given back to the caller
    assert shell.run(lambda: 0) == 0 and not shell.interrupted()  # a new command, a new state


def test_a_held_ctrl_c_acts_once_the_block_is_done():
    """A rename or a removal that must finish holds Ctrl-C; it acts right after."""
    from wrench_distribution.bag import shell
    finished = []

    def body() -> int:
        with shell.held_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the handler ran meanwhile, and only noted it
            finished.append(True)
        return 0
    assert shell.run(body) == EXIT_INTERRUPTED and finished == [True]
