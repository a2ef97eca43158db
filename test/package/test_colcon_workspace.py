"""The package as a robot gets it: colcon build into a fresh workspace, installed nodes run.

Nothing is installed globally: the workspace is a temporary directory, colcon comes from
``requirements-test.txt``, and the installed ``distributor`` and ``analyzer`` are started
from ``install/wrench_distribution/lib/wrench_distribution`` with a shipped configuration
from ``install/wrench_distribution/share``, as ``ros2 launch`` would start them.

colcon runs on a *robot-like* Python: a virtual environment that sees every dependency of
this test environment (linked in) but not the package itself (no editable install, no
``PYTHONPATH``), as on a robot where only ``colcon build`` installs it; ``colcon test`` then
runs the tests that start executables and must report no failure.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import xml.etree.ElementTree as ElementTree

import pytest

from ros_harness import domain_id_for, REPO, ros_env, stop_process, TestClient

# one worker under pytest-xdist: the tests share the module's robot-like Python and workspace
pytestmark = [pytest.mark.slow, pytest.mark.ros, pytest.mark.xdist_group('colcon_workspace')]

PKG = 'wrench_distribution'
# What ament_python puts where (setup.py data_files and setup.cfg install_scripts).
EXECUTABLES = ('distributor', 'analyzer', 'wrench-distribution')
SHARE_FILES = ('package.xml', 'config/dual_arm.yaml', 'config/three_finger_hand.yaml',
               'config/quadruped_stance.yaml', 'launch/wrench_distribution.launch.py',
               'launch/distributor.launch.py', 'launch/analyzer.launch.py',
               'launch/ur5e_cell.launch.py', 'config/ur5e_cell/wrench_distribution.yaml',
               'config/ur5e_cell/controllers_jazzy.yaml', 'config/ur5e_cell/controllers_humble.yaml')
_SKIP = ('.git', '.venv', 'build', 'install', 'log', '__pycache__', '.pytest_cache',
         '.hypothesis', '*.egg-info')


# What a robot's Python does not have: the package installed from this source tree.
_OWN_INSTALL = ('__editable__', 'wrench_distribution', 'easy-install.pth')
# colcon test runs these (each starts an executable); bounded to about a minute.
COLCON_TESTS = ('test/ros/test_harness.py', 'test/cli/test_cli_fuzz.py::test_hostile_files_one_error_bounded',
                'test/package/test_controller_wiring.py')


def _link_all(source, target, skip=()) -> None:
    """Symlink every entry of ``source`` into ``target`` except names starting with ``skip``.

    :param source: directory whose entries are linked.
    :param target: directory that receives the links (created).
    :param skip: name prefixes left out.
    """
    os.makedirs(target, exist_ok=True)
    for name in os.listdir(source):
        if not name.startswith(tuple(skip)) and not os.path.exists(os.path.join(target, name)):
            os.symlink(os.path.join(source, name), os.path.join(target, name))


@pytest.fixture(scope='module')
def robot_python(tmp_path_factory) -> str:
    """Build a Python with this environment's dependencies (rclpy, colcon, pytest) but not the package.

    :return: path of its interpreter.
    """
    colcon_here = os.path.join(os.path.dirname(sys.executable), 'colcon')
    assert os.path.exists(colcon_here) or shutil.which('colcon'), \
        'colcon is not installed (make test installs requirements-test.txt)'
    root = tmp_path_factory.mktemp('robot_python') / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(root)], check=True,
                   timeout=120)
    purelib = sysconfig.get_paths()['purelib']
    version = f'python{sys.version_info.major}.{sys.version_info.minor}'
    _link_all(purelib, root / 'lib' / version / 'site-packages', skip=_OWN_INSTALL)
    _link_all(os.path.join(sys.prefix, 'lib'), root / 'lib', skip=(version,))  # ROS libraries
    _link_all(sys.prefix, root, skip=('bin', 'lib', 'include', 'pyvenv.cfg'))  # share/ etc.
    python = str(root / 'bin' / 'python')
    probe = subprocess.run([python, '-c', 'import rclpy, colcon_core, pytest; import wrench_distribution'],
                           env=_robot_env(), cwd=root, capture_output=True, text=True, timeout=120)
    assert "No module named 'wrench_distribution'" in probe.stderr, (
        'the robot-like Python must have every dependency and not the package: '
        + probe.stdout + probe.stderr)
    return python


def _robot_env(**extra) -> dict:
    """Return this environment without anything that points at the source tree or its venv.

    :param extra: variables to set.
    :return: environment.
    """
    env = {k: v for k, v in os.environ.items()
           if k not in ('PYTHONPATH', 'VIRTUAL_ENV', 'LD_LIBRARY_PATH', '_ROS_WHEELS_BOOTSTRAP_COMPLETE')
           and not k.startswith('PYTEST_XDIST')}  # colcon's pytest is no worker of this run
    env.update(PYTHONDONTWRITEBYTECODE='1', **extra)
    return env


@pytest.fixture(scope='module')
def workspace(tmp_path_factory, robot_python):
    """Build a workspace with the package in ``src/`` by ``colcon build`` on the robot-like Python.

    :return: (workspace path, install prefix of the package).
    """
    ws = tmp_path_factory.mktemp('colcon_ws')
    shutil.copytree(REPO, ws / 'src' / PKG, ignore=shutil.ignore_patterns(*_SKIP))
    res = subprocess.run([robot_python, '-m', 'colcon', 'build', '--event-handlers',
                          'console_direct-'], cwd=ws, env=_robot_env(), capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, f'colcon build failed:\n{res.stdout}\n{res.stderr}'
    return ws, ws / 'install' / PKG


def _installed_env(prefix, domain: int) -> dict:
    """Give the environment sourcing ``install/setup.bash`` gives, for this one package.

    :param prefix: install prefix of the package.
    :param domain: ROS domain id.
    :return: environment.
    """
    env = _robot_env(**{k: v for k, v in ros_env(domain).items() if k.startswith(('ROS_', 'RMW_'))})
    site = [str(p) for p in (prefix / 'lib').glob('python3*/site-packages')]
    assert site, f'no site-packages under {prefix}/lib'
    env['PYTHONPATH'] = os.pathsep.join(site + [env.get('PYTHONPATH', '')]).rstrip(os.pathsep)
    env['AMENT_PREFIX_PATH'] = os.pathsep.join(
        [str(prefix), env.get('AMENT_PREFIX_PATH', '')]).rstrip(os.pathsep)
    return env


def test_install_layout(workspace):
    """Executables in lib/<pkg>, config and launch in share/<pkg>, the ament index marker."""
    _, prefix = workspace
    for name in EXECUTABLES:
        path = prefix / 'lib' / PKG / name
        assert path.is_file() and os.access(path, os.X_OK), f'{path} missing or not executable'
    for rel in SHARE_FILES:
        assert (prefix / 'share' / PKG / rel).is_file(), f'share/{PKG}/{rel} not installed'
    assert (prefix / 'share' / 'ament_index' / 'resource_index' / 'packages' / PKG).is_file()


def test_installed_command_line_runs_from_install(workspace, robot_python, tmp_path):
    """Run the installed command line (what ``ros2 run`` resolves) on an installed example.

    ``ros2 run wrench_distribution wrench-distribution`` resolves to ``lib/<pkg>``; it must
    import the installed package and work with no source tree around.
    """
    _, prefix = workspace
    env = _installed_env(prefix, domain_id_for())
    where = subprocess.run([robot_python, '-c', 'import wrench_distribution as w; '
                            'print(w.__file__)'], env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)
    assert where.stdout.strip().startswith(str(prefix)), where.stdout + where.stderr
    problem = prefix / 'share' / PKG / 'examples' / 'dual_arm_problem.yaml'
    assert problem.is_file(), 'examples are not installed in share/'
    res = subprocess.run([str(prefix / 'lib' / PKG / 'wrench-distribution'), 'synthesize',
                          '--problem', str(problem)], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    import json
    doc = json.loads(res.stdout)
    assert set(doc['contacts']) == {'left', 'right'}, res.stdout[:500]


def _start(prefix, name: str, env: dict, log_dir):
    config = prefix / 'share' / PKG / 'config' / 'dual_arm.yaml'
    log = open(log_dir / f'{name}.log', 'w')
    proc = subprocess.Popen([str(prefix / 'lib' / PKG / name), '--ros-args', '--params-file',
                             str(config)], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd=log_dir)
    return proc, log


def _stop(proc, log) -> None:
    stop_process(proc)
    log.close()


def test_installed_nodes_come_up_with_shipped_config(workspace, tmp_path):
    """Start the installed distributor and analyzer on the installed dual_arm.yaml.

    Both publish /diagnostics under their node names, and the distributor answers a desired
    wrench on the admittance controllers' topics.
    """
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import WrenchStamped
    from ros_harness import stamped_wrench
    _, prefix = workspace
    domain = domain_id_for(offset=1)
    env = _installed_env(prefix, domain)
    procs = [_start(prefix, name, env, tmp_path) for name in ('distributor', 'analyzer')]
    client = TestClient(domain, 'wd_colcon_client')
    try:
        diags = client.collect(DiagnosticArray, '/diagnostics')
        cmds = client.collect(WrenchStamped, '/left_admittance_controller/wrench_reference')
        names = ('wrench_distributor', 'wrench_analyzer')

        def seen() -> bool:
            got = {s.name for a in diags for s in a.status}
            return all(any(n in g for g in got) for n in names)
        assert client.spin_until(seen, 30.0), (
            'no /diagnostics from both nodes; logs:\n'
            + '\n'.join((tmp_path / f'{n}.log').read_text() for n in ('distributor', 'analyzer')))
        pub = client.publisher(WrenchStamped, 'desired_wrench')
        end = time.monotonic() + 20.0
        while not cmds and time.monotonic() < end:
            now = client.node.get_clock().now().nanoseconds
            pub.publish(stamped_wrench([0.0, 0.0, 39.24, 0.0, 0.0, 0.0], now, 'box'))
            client.spin_for(0.1)
        assert cmds, 'no command on /left_admittance_controller/wrench_reference'
        assert all(p.poll() is None for p, _ in procs), 'a node exited'
    finally:
        client.close()
        for proc, log in procs:
            _stop(proc, log)


def _junit_counts(report) -> dict:
    """Sum the counters of a JUnit XML report (pytest's ``--junit-xml``).

    :param report: path of the report.
    :return: ``{'tests': int, 'failures': int, 'errors': int, 'skipped': int}``.
    """
    root = ElementTree.parse(report).getroot()
    suites = [root] if root.tag == 'testsuite' else list(root.iter('testsuite'))
    return {key: sum(int(s.get(key, 0)) for s in suites)
            for key in ('tests', 'failures', 'errors', 'skipped')}


def test_colcon_test_on_a_robot_python_has_no_failure(workspace, robot_python):
    """``colcon test`` on a Python without the package: the tests that start executables pass.

    They find ``wrench-distribution``, ``distributor`` and ``analyzer`` where colcon installed
    them (the harness's one rule), not next to the interpreter.
    """
    ws, prefix = workspace
    # as after ``source install/setup.bash``; offset 0: colcon's pytest takes its offsets from
    # there, inside this test's block of domain ids
    env = _installed_env(prefix, domain_id_for(offset=0))
    res = subprocess.run([robot_python, '-m', 'colcon', 'test', '--packages-select', PKG,
                          '--event-handlers', 'console_direct-', '--pytest-args', *COLCON_TESTS],
                         cwd=ws, env=env, capture_output=True, text=True, timeout=900)
    report = ws / 'build' / PKG / 'pytest.xml'
    assert report.is_file(), f'no pytest report from colcon test:\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}'
    counts = _junit_counts(report)
    assert counts['tests'] >= 5, counts
    assert counts['failures'] == counts['errors'] == counts['skipped'] == 0, (
        f'{counts}\n{res.stdout[-6000:]}')
