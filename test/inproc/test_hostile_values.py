"""The values an attacker or a slip would plant are refused by the node and by check-config alike.

A tool of 1e6 kg, an object of 1e9 kg, a bias of 1e300 N or 1e6 N (or 5 kN, within the schema's
bound but beyond the sensor's default range of 1000 N), a tool's centre of mass 40 m from its
sensor, a number written as a string (``"5.0"``) or beyond a double (``1e400``): each in a
parameter file and each in a calibration file. The node is started as its process starts it
(:func:`test_config_agreement.node_refusal`: the parameter files judged before ``rclpy.init``,
rcl, then the node with its ``calibration_file``); ``wrench-distribution check-config`` judges
the same file, and the parameter file with the calibration (``--calibration``). Both refuse, and
both name the value. The distributor's calibration file the same, with what it must never carry
(a raised limit, the unsafe switch, scaling at the limit) beside a calibration value.
"""
import contextlib
import io
import json

import pytest
import yaml

from test_config_agreement import node_refusal
import test_identify_cli as two_arms
from wrench_distribution import cli

pytestmark = [pytest.mark.ros, pytest.mark.inproc]

HOSTILE = {  # what is planted, the parameter named
    'a tool of 1e6 kg': ({'tool_masses': [1e6, 0.8]}, 'tool_masses'),
    'an object of 1e9 kg': ({'object_mass': 1e9}, 'object_mass'),
    'a bias of 1e300 N': ({'sensor_biases': [1e300] + [0.0] * 11}, 'sensor_biases'),
    'a bias of 1e6 N': ({'sensor_biases': [1e6] + [0.0] * 11}, 'sensor_biases'),
    'a bias beyond its sensor': ({'sensor_biases': [0.0] * 6 + [0.0, 5000.0] + [0.0] * 4}, 'sensor_biases'),
    'a tool 40 m out': ({'tool_coms': [0.0, 0.0, 40.0, 0.0, 0.0, 0.04]}, 'tool_coms'),
    'a string for a number': ({'object_mass': '5.0'}, 'object_mass'),
    'beyond a double': ({'object_mass': 'INF'}, 'object_mass'),
}


def _write(path, sections: dict) -> str:
    """Write sections as YAML; ``'INF'`` becomes ``1e400`` as typed (rcl reads it as infinity)."""
    text = yaml.safe_dump(sections).replace("'INF'", '1e400')
    path.write_text(text)
    return str(path)


def check_config(*argv: str) -> str:
    """Run ``wrench-distribution check-config ARGV`` here; return what it printed (an error found)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = cli.main(['check-config', *argv])
    assert status == 2, out.getvalue()
    return json.dumps(json.loads(out.getvalue()))


@pytest.mark.parametrize('case', sorted(HOSTILE))
def test_in_a_parameter_file(tmp_path, case):
    values, named = HOSTILE[case]
    path = _write(tmp_path / 'params.yaml', {'/**/wrench_analyzer': {'ros__parameters': two_arms._params(**values)}})
    refusal = node_refusal(path, 'wrench_analyzer', offset=0)
    assert refusal is not None and named in refusal
    assert named in check_config(path)


@pytest.mark.parametrize('case', sorted(HOSTILE))
def test_in_a_calibration_file(tmp_path, case):
    values, named = HOSTILE[case]
    calibration = _write(tmp_path / 'calibration.yaml', {'/**/wrench_analyzer': {'ros__parameters': values}})
    path = _write(tmp_path / 'params.yaml', {'/**/wrench_analyzer': {
        'ros__parameters': two_arms._params(calibration_file=calibration)}})
    refusal = node_refusal(path, 'wrench_analyzer', offset=0)
    assert refusal is not None and named in refusal and 'calibration_file' in refusal
    assert named in check_config(calibration)
    assert named in check_config(path, '--calibration', calibration)
    assert named in check_config(path, '--calibration', calibration)


DISTRIBUTOR = {'effectors': two_arms.NAMES, 'contact_source': 'static',
               'contact_positions': two_arms.CONTACTS[:, :3].ravel().tolist(),
               'contact_orientations': two_arms.CONTACTS[:, 3:].ravel().tolist()}
NOT_CALIBRATION = {  # what a calibration file must not carry to the distributor, the parameter named
    'a raised limit': ({'force_limits': [1e9]}, 'force_limits'),
    'the unsafe switch': ({'allow_unsafe_runtime_changes': True}, 'allow_unsafe_runtime_changes'),
    'scaling at the limit': ({'on_limit': 'scale'}, 'on_limit'),
}


@pytest.mark.parametrize('case', sorted([c for c in HOSTILE if HOSTILE[c][1] == 'object_mass'] + list(NOT_CALIBRATION)))
def test_in_the_distributors_calibration_file(tmp_path, case):
    values, named = HOSTILE.get(case) or NOT_CALIBRATION[case]
    calibration = _write(tmp_path / 'calibration.yaml', {'/**/wrench_distributor': {
        'ros__parameters': {'object_mass': 3.2, **values}}})
    path = _write(tmp_path / 'params.yaml', {'/**/wrench_distributor': {
        'ros__parameters': {**DISTRIBUTOR, 'calibration_file': calibration}}})
    refusal = node_refusal(path, 'wrench_distributor', offset=0)
    assert refusal is not None and named in refusal and 'calibration_file' in refusal
    assert named in check_config(calibration)
    assert named in check_config(path, '--calibration', calibration)
