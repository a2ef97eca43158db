"""The package as a robot gets it: a Python without the package, a colcon workspace, ``colcon test``.

A *robot-like* Python is a virtual environment that links every dependency of the running
environment (rclpy, colcon, pytest, ...) but not the package itself (no editable install, no
``PYTHONPATH``), as on a robot where only ``colcon build`` installs it. A workspace holds a copy
of the source tree in ``src/`` and is built by colcon on that Python.
``test/package/test_colcon_workspace.py`` checks both; run as a script, this module runs the
whole suite under ``colcon test`` there (``make test-colcon``)::

    .venv/bin/python test/helpers/robot_workspace.py [--workers 4] [--keep DIR]

It prints the time of each step and the counts of the pytest report, and exits non-zero
unless every test passed (no failure, no error, no skip).
"""
import argparse
import os
from pathlib import Path
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import xml.etree.ElementTree as ElementTree

from ros_harness import domain_id_for, REPO, ros_env
from wrench_distribution.processes import Finished, run_to_end

PKG = 'wrench_distribution'
#: Not copied into the workspace: version control, environments, build output, caches.
SKIP = ('.git', '.venv*', 'build', 'install', 'log', '__pycache__', '.pytest_cache', '.hypothesis',
        '*.egg-info', 'out', 'demo_output')
#: What a robot's Python does not have: the package installed from this source tree.
OWN_INSTALL = ('__editable__', 'wrench_distribution', 'easy-install.pth')


def link_all(source, target, skip=()) -> None:
    """Symlink every entry of ``source`` into ``target`` except names starting with ``skip``.

    :param source: directory whose entries are linked.
    :param target: directory that receives the links (created).
    :param skip: name prefixes left out.
    """
    os.makedirs(target, exist_ok=True)
    for name in os.listdir(source):
        if not name.startswith(tuple(skip)) and not os.path.exists(os.path.join(target, name)):
            os.symlink(os.path.join(source, name), os.path.join(target, name))


def make_robot_python(root: Path) -> str:
    """Create a Python with this environment's dependencies but not the package, at ``root``.

    :param root: directory of the new virtual environment (must not exist).
    :return: path of its interpreter.
    """
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(root)], check=True,
                   timeout=120)
    purelib = sysconfig.get_paths()['purelib']
    version = f'python{sys.version_info.major}.{sys.version_info.minor}'
    link_all(purelib, root / 'lib' / version / 'site-packages', skip=OWN_INSTALL)
    link_all(os.path.join(sys.prefix, 'lib'), root / 'lib', skip=(version,))  # ROS libraries
    link_all(sys.prefix, root, skip=('bin', 'lib', 'include', 'pyvenv.cfg'))  # share/ etc.
    return str(root / 'bin' / 'python')


def robot_env(**extra) -> dict:
    """Return this environment without anything that points at the source tree or its venv.

    :param extra: variables to set.
    :return: environment.
    """
    env = {k: v for k, v in os.environ.items()
           if k not in ('PYTHONPATH', 'VIRTUAL_ENV', 'LD_LIBRARY_PATH', '_ROS_WHEELS_BOOTSTRAP_COMPLETE')
           and not k.startswith('PYTEST_XDIST')}  # colcon's pytest is no worker of this run
    env.update(PYTHONDONTWRITEBYTECODE='1', **extra)
    return env


def colcon_build(python: str, ws: Path) -> subprocess.CompletedProcess:
    """Copy the source tree into ``ws/src`` and run ``colcon build`` there on ``python``.

    :param python: the robot-like interpreter.
    :param ws: the workspace directory (created).
    :return: colcon's completed process (output captured).
    """
    shutil.copytree(REPO, ws / 'src' / PKG, ignore=shutil.ignore_patterns(*SKIP))
    return subprocess.run([python, '-m', 'colcon', 'build', '--event-handlers', 'console_direct-'],
                          cwd=ws, env=robot_env(), capture_output=True, text=True, timeout=300)


def installed_env(prefix: Path, domain: int) -> dict:
    """Give the environment sourcing ``install/setup.bash`` gives, for this one package.

    :param prefix: install prefix of the package.
    :param domain: ROS domain id.
    :return: environment.
    """
    env = robot_env(**{k: v for k, v in ros_env(domain).items() if k.startswith(('ROS_', 'RMW_'))})
    site = [str(p) for p in (prefix / 'lib').glob('python3*/site-packages')]
    assert site, f'no site-packages under {prefix}/lib'
    env['PYTHONPATH'] = os.pathsep.join(site + [env.get('PYTHONPATH', '')]).rstrip(os.pathsep)
    env['AMENT_PREFIX_PATH'] = os.pathsep.join(
        [str(prefix), env.get('AMENT_PREFIX_PATH', '')]).rstrip(os.pathsep)
    return env


