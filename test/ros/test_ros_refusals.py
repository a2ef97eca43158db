"""Every refused parameter change named, over DDS; parameter files bounded before rcl reads them.

The nodes run as their console scripts; a second node (the test's client) asks for changes as
``ros2 param set`` and ``ros2 param load`` would (``~/set_parameters``) and as an atomic request
(``~/set_parameters_atomically``): limits raised, guards relaxed, a read-only parameter, a wrong
type, a value outside the declared range, an undeclared name, an invalid value, a request mixing
a safe and an unsafe change. Each refusal is named in the node's log (one line, with the value
asked and the reason) and in its diagnostics (per parameter), and counted once. A 50 MB
parameter file is refused by every node entry point before ``rclpy.init``, with one line naming
the file and the bound.
"""
import os
import time

from diagnostic_msgs.msg import DiagnosticArray
import pytest
from rclpy.parameter import Parameter

from ros_harness import diag_values, domain_id_for, node_command, NodeProcess, ros_env, TestClient
from test_faults import BASE, get_parameters
import test_identify_cli as two_arms
from wrench_distribution.processes import ChildProcess
from wrench_distribution.ros_args import MAX_PARAM_FILE_BYTES

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
UNDECLARED = 'is not declared'

#: twenty refused requests: ([(parameter, value)], atomic, what the reason says, unsafe)
DISTRIBUTOR_REQUESTS = [
    ([('force_limits', [600.0])], False, 'may only be lowered', True),
    ([('force_limits', [700.0])], False, 'may only be lowered', True),
    ([('torque_limits', [200.0])], False, 'may only be lowered', True),
    ([('desired_force_limit', 1500.0)], False, 'may only be lowered', True),
    ([('desired_torque_limit', 300.0)], False, 'may only be lowered', True),
    ([('internal_load_limit', 500.0)], False, 'may only be lowered', True),
    ([('on_limit', 'scale')], False, 'never to scale', True),
    ([('on_timeout', 'stop')], False, 'not to stop', True),
    ([('max_future', 0.0)], False, 'timeout guard', True),
    ([('torque_share', 1.5)], False, 'accepted: 0 to 1', False),
    ([('torque_share', 'half')], False, 'accepted: a double', False),
    ([('calibration_file', '/tmp/elsewhere.yaml')], False, 'read-only', False),
    ([('allow_unsafe_runtime_changes', True)], False, 'read-only', False),
    ([('effectors', ['a', 'b'])], False, 'read-only', False),
    ([('object_mass', 100.0)], False, 'read-only', False),
    ([('force_limitz', [1.0])], False, UNDECLARED, False),
    ([('internal_load_handles', ['warp(left,right)=1.0'])], False, 'internal_load_handles', False),
    ([('internal_load', [1e6])], False, 'internal_load', False),
    ([('feedback_kp', [-1.0])], False, 'feedback_kp', False),
    ([('force_limits', [40.0]), ('on_limit', 'scale')], True, 'never to scale', True),
]
ANALYZER_REQUESTS = [
    ([('sensor_biases', [1e6] + [0.0] * 11)], False, 'out of its bounds', False),
    ([('sensor_biases', [5000.0] + [0.0] * 11)], False, "sensor's range", False),
    ([('tare_samples', 0)], False, 'accepted: 1 to 100000', False),
    ([('tare_state', 'levitating')], False, 'tare_state', False),
    ([('sync_tolerance', 'soon')], False, 'accepted: a double', False),
    ([('calibration_file', '/tmp/elsewhere.yaml')], False, 'read-only', False),
    ([('tool_masses', [0.1, 0.1])], False, 'read-only', False),
    ([('sensor_bias', [0.0] * 12)], False, UNDECLARED, False),
]


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN, 'wd_refusals_client')
    yield c
    c.close()


def _asked(pairs) -> str:
    return ', '.join(f'{name}={value!r}' for name, value in pairs)


def _send(client: TestClient, node: str, pairs, atomic: bool, once: bool = False) -> list:
    """Ask for a change, sent again while unanswered (a server not yet matched loses it).

    ``once``: sent once (the servers are matched; a request the node counts must go once).
    """
    params = [Parameter(name, value=value) for name, value in pairs]
    again_after = 30.0 if once else 1.0
    if atomic:  # a node that starts on a loaded machine may take its time to serve
        return [client.set_parameters_atomically(node, params, timeout=30.0, again_after=again_after)]
    return client.set_parameters(node, params, timeout=30.0, again_after=again_after)


