"""Managed nodes over DDS: each transition asked from this process through ``lifecycle_msgs``.

Each node runs in its own process with ``autostart: false`` and is driven through
``~/change_state`` and ``~/get_state`` (what ``ros2 lifecycle set/get`` and a lifecycle manager
call). What each state lets out is read on the topics: no command and no analysis before
``activate``; after ``deactivate`` the distributor's stop (zero wrenches on every command
topic) and then nothing, the analyzer nothing; after a second ``activate`` (and after
``cleanup`` and ``configure`` again) the same outputs for the same inputs. The commands are
checked against the desired wrench by hand (``F = f_l + f_r``,
``T = t_l + t_r + p_l x f_l + p_r x f_r``, contact frames aligned with the object frame, CoM at
the origin), the analyzer's ``object_wrench`` against the same sum of two F/T readings. A bad
parameter file fails ``configure`` and leaves the node unconfigured and alive, with the reason
in its log and its diagnostics; Ctrl-C ends the process with status 0 and no traceback in
every state, the two nodes in one process (``cell``) included.
"""
import json
import os
import signal
import sys
import tempfile
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from rclpy.parameter import Parameter
import yaml

from ros_harness import (diag_messages, domain_id_for, NodeProcess, resultant_at, ros_env,
                         stamped_wrench, TestClient, wrench_values)
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.processes import ChildProcess
from wrench_distribution.ros.diagnostics import ERROR, level_of

pytestmark = [pytest.mark.ros]

DOMAIN = domain_id_for(__name__)
NAMES = ['left', 'right']
POSITIONS = np.array([[0.0, 0.3, 0.0], [0.0, -0.3, 0.0]])
COMMON = {'effectors': NAMES, 'contact_source': 'static', 'object_frame': 'object',
          'contact_positions': POSITIONS.ravel().tolist(), 'diagnostics_period': 0.1,
          'autostart': False}
PARAMS = {'distributor': dict(COMMON, input_timeout=0.0),
          'analyzer': dict(COMMON, max_age=0.0)}
NODE_NAMES = {'distributor': 'wrench_distributor', 'analyzer': 'wrench_analyzer'}
DESIRED = [2.0, -1.0, 15.0, 0.3, -0.2, 0.1]
READINGS = ([1.0, 12.0, 4.0, 0.1, 0.0, 0.2], [-0.5, -11.0, 5.0, 0.0, 0.3, -0.1])
#: a bad file for each node and the words its reason must hold
BAD = {'distributor': ({'contact_types': ['rigid', 'glue']}, "parameter 'contact_types'"),
       'analyzer': ({'sensor_signs': [1, 0]}, "parameter 'sensor_signs'")}
#: the transitions that take a node from unconfigured to each primary state
PATHS = {'unconfigured': [], 'inactive': ['configure'], 'active': ['configure', 'activate'],
         'finalized': ['unconfigured_shutdown']}


def resultant(left, right) -> np.ndarray:
    """Resultant about the origin of two wrenches applied at the contacts (by hand)."""
    return resultant_at(POSITIONS, [left, right])


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN, 'wd_lifecycle_client')
    yield c
    c.close()


def _stream(client: TestClient, streams, seconds: float) -> int:
    """Publish each ``(publisher, values)`` at about 50 Hz, stamped now; return the last stamp."""
    end, stamp = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        stamp = time.time_ns()
        for pub, wrench in streams:
            pub.publish(stamped_wrench(wrench, stamp, 'object'))
        client.spin_for(0.02)
    return stamp


def _quiet(client: TestClient, outputs: dict) -> None:
    """Let what is on its way arrive, then forget everything received."""
    client.spin_for(0.5)
    for received in outputs.values():
        received.clear()


