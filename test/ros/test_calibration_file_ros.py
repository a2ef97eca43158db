"""The calibration file over DDS: fixed at start-up, written whole and only where configured, refused when planted.

The nodes run as their console scripts; a second node (the test's client) tries what an attacker
on the same domain could: move ``calibration_file``, set a bias of 1e6 N, save through a planted
link. Hostile files (a link, a 1e6 N bias, a limit, an unsafe switch, the file given to rcl as a
parameter file) keep the nodes from starting, with a message naming the cause; a calibrated
distributor and analyzer show the file's values as their parameters.
"""
from __future__ import annotations

import os

import pytest
from rclpy.parameter import Parameter
import yaml

from ros_harness import domain_id_for, NodeProcess, TestClient
import test_calibration_ros as services
import test_identify_cli as two_arms

pytestmark = pytest.mark.ros

CALIBRATION = {'tool_masses': [0.9, 0.6], 'sensor_biases': [1.5, -2.0, 0.8, 0.05, -0.03, 0.02,
                                                            -1.0, 0.5, 1.2, -0.04, 0.06, 0.01],
               'object_mass': 3.2, 'object_com': [0.02, -0.01, 0.05]}
DISTRIBUTOR = {'effectors': two_arms.NAMES, 'contact_source': 'static',
               'contact_positions': two_arms.CONTACTS[:, :3].ravel().tolist(),
               'contact_orientations': two_arms.CONTACTS[:, 3:].ravel().tolist()}


def _fragment(analyzer: dict, distributor: dict = None) -> dict:
    shared = {k: list(v) if isinstance(v, list) else v for k, v in analyzer.items()
              if k in ('object_mass', 'object_com')}  # copies: rcl refuses YAML aliases
    return {'/**/wrench_analyzer': {'ros__parameters': analyzer},
            '/**/wrench_distributor': {'ros__parameters': distributor if distributor is not None else shared}}


def _listing(directory) -> dict:
    return {name: (os.path.islink(os.path.join(directory, name)), open(os.path.join(directory, name)).read())
            for name in sorted(os.listdir(directory))}


def test_calibration_file_is_fixed_and_a_save_writes_only_there_never_through_a_link(tmp_path):
    kept = tmp_path / 'kept'
    kept.mkdir()
    saved = kept / 'calibration.yaml'
    victim = tmp_path / 'victim.yaml'
    victim.write_text('wrench_distributor:\n  ros__parameters:\n    force_limits: [150.0]\n')
    params = two_arms._params(calibration_file=str(saved))
    client = TestClient(domain_id_for(__name__), 'wd_calibration_file_client')
    with NodeProcess('analyzer', params, domain_id_for(__name__)) as node:
        try:
            moved = client.set_parameters('wrench_analyzer', [
                Parameter('calibration_file', Parameter.Type.STRING, str(victim))], timeout=20.0)[0]
            assert not moved.successful and 'read-only' in moved.reason, moved.reason
            for bias, named in ((1e6, 'out of its bounds (<= 100000)'), (5000.0, "exceeds its sensor's range 1000 N")):
                refused = client.set_parameters('wrench_analyzer', [
                    Parameter('sensor_biases', Parameter.Type.DOUBLE_ARRAY, [bias] + [0.0] * 11)])[0]
                assert not refused.successful and "'sensor_biases'" in refused.reason and named in refused.reason
            response = services._call(client, 'save_calibration')
            assert response.success and str(saved) in response.message, response.message
            assert set(os.listdir(kept)) == {'calibration.yaml'}
            assert yaml.safe_load(saved.read_text())['/**/wrench_analyzer']['ros__parameters']['sensor_biases']
            saved.unlink()
            saved.symlink_to(victim)                                            # planted
            before = (_listing(kept), victim.read_text())
            response = services._call(client, 'save_calibration')
            assert not response.success and 'symbolic link' in response.message and 'nothing written' in \
                response.message, response.message
            assert (_listing(kept), victim.read_text()) == before
        finally:
            client.close()
        assert node.poll() is None, node.output()


