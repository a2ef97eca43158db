"""The one recipe for a child process (``wrench_distribution.processes``): environment, start, output, stop.

The children here are small Python programs written in the test, whose behaviour on SIGINT
is known by construction (a clean exit, a refusal, a grandchild left behind), so each
property of the stop is seen from outside: the exit status the kernel reports, what the child
printed, whether a process is still alive.
"""
import os
import signal
import sys
import textwrap
import time

import pytest

from wrench_distribution.processes import (ChildProcess, Children, console_command, LOOPBACK, loopback_environment,
                                           run_to_end, stop_all, use_loopback)

#: Says it is ready, then waits; SIGINT ends it with exit status 0 after a last line.
POLITE = textwrap.dedent("""
    import signal, sys, time
    def stop(signum, frame):
        print('stopped by', signum, flush=True)
        sys.exit(0)
    signal.signal(signal.SIGINT, stop)
    print('ready', flush=True)
    while True:
        time.sleep(0.05)
""")
#: Ignores SIGINT: only SIGKILL ends it.
STUBBORN = textwrap.dedent("""
    import signal, time
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print('ready', flush=True)
    while True:
        time.sleep(0.05)
""")
#: Starts a grandchild that ignores SIGINT in its own process group, prints its pid, waits.
PARENT = textwrap.dedent("""
    import subprocess, sys, time
    grandchild = subprocess.Popen([sys.executable, '-c', sys.argv[1]])
    print('grandchild', grandchild.pid, flush=True)
    while True:
        time.sleep(0.05)
""")


def alive(pid: int) -> bool:
    """Whether a process exists and is no zombie (``/proc/<pid>/stat``, Linux)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def python(code: str, *args: str) -> list:
    return [sys.executable, '-c', code, *args]


def test_the_environment_keeps_discovery_on_the_loopback_on_the_given_domain():
    base = {'PATH': '/bin', 'ROS_DOMAIN_ID': '3', 'ROS_LOCALHOST_ONLY': '0', 'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'}
    env = loopback_environment(42, base, MPLBACKEND='Agg')
    assert env['ROS_DOMAIN_ID'] == '42' and env['PATH'] == '/bin' and env['MPLBACKEND'] == 'Agg'
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST' and env['ROS_LOCALHOST_ONLY'] == '1'
    assert env['RMW_IMPLEMENTATION'] == 'rmw_cyclonedds_cpp'  # the caller's middleware is kept
    assert env['PYTHONUNBUFFERED'] == '1'
    assert base['ROS_DOMAIN_ID'] == '3' and base['ROS_LOCALHOST_ONLY'] == '0'  # a copy
    assert loopback_environment(7, {})['RMW_IMPLEMENTATION'] == 'rmw_fastrtps_cpp'
    own = use_loopback({'X': '1'}, 9)
    assert own == dict(LOOPBACK, X='1', ROS_DOMAIN_ID='9', RMW_IMPLEMENTATION='rmw_fastrtps_cpp')


def test_sigint_stops_a_child_cleanly_and_its_output_is_kept(tmp_path):
    log = tmp_path / 'polite.log'
    child = ChildProcess(python(POLITE), loopback_environment(5), log=log)
    assert child.wait_for_output('ready', 20.0), child.output()
    assert child.poll() is None
    assert child.close() == 0
    assert child.output() == log.read_text()
    assert child.output().splitlines() == ['ready', f'stopped by {int(signal.SIGINT)}']
    assert not alive(child.pid)


def test_a_child_deaf_to_sigint_is_killed_after_the_grace():
    with ChildProcess(python(STUBBORN), dict(os.environ)) as child:
        assert child.wait_for_output('ready', 20.0), child.output()
        assert child.stop(grace=0.5) == -signal.SIGKILL
    assert not alive(child.pid)


def test_the_signals_reach_the_childs_whole_process_group():
    with ChildProcess(python(PARENT, STUBBORN), dict(os.environ)) as child:
        assert child.wait_for_output('grandchild', 20.0), child.output()
        grandchild = int(child.output().split()[1])
        assert alive(grandchild)
        child.stop(grace=0.5)
    for _ in range(100):  # the grandchild is reaped by init: give it a moment
        if not alive(grandchild):
            break
        time.sleep(0.05)
    assert not alive(grandchild)


def test_a_temporary_log_goes_once_its_text_is_kept_and_stdin_is_closed():
    child = ChildProcess(python('import sys; print(repr(sys.stdin.read())); sys.exit(3)'), dict(os.environ))
    assert child.wait(20.0) == 3
    assert child.close() == 3
    assert child.output() == "''\n"  # nothing from the terminal
    assert not child.log_path.exists()


def test_run_to_end_returns_the_status_and_stops_a_child_past_its_time():
    done = run_to_end(python('import sys; print("out"); print("err", file=sys.stderr); sys.exit(4)'),
                      dict(os.environ), 20.0)
    assert done.returncode == 4 and not done.timed_out
    assert sorted(done.output.split()) == ['err', 'out']  # stdout and stderr, each line whole
    late = run_to_end(python(POLITE), dict(os.environ), 1.0)
    assert late.timed_out and late.returncode == 0 and 'stopped by' in late.output


def test_children_are_named_once_and_stopped_together(tmp_path):
    with Children() as children:
        children.start('polite', python(POLITE), dict(os.environ), log=tmp_path / 'p.log')
        children.start('stubborn', python(STUBBORN), dict(os.environ))
        children.start('quick', python('pass'), dict(os.environ))
        with pytest.raises(ValueError, match='quick'):
            children.start('quick', python('pass'), dict(os.environ))
        assert list(children) == ['polite', 'stubborn', 'quick'] and len(children) == 3
        assert children['quick'].wait(20.0) == 0
        assert children.ended() == ['quick']
        assert all(children[name].wait_for_output('ready', 20.0) for name in ('polite', 'stubborn'))
        stop_all([children['polite'], children['stubborn']], grace=0.5)
        codes = {name: child.returncode for name, child in children.items()}
    assert codes == {'polite': 0, 'stubborn': -signal.SIGKILL, 'quick': 0}
    assert 'ready' in children['stubborn'].output()  # kept after its temporary log went


def test_a_console_script_next_to_the_interpreter_else_the_module(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, 'executable', str(tmp_path / 'python'))
    (tmp_path / 'distributor').write_text('')
    assert console_command('distributor', 'wrench_distribution.distributor_node') == [str(tmp_path / 'distributor')]
    assert console_command('analyzer', 'wrench_distribution.analyzer_node') == [
        str(tmp_path / 'python'), '-m', 'wrench_distribution.analyzer_node']