def _all_named(client: TestClient, proc: NodeProcess, node: str, status: str, requests: list,
               harmless: tuple) -> None:
    """Send every request; each refused, then named in the log and the diagnostics, counted once.

    ``harmless`` (a parameter and its value in force) is set first through both services, until
    each answers: then every counted request goes once.
    """
    diag = client.collect(DiagnosticArray, '/diagnostics')
    for atomic in (False, True):
        assert all(r.successful for r in _send(client, node, [harmless], atomic)), proc.output()[-2000:]
    for pairs, atomic, said, _ in requests:
        results = _send(client, node, pairs, atomic, once=True)
        assert not any(r.successful for r in results), (pairs, proc.output()[-2000:])
    unsafe = sum(request[3] for request in requests)
    counted = f'refused_parameter_changes={len(requests)}, refused_unsafe_changes={unsafe}'
    diag.clear()
    assert client.spin_until(lambda: diag_values(diag, status).get('counters') == counted, 10.0), \
        diag_values(diag, status)
    shown = diag_values(diag, status)
    assert proc.wait_for_output(f'(asked: {_asked(requests[-1][0])})', 10.0), proc.output()[-3000:]
    log = proc.output().splitlines()
    for pairs, _, said, _ in requests:
        asked = _asked(pairs)
        lines = [line for line in log if f'(asked: {asked})' in line]
        assert len(lines) == 1 and said in lines[0] and '[WARN]' in lines[0], (asked, lines)
        culprit = pairs[-1][0]
        key = 'refused.(undeclared)' if said == UNDECLARED else f'refused.{culprit}'
        assert asked in shown[key] and said in shown[key], (key, shown.get(key))


def test_twenty_refused_changes_from_another_node_are_each_named(client):
    names = sorted({name for pairs, _, said, _ in DISTRIBUTOR_REQUESTS for name, _ in pairs if said != UNDECLARED})
    with NodeProcess('distributor', dict(BASE, on_limit='hold'), DOMAIN) as proc:
        _send(client, 'wrench_distributor', [('publish_markers', False)], atomic=False)  # served: started
        before = get_parameters(client, 'wrench_distributor', names)
        _all_named(client, proc, 'wrench_distributor', 'wrench_distributor: limits', DISTRIBUTOR_REQUESTS,
                   ('publish_markers', False))
        assert get_parameters(client, 'wrench_distributor', names) == before  # nothing changed
    assert 'Traceback' not in proc.output()


def test_the_analyzers_refusals_are_named_in_its_parameters_status(client):
    with NodeProcess('analyzer', two_arms._params(diagnostics_period=0.2), DOMAIN) as proc:
        _all_named(client, proc, 'wrench_analyzer', 'wrench_analyzer: parameters', ANALYZER_REQUESTS,
                   ('sync_tolerance', 0.002))
    assert 'Traceback' not in proc.output()


def test_a_mixed_request_applies_per_parameter_and_an_atomic_one_is_refused_whole(client):
    """As docs/security.md says: ``~/set_parameters`` judges each parameter on its own."""
    with NodeProcess('distributor', BASE, DOMAIN) as proc:
        whole = client.set_parameters_atomically('wrench_distributor', [
            Parameter('force_limits', value=[70.0]), Parameter('torque_limits', value=[200.0])], timeout=30.0)
        assert not whole.successful and "'torque_limits'" in whole.reason, whole.reason
        names = ['force_limits', 'torque_limits']
        assert [v for _, v in get_parameters(client, 'wrench_distributor', names).values()] == \
            [BASE['force_limits'], BASE['torque_limits']]
        each = client.set_parameters('wrench_distributor', [
            Parameter('force_limits', value=[80.0]), Parameter('torque_limits', value=[200.0])])
        assert [r.successful for r in each] == [True, False], [r.reason for r in each]
        assert 'may only be lowered' in each[1].reason
        assert [v for _, v in get_parameters(client, 'wrench_distributor', names).values()] == \
            [[80.0], BASE['torque_limits']]
    assert 'Traceback' not in proc.output()


@pytest.mark.parametrize('script', ['distributor', 'analyzer', 'cell'])
def test_a_50_mb_parameter_file_is_refused_before_rcl_reads_it(tmp_path, script):
    big = tmp_path / 'big.yaml'
    with open(big, 'w') as f:  # a real file of parameters and comments, as rcl would have to parse
        f.write('/**:\n  ros__parameters:\n    effectors: [left, right]\n')
        f.write(('    # ' + 'x' * 90 + '\n') * (50 * 1024 * 1024 // 97 + 1))
    size = os.path.getsize(big)
    start = time.monotonic()
    with ChildProcess(node_command(script, [big]), ros_env(DOMAIN), log=str(tmp_path / 'log.txt')) as proc:
        code = proc.wait(60.0)
        text = proc.output()
    elapsed = time.monotonic() - start
    print(f'{script}: a {size / 2 ** 20:.1f} MiB parameter file refused in {elapsed:.2f} s (process start included)')
    assert code == 2, text
    lines = [line for line in text.splitlines() if str(big) in line]
    bound = f'bound of {MAX_PARAM_FILE_BYTES} bytes'
    assert len(lines) == 1 and f'{size} bytes' in lines[0] and bound in lines[0], text
    assert 'Traceback' not in text
