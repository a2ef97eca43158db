"""The package as a robot gets it: colcon build into a fresh workspace, installed nodes run.

Nothing is installed globally: the workspace is a temporary directory, colcon comes from
``requirements-test.txt``, and the installed ``distributor`` and ``analyzer`` are started
from ``install/wrench_distribution/lib/wrench_distribution`` with a shipped configuration
from ``install/wrench_distribution/share``, as ``ros2 launch`` would start them.
"""
import os
import shutil
import subprocess
import sys
import time

import pytest

from ros_harness import domain_id_for, ros_env, stop_process, TestClient

pytestmark = [pytest.mark.slow, pytest.mark.ros]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = 'wrench_distribution'
# What ament_python puts where (setup.py data_files and setup.cfg install_scripts).
EXECUTABLES = ('distributor', 'analyzer', 'wrench-distribution')
SHARE_FILES = ('package.xml', 'config/dual_arm.yaml', 'config/three_finger_hand.yaml',
               'config/quadruped_stance.yaml', 'launch/wrench_distribution.launch.py',
               'launch/distributor.launch.py', 'launch/analyzer.launch.py')
_SKIP = ('.git', '.venv', 'build', 'install', 'log', '__pycache__', '.pytest_cache',
         '.hypothesis', '*.egg-info')


def _colcon() -> list:
    """Find the colcon command of this environment (next to the interpreter, else on PATH).

    :return: argv prefix.
    """
    cand = os.path.join(os.path.dirname(sys.executable), 'colcon')
    found = cand if os.path.exists(cand) else shutil.which('colcon')
    if not found:
        pytest.skip('colcon is not installed (pip install -r requirements-test.txt)')
    return [found]


@pytest.fixture(scope='module')
def workspace(tmp_path_factory):
    """Build a workspace with the package in ``src/`` by ``colcon build``.

    :return: (workspace path, install prefix of the package).
    """
    ws = tmp_path_factory.mktemp('colcon_ws')
    shutil.copytree(REPO, ws / 'src' / PKG, ignore=shutil.ignore_patterns(*_SKIP))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1')
    res = subprocess.run(_colcon() + ['build', '--event-handlers', 'console_direct-'],
                         cwd=ws, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f'colcon build failed:\n{res.stdout}\n{res.stderr}'
    return ws, ws / 'install' / PKG


def _installed_env(prefix, domain: int) -> dict:
    """Give the environment sourcing ``install/setup.bash`` gives, for this one package.

    :param prefix: install prefix of the package.
    :param domain: ROS domain id.
    :return: environment.
    """
    env = ros_env(domain)
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


def test_installed_command_line_runs_from_install(workspace, tmp_path):
    """Run the installed command line (what ``ros2 run`` resolves) on an installed example.

    ``ros2 run wrench_distribution wrench-distribution`` resolves to ``lib/<pkg>``; it must
    import the installed package and work with no source tree around.
    """
    _, prefix = workspace
    env = _installed_env(prefix, domain_id_for())
    where = subprocess.run([sys.executable, '-c', 'import wrench_distribution as w; '
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
