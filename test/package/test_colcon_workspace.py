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
import importlib.util
import json
import os
import subprocess
import time

import pytest

from robot_workspace import (colcon_build, colcon_test, installed_env, junit_counts, make_robot_python,
                             PKG, report_of, robot_env)
from ros_harness import domain_id_for, TestClient
from wrench_distribution.processes import Children

# one worker under pytest-xdist: the tests share the module's robot-like Python and workspace
pytestmark = [pytest.mark.slow, pytest.mark.ros, pytest.mark.xdist_group('colcon_workspace')]

# What ament_python puts where (setup.py data_files and setup.cfg install_scripts).
EXECUTABLES = ('distributor', 'analyzer', 'cell', 'wrench-distribution')
SHARE_FILES = ('package.xml', 'config/dual_arm.yaml', 'config/three_finger_hand.yaml',
               'config/quadruped_stance.yaml', 'launch/wrench_distribution.launch.py',
               'launch/distributor.launch.py', 'launch/analyzer.launch.py',
               'launch/ur5e_cell.launch.py', 'config/ur5e_cell/wrench_distribution.yaml',
               'config/ur5e_cell/controllers_jazzy.yaml', 'config/ur5e_cell/controllers_humble.yaml')
# colcon test runs these (each starts an executable); bounded to about a minute.
COLCON_TESTS = ('test/ros/test_harness.py', 'test/cli/test_cli_fuzz.py::test_hostile_files_one_error_bounded',
                'test/package/test_controller_wiring.py')


@pytest.fixture(scope='module')
def robot_python(tmp_path_factory) -> str:
    """Build a Python with this environment's dependencies (rclpy, colcon, pytest) but not the package.

    :return: path of its interpreter.
    """
    assert importlib.util.find_spec('colcon_core'), \
        'colcon is not installed (make test installs requirements-test.txt)'  # run as python -m colcon
    root = tmp_path_factory.mktemp('robot_python') / 'venv'
    python = make_robot_python(root)
    probe = subprocess.run([python, '-c', 'import rclpy, colcon_core, pytest; import wrench_distribution'],
                           env=robot_env(), cwd=root, capture_output=True, text=True, timeout=120)
    assert "No module named 'wrench_distribution'" in probe.stderr, (
        'the robot-like Python must have every dependency and not the package: '
        + probe.stdout + probe.stderr)
    return python


@pytest.fixture(scope='module')
def workspace(tmp_path_factory, robot_python):
    """Build a workspace with the package in ``src/`` by ``colcon build`` on the robot-like Python.

    :return: (workspace path, install prefix of the package).
    """
    ws = tmp_path_factory.mktemp('colcon_ws')
    res = colcon_build(robot_python, ws)
    assert res.returncode == 0, f'colcon build failed:\n{res.stdout}\n{res.stderr}'
    return ws, ws / 'install' / PKG


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
    env = installed_env(prefix, domain_id_for())
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
    doc = json.loads(res.stdout)
    assert set(doc['contacts']) == {'left', 'right'}, res.stdout[:500]


def _start(nodes: Children, prefix, name: str, env: dict, log_dir) -> None:
    config = prefix / 'share' / PKG / 'config' / 'dual_arm.yaml'
    nodes.start(name, [str(prefix / 'lib' / PKG / name), '--ros-args', '--params-file', str(config)], env,
                log=log_dir / f'{name}.log', cwd=log_dir)


@pytest.mark.parametrize('executables', [('cell',), ('distributor', 'analyzer')],
                         ids=['one-process', 'processes'])
def test_installed_nodes_come_up_with_shipped_config(workspace, tmp_path, executables, children):
    """Start the installed distributor and analyzer, in one process or two, on the installed dual_arm.yaml.

    Both publish /diagnostics under their node names, and the distributor answers a desired
    wrench on the admittance controllers' topics.
    """
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import WrenchStamped
    from ros_harness import stamped_wrench
    _, prefix = workspace
    domain = domain_id_for(offset=1)
    env = installed_env(prefix, domain)
    for name in executables:
        _start(children, prefix, name, env, tmp_path)
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
            + '\n'.join((tmp_path / f'{n}.log').read_text() for n in executables))
        pub = client.publisher(WrenchStamped, 'desired_wrench')
        end = time.monotonic() + 20.0
        while not cmds and time.monotonic() < end:
            now = client.node.get_clock().now().nanoseconds
            pub.publish(stamped_wrench([0.0, 0.0, 39.24, 0.0, 0.0, 0.0], now, 'box'))
            client.spin_for(0.1)
        assert cmds, 'no command on /left_admittance_controller/wrench_reference'
        assert not children.ended(), 'a node exited'
    finally:
        client.close()
        children.stop()


def test_colcon_test_on_a_robot_python_has_no_failure(workspace, robot_python):
    """``colcon test`` on a Python without the package: the tests that start executables pass.

    They find ``wrench-distribution``, ``distributor`` and ``analyzer`` where colcon installed
    them (the harness's one rule), not next to the interpreter.
    """
    ws, prefix = workspace
    # as after ``source install/setup.bash``; offset 0: colcon's pytest takes its offsets from
    # there, inside this test's block of domain ids
    env = installed_env(prefix, domain_id_for(offset=0))
    res = colcon_test(robot_python, ws, env, COLCON_TESTS, timeout=900)
    report = report_of(ws)
    assert report.is_file(), f'no pytest report from colcon test:\n{res.output[-6000:]}'
    counts = junit_counts(report)
    assert counts['tests'] >= 5, counts
    assert counts['failures'] == counts['errors'] == counts['skipped'] == 0, (
        f'{counts}\n{res.output[-6000:]}')