def _until_each(client: TestClient, streams, outputs: dict, seconds: float = 10.0) -> bool:
    """Stream until every output has received something."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and not all(outputs.values()):
        _stream(client, streams, 0.1)
    return all(outputs.values())


def _transition(client: TestClient, proc: NodeProcess, node: str, transition: str,
                state: str) -> None:
    assert client.change_state(node, transition), proc.output()
    assert client.lifecycle_state(node) == state, proc.output()


def _lifecycle_statuses(diag: list, node: str) -> list:
    return diag_messages(diag, f'{node}: lifecycle')


def _distributor_io(client: TestClient) -> tuple:
    commands = {e: client.collect(WrenchStamped, f'{e}/wrench_command') for e in NAMES}
    for received in commands.values():  # what an earlier test's node published
        received.clear()
    desired = client.publisher(WrenchStamped, 'desired_wrench')
    return commands, [(desired, DESIRED)]


def _active_commands(client, proc, commands, streams) -> list:
    """Stream until both commands arrive; check their resultant by hand; return them."""
    for received in commands.values():  # the stop of an earlier deactivate
        received.clear()
    assert _until_each(client, streams, commands), proc.output()
    got = [wrench_values(commands[e][-1]) for e in NAMES]
    np.testing.assert_allclose(resultant(*got), DESIRED, atol=1e-9)
    return got


def test_distributor_commands_only_while_active(client):
    node = NODE_NAMES['distributor']
    with NodeProcess('distributor', PARAMS['distributor'], DOMAIN) as proc:
        commands, streams = _distributor_io(client)
        diag = client.collect(DiagnosticArray, '/diagnostics')
        assert client.lifecycle_state(node) == 'unconfigured', proc.output()
        _transition(client, proc, node, 'configure', 'inactive')
        assert client.wait_matched(publishers=[streams[0][0]],
                                   topics=[f'{e}/wrench_command' for e in NAMES]), proc.output()
        _stream(client, streams, 1.0)
        assert not any(commands.values()), 'commanded while inactive'
        _transition(client, proc, node, 'activate', 'active')
        first = _active_commands(client, proc, commands, streams)
        _check_deactivate_stops(client, proc, node, commands, streams)
        _transition(client, proc, node, 'activate', 'active')
        _quiet(client, commands)
        np.testing.assert_allclose(_active_commands(client, proc, commands, streams), first,
                                   atol=1e-12)
        _check_deactivate_stops(client, proc, node, commands, streams)
        _transition(client, proc, node, 'cleanup', 'unconfigured')
        assert client.spin_until(lambda: client.node.count_publishers('/left/wrench_command') == 0,
                                 10.0), 'cleanup left the command publishers'
        _transition(client, proc, node, 'configure', 'inactive')
        _transition(client, proc, node, 'activate', 'active')
        np.testing.assert_allclose(_active_commands(client, proc, commands, streams), first,
                                   atol=1e-12)
        _quiet(client, commands)
        _transition(client, proc, node, 'active_shutdown', 'finalized')
        assert client.spin_until(lambda: all(commands.values()), 5.0), 'no stop on shutdown'
        assert all(wrench_values(commands[e][-1]) == [0.0] * 6 for e in NAMES)
        client.spin_for(0.3)
        assert proc.poll() is None, proc.output()
        states = [m.split(':')[0] for m in _lifecycle_statuses(diag, node)]
        assert {'unconfigured', 'inactive', 'active', 'finalized'} <= set(states), states
        assert proc.close() == 0
    out = proc.output()
    assert 'Traceback' not in out and '[FATAL]' not in out, out


def _check_deactivate_stops(client, proc, node, commands, streams) -> None:
    """Deactivate: the stop (zero wrenches) on every command topic, then no command at all."""
    _quiet(client, commands)
    _transition(client, proc, node, 'deactivate', 'inactive')
    assert client.spin_until(lambda: all(commands.values()), 5.0), 'no stop on deactivate'
    after = time.time_ns()
    _stream(client, streams, 1.0)
    for e in NAMES:
        assert [wrench_values(m) for m in commands[e]] == [[0.0] * 6], (e, commands[e])
        assert stamp_to_ns(commands[e][0].header.stamp) < after


def test_analyzer_publishes_only_while_active(client):
    node = NODE_NAMES['analyzer']
    with NodeProcess('analyzer', PARAMS['analyzer'], DOMAIN) as proc:
        measured = {'object_wrench': client.collect(WrenchStamped, 'object_wrench')}
        streams = [(client.publisher(WrenchStamped, f'{e}/ft_sensor'), reading)
                   for e, reading in zip(NAMES, READINGS)]
        assert client.lifecycle_state(node) == 'unconfigured', proc.output()
        _transition(client, proc, node, 'configure', 'inactive')
        assert client.wait_matched(publishers=[p for p, _ in streams],
                                   topics=['object_wrench']), proc.output()
        _stream(client, streams, 1.0)
        assert not measured['object_wrench'], 'analysed while inactive'
        for attempt in range(2):
            _transition(client, proc, node, 'activate', 'active')
            _quiet(client, measured)
            assert _until_each(client, streams, measured), proc.output()
            np.testing.assert_allclose(wrench_values(measured['object_wrench'][-1]), resultant(*READINGS),
                                       atol=1e-9)
            _quiet(client, measured)
            _transition(client, proc, node, 'deactivate', 'inactive')
            _stream(client, streams, 1.0)
            assert not measured['object_wrench'], 'analysed after deactivate'
        _transition(client, proc, node, 'cleanup', 'unconfigured')
        _transition(client, proc, node, 'configure', 'inactive')
        _transition(client, proc, node, 'activate', 'active')
        assert _until_each(client, streams, measured), proc.output()
        np.testing.assert_allclose(wrench_values(measured['object_wrench'][-1]), resultant(*READINGS),
                                   atol=1e-9)
        assert proc.close() == 0
    assert 'Traceback' not in proc.output(), proc.output()


@pytest.mark.parametrize('kind', sorted(NODE_NAMES))
def test_a_bad_file_fails_configure_and_the_node_stays_unconfigured(client, kind):
    node, (bad, reason) = NODE_NAMES[kind], BAD[kind]
    with NodeProcess(kind, dict(PARAMS[kind], **bad), DOMAIN) as proc:
        diag = client.collect(DiagnosticArray, '/diagnostics')
        assert client.lifecycle_state(node) == 'unconfigured', proc.output()
        for attempt in range(2):  # the same answer each time, the node alive
            assert not client.change_state(node, 'configure'), proc.output()
            assert client.lifecycle_state(node) == 'unconfigured'
            assert proc.poll() is None, proc.output()
        assert f'configure failed: {reason}' in proc.output(), proc.output()

        def status():
            return next((s for a in reversed(diag) for s in a.status
                         if s.name == f'{node}: lifecycle'), None)
        assert client.spin_until(lambda: status() is not None and reason in status().message,
                                 5.0), [s.message for a in diag for s in a.status]
        assert level_of(status()) == ERROR and status().message.startswith('unconfigured')
        result = client.set_parameters(node, [Parameter('contact_timeout', value=1.0)])[0]
        assert not result.successful and 'unconfigured' in result.reason, result.reason
        assert not client.change_state(node, 'activate')  # not from unconfigured
        assert proc.close() == 0
    assert 'Traceback' not in proc.output(), proc.output()


@pytest.mark.parametrize('state', sorted(PATHS))
@pytest.mark.parametrize('kind', sorted(NODE_NAMES))
def test_ctrl_c_in_every_state_exits_cleanly(client, kind, state):
    node = NODE_NAMES[kind]
    with NodeProcess(kind, PARAMS[kind], DOMAIN) as proc:
        assert client.lifecycle_state(node) == 'unconfigured', proc.output()
        for transition in PATHS[state]:
            assert client.change_state(node, transition), proc.output()
        assert client.lifecycle_state(node) == state
        proc.send(signal.SIGINT)
        code = proc.wait(10.0)
        out = proc.output()
    assert code == 0, out
    assert not any(word in out for word in ('Traceback', '[FATAL]', 'Exception')), out


def _start_cell(tmp: str, autostart: bool) -> ChildProcess:
    """Start the cell on one parameter file (feedback on the analyzer's own topic)."""
    params = os.path.join(tmp, 'params.yaml')
    with open(params, 'w') as f:
        yaml.safe_dump(json.loads(json.dumps({  # no shared list: rcl refuses YAML aliases
            'wrench_distributor': {'ros__parameters': dict(
                PARAMS['distributor'], autostart=autostart, internal_load_feedback=True,
                internal_load=[10.0, 0.0, 0.0, 0.0, 0.0, 0.0])},
            'wrench_analyzer': {'ros__parameters': dict(PARAMS['analyzer'], autostart=autostart)}})),
            f)
    return ChildProcess([sys.executable, '-m', 'wrench_distribution.cell', '--ros-args',
                         '--params-file', params], ros_env(DOMAIN), log=os.path.join(tmp, 'log.txt'))


def _feedback_closed(diag: list) -> bool:
    return any(kv.key == 'state' and kv.value.startswith('closed loop')
               for a in diag[-20:] for s in a.status if s.name == 'wrench_distributor: feedback'
               for kv in s.values)


def test_the_cell_manages_both_nodes(client):
    """Both nodes of one process through their transitions; the in-process feedback follows."""
    dist, ana = NODE_NAMES['distributor'], NODE_NAMES['analyzer']
    with tempfile.TemporaryDirectory(prefix='wd_cell_lifecycle_') as tmp:
        cell = _start_cell(tmp, autostart=False)
        try:
            commands, streams = _distributor_io(client)
            streams += [(client.publisher(WrenchStamped, f'{e}/ft_sensor'), reading)
                        for e, reading in zip(NAMES, READINGS)]
            diag = client.collect(DiagnosticArray, '/diagnostics')
            for node in (dist, ana):
                assert client.lifecycle_state(node, 30.0) == 'unconfigured', cell.output()
                assert client.change_state(node, 'configure'), cell.output()
            assert client.wait_matched(publishers=[p for p, _ in streams],
                                       topics=['left/wrench_command', 'object_wrench'])
            _stream(client, streams, 1.0)
            assert not any(commands.values()), 'commanded while inactive'
            for node in (dist, ana):
                assert client.change_state(node, 'activate')
            assert _until_each(client, streams, commands), cell.output()
            # 30 s each: at a load of 6 a fresh make test saw a configure outlast the default 10 s
            for transition in ('deactivate', 'cleanup', 'configure', 'activate'):
                assert client.change_state(dist, transition, 30.0), cell.output()
            diag.clear()
            end = time.monotonic() + 10.0
            while time.monotonic() < end and not _feedback_closed(diag):
                _stream(client, streams, 0.1)
            assert _feedback_closed(diag), cell.output()

            def subscribers() -> set:
                return {i.node_name for i in client.node.get_subscriptions_info_by_topic(
                    '/measured/internal_load')}
            # still taken in the process: configure's subscription was dropped again
            assert client.spin_until(lambda: dist not in subscribers(), 5.0), subscribers()
            assert 'taken from wrench_analyzer in this process' in cell.output()
            assert client.lifecycle_state(ana) == 'active'
        finally:
            code = cell.close()
        out = cell.output()
    assert code == 0 and 'Traceback' not in out, out


def test_a_started_cell_is_active_without_a_manager(client):
    """With autostart (the default), both nodes of the cell are active at once."""
    with tempfile.TemporaryDirectory(prefix='wd_cell_autostart_') as tmp:
        cell = _start_cell(tmp, autostart=True)
        try:
            for node in NODE_NAMES.values():
                assert client.lifecycle_state(node, 30.0) == 'active', cell.output()
        finally:
            code = cell.close()
        assert code == 0 and 'Traceback' not in cell.output()