HOSTILE = {
    'link': ('analyzer', None, 'symbolic link'),
    'a 1e6 N bias': ('analyzer', _fragment({**CALIBRATION, 'sensor_biases': [1e6] + [0.0] * 11}),
                     "'sensor_biases': entry 0 (1e+06) is out of its bounds"),
    'a 5 kN bias': ('analyzer', _fragment({**CALIBRATION, 'sensor_biases': [5000.0] + [0.0] * 11}),
                    "force bias of 'left' [5000, 0, 0] N exceeds its sensor's range"),
    'a tonne of tool': ('analyzer', _fragment({**CALIBRATION, 'tool_masses': [1e6, 0.5]}), "'tool_masses'"),
    'a limit': ('distributor', _fragment(CALIBRATION, {'object_mass': 3.2, 'force_limits': [1e9]}),
                "'force_limits' is not a calibration value of the distributor"),
    'an unsafe switch': ('distributor', _fragment(CALIBRATION, {'allow_unsafe_runtime_changes': True}),
                         "'allow_unsafe_runtime_changes' is not a calibration value"),
    'a scaled limit': ('distributor', _fragment(CALIBRATION, {'on_limit': 'scale'}), "'on_limit'"),
    'also a parameter file': ('analyzer', _fragment(CALIBRATION), 'is also given as --params-file'),
}


@pytest.mark.parametrize('case', sorted(HOSTILE))
def test_a_hostile_calibration_file_keeps_the_node_from_starting(tmp_path, case):
    kind, document, named = HOSTILE[case]
    path = tmp_path / 'calibration.yaml'
    if document is None:
        (tmp_path / 'elsewhere.yaml').write_text(yaml.safe_dump(_fragment(CALIBRATION)))
        path.symlink_to(tmp_path / 'elsewhere.yaml')
    else:
        path.write_text(yaml.safe_dump(document))
    params = {**(two_arms._params() if kind == 'analyzer' else DISTRIBUTOR), 'calibration_file': str(path)}
    extra = ['--params-file', str(path)] if case == 'also a parameter file' else []
    with NodeProcess(kind, params, domain_id_for(__name__), extra_args=extra) as node:
        code = node.wait(30.0)
        text = node.output()
    assert code == 2, text
    assert 'invalid configuration' in text and 'calibration_file' in text and named in text, text
    assert 'Traceback' not in text


def test_both_nodes_run_with_their_calibration_values(tmp_path):
    path = tmp_path / 'calibration.yaml'
    path.write_text(yaml.safe_dump(_fragment(CALIBRATION)))
    client = TestClient(domain_id_for(__name__), 'wd_calibration_values_client')
    try:
        with NodeProcess('distributor', {**DISTRIBUTOR, 'object_mass': 1.0, 'calibration_file': str(path)},
                         domain_id_for(__name__)) as node:
            values = _parameters(client, 'wrench_distributor', ['object_mass', 'object_com', 'calibration_file'])
            assert values == [3.2, [0.02, -0.01, 0.05], str(path)], node.output()
            assert "calibration_file '" in node.output() and 'took object_' in node.output(), node.output()
        with NodeProcess('analyzer', two_arms._params(calibration_file=str(path)), domain_id_for(__name__)) as node:
            values = _parameters(client, 'wrench_analyzer', ['tool_masses', 'sensor_biases', 'object_mass'])
            assert values == [CALIBRATION['tool_masses'], CALIBRATION['sensor_biases'], 3.2], node.output()
    finally:
        client.close()


def _parameters(client, node: str, names: list) -> list:
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.srv import GetParameters
    cli = client.node.create_client(GetParameters, f'/{node}/get_parameters')
    try:
        assert cli.wait_for_service(timeout_sec=20.0)
        for _ in range(3):  # a request sent as the service is discovered may go unanswered
            future = cli.call_async(GetParameters.Request(names=names))
            client.executor.spin_until_future_complete(future, timeout_sec=5.0)
            if future.done() and future.result() is not None:
                break
        values = [Parameter.from_parameter_msg(ParameterMsg(name=name, value=value)).value
                  for name, value in zip(names, future.result().values)]
        return [v if isinstance(v, (str, float, int)) else list(v) for v in values]
    finally:
        client.node.destroy_client(cli)