def colcon_test(python: str, ws: Path, env: dict, pytest_args, timeout: float) -> Finished:
    """Run ``colcon test`` of the package with ``pytest_args``; the report is :func:`report_of`.

    The tests it runs start ROS nodes: past ``timeout`` it is stopped as any child is (SIGINT to
    its process group, then SIGKILL), so that nothing it started is left running.

    :param python: the robot-like interpreter.
    :param ws: the built workspace.
    :param env: the environment (:func:`installed_env`).
    :param pytest_args: arguments handed to pytest.
    :param timeout: seconds.
    :return: colcon's exit status and output (stdout and stderr).
    """
    return run_to_end([python, '-m', 'colcon', 'test', '--packages-select', PKG,
                       '--event-handlers', 'console_direct-', '--pytest-args', *pytest_args],
                      env, timeout, cwd=ws)


def report_of(ws: Path) -> Path:
    """Return where ``colcon test`` leaves pytest's JUnit report.

    :param ws: the workspace.
    :return: the path.
    """
    return ws / 'build' / PKG / 'pytest.xml'


def junit_counts(report) -> dict:
    """Sum the counters of a JUnit XML report (pytest's ``--junit-xml``).

    :param report: path of the report.
    :return: ``{'tests': int, 'failures': int, 'errors': int, 'skipped': int}``.
    """
    root = ElementTree.parse(report).getroot()
    suites = [root] if root.tag == 'testsuite' else list(root.iter('testsuite'))
    return {key: sum(int(s.get(key, 0)) for s in suites)
            for key in ('tests', 'failures', 'errors', 'skipped')}


#: ``colcon test`` of the whole suite in two passes, as make test schedules it: everything but
#: the timing and serial tests on parallel workers, then those one at a time.
PASSES = (('parallel', ['-m', 'not timing and not serial']), ('one at a time', ['-m', 'timing or serial']))


def _step(what: str, start: float) -> None:
    print(f'{what}: {time.monotonic() - start:.0f} s, load {os.getloadavg()[0]:.2f}', flush=True)


def run_whole_suite(root: Path, workers: int, select=()) -> int:
    """Build a robot-like Python and a workspace under ``root``, then ``colcon test`` everything.

    :param root: an empty directory.
    :param workers: pytest-xdist workers of the first pass (0: one pass, no xdist, as a robot runs it).
    :param select: more pytest arguments (e.g. test paths) for every pass.
    :return: 0 when every test passed, else 1.
    """
    start = time.monotonic()
    python = make_robot_python(root / 'robot_python')
    built = colcon_build(python, root / 'ws')
    _step('robot-like Python and colcon build', start)
    if built.returncode != 0:
        print(built.stdout[-4000:], built.stderr[-4000:], sep='\n')
        return 1
    env = installed_env(root / 'ws' / 'install' / PKG, domain_id_for())
    passes = PASSES if workers else (('one pass', []),)
    totals = dict.fromkeys(('tests', 'failures', 'errors', 'skipped'), 0)
    for name, selection in passes:
        xdist = ['-n', str(workers), '--dist', 'loadgroup', '--no-loadscope-reorder'] if name == 'parallel' else []
        res = colcon_test(python, root / 'ws', env, ['-q', *xdist, *selection, *select], timeout=3600)
        counts = junit_counts(report_of(root / 'ws')) if report_of(root / 'ws').is_file() else {}
        _step(f'colcon test, {name}: {counts or "no report"}', start)
        if not counts:
            print(res.output[-8000:])
            return 1
        totals = {key: totals[key] + counts[key] for key in totals}
    print(f'colcon test of the whole suite on a robot-like Python: {totals}', flush=True)
    if totals['failures'] or totals['errors'] or totals['skipped']:
        print(f'see {root / "ws" / "build" / PKG / "pytest.xml"} and {root / "ws" / "log"}')
        return 1
    return 0


def main(argv=None) -> int:
    """Run :func:`run_whole_suite` in a temporary directory (kept with ``--keep``)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--workers', type=int, default=4, help='pytest-xdist workers (0: none)')
    parser.add_argument('--keep', type=Path, help='build here and keep it (an empty directory)')
    parser.add_argument('select', nargs='*', help='more pytest arguments, e.g. test paths (default: all)')
    args = parser.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        return run_whole_suite(args.keep, args.workers, args.select)
    with tempfile.TemporaryDirectory(prefix='wd_robot_') as tmp:
        return run_whole_suite(Path(tmp), args.workers, args.select)


if __name__ == '__main__':
    sys.exit(main())
