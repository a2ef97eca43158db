"""Nodes judge their parameter file as check-config does: over DDS, in subprocesses.

A misspelt parameter stops the node at start-up with the nearest declared names (exit 2,
no traceback); ``allow_unknown_parameters`` turns it into a warning (test_faults.py). A list
that mixes integers and doubles is refused by rcl's parser before any node exists: the node
says so with the fix (exit 2, no traceback). Integers where doubles are declared
(``object_mass: 4``, ``contact_positions: [0, 1, ...]``) start the node, which then reports
them as doubles and distributes with them: the commands reproduce the desired wrench, summed
here by hand about the object frame origin.
"""
import time

from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from rcl_interfaces.msg import ParameterType

from ros_harness import domain_id_for, NodeProcess, stamped_wrench, TestClient
from test_faults import get_parameters
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.core.messages import wrench_to_array

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
NAMES = ['left', 'right']
#: contacts at y = +1 and y = -1, contact axes = object axes; every number an integer
INTEGERS = {'effectors': NAMES, 'contact_source': 'static', 'object_frame': 'object',
            'contact_positions': [0, 1, 0, 0, -1, 0], 'object_com': [0, 0, 0],
            'object_mass': 4, 'input_timeout': 0}


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN, 'wd_judge_client')
    yield c
    c.close()


def _refused(name: str, params: dict) -> str:
    with NodeProcess(name, params, DOMAIN) as proc:
        code = proc.wait(30.0)
        out = proc.output()
    assert code == 2, out
    assert 'Traceback' not in out and '[FATAL]' not in out, out
    return out


@pytest.mark.parametrize('name,params,misspelt,meant', [
    ('distributor', dict(INTEGERS, object_mas=4.0), 'object_mas', 'object_mass'),
    ('analyzer', dict(INTEGERS, tool_mass=[0.9, 0.9]), 'tool_mass', 'tool_masses'),
])
def test_a_misspelt_parameter_stops_the_node_with_did_you_mean(name, params, misspelt, meant):
    out = _refused(name, params)
    assert f"'{misspelt}' (did you mean '{meant}'" in out, out
    assert 'allow_unknown_parameters' in out


def test_a_mixed_list_is_refused_by_rcl_with_the_fix():
    out = _refused('distributor', dict(INTEGERS, contact_positions=[0, 1.0, 0, 0, -1.0, 0]))
    assert 'Sequence should be of same type' in out and 'write 0.0, not 0' in out, out
    assert 'check-config' in out


def _commands(client: TestClient, wrench: list) -> np.ndarray:
    pub = client.publisher(WrenchStamped, 'desired_wrench')
    got = {n: client.collect(WrenchStamped, f'{n}/wrench_command') for n in NAMES}
    assert client.wait_matched(publishers=[pub], topics=[f'{n}/wrench_command' for n in NAMES])
    end, stamp = time.monotonic() + 15.0, 5_000_000_000
    while time.monotonic() < end:
        stamp += 1_000_000
        pub.publish(stamped_wrench(wrench, stamp, 'object'))

        def arrived(s=stamp) -> bool:
            return all(any(stamp_to_ns(m.header.stamp) == s for m in v) for v in got.values())
        if client.spin_until(arrived, 0.5):
            return np.array([wrench_to_array(next(m for m in got[n] if stamp_to_ns(
                m.header.stamp) == stamp).wrench) for n in NAMES])
    raise AssertionError('no commands')


def test_integers_for_doubles_start_the_node_and_it_distributes(client):
    with NodeProcess('distributor', INTEGERS, DOMAIN) as proc:
        wrench = [1.0, 2.0, 10.0, 1.5, -0.5, 0.25]
        commands = _commands(client, wrench)
        reported = get_parameters(client, 'wrench_distributor',
                                  ['object_mass', 'contact_positions'])
    assert reported['object_mass'] == (ParameterType.PARAMETER_DOUBLE, 4.0)
    kind, positions = reported['contact_positions']
    assert kind == ParameterType.PARAMETER_DOUBLE_ARRAY and list(positions) == [0, 1, 0, 0, -1, 0]
    force = commands[:, :3].sum(axis=0)
    torque = commands[:, 3:].sum(axis=0) + sum(
        np.cross(p, f) for p, f in zip([[0.0, 1.0, 0.0], [0.0, -1.0, 0.0]], commands[:, :3]))
    np.testing.assert_allclose(np.concatenate([force, torque]), wrench, atol=1e-9)
    assert 'Traceback' not in proc.output()


def test_a_file_with_the_controllers_sections_starts_the_analyzer(tmp_path):
    """``gravity_compensation.CoG.force`` as one double (ros2_controllers): no traceback at start.

    The analyzer compares its tool masses with the controller's gravity compensation when
    its file holds both (check-config's findings, logged at start-up); ``CoG.force`` is one
    double, not an array, and must be read as such.
    """
    import yaml
    root = __file__.rsplit('/test/', 1)[0]
    with open(f'{root}/config/dual_arm.yaml') as f:
        doc = yaml.safe_load(f)
    doc['left_admittance_controller'] = {'ros__parameters': {'gravity_compensation': {
        'frame': {'id': 'left_tool0'}, 'CoG': {'pos': [0.0, 0.0, 0.04], 'force': 4.9}}}}
    path = tmp_path / 'cell.yaml'
    path.write_text(yaml.safe_dump(doc))
    with NodeProcess('analyzer', {}, DOMAIN, extra_args=['--params-file', str(path)]) as proc:
        proc.wait_for_output('analysing', 20.0)
        out = proc.output()
        assert proc.poll() is None, out
    assert 'analysing' in out and 'Traceback' not in out, out
    assert 'tools: tool_masses (left) / left_admittance_controller.gravity_compensation' in out, out
