"""Both nodes in one process (``python -m wrench_distribution.cell``): each does its job over DDS.

One parameter file with a section per node name; the distributor's commands reproduce the
desired wrench (the resultant summed here by hand: ``F = f_l + f_r``,
``T = t_l + t_r + p_l x f_l + p_r x f_r``, contact frames aligned with the object frame,
CoM at the origin), the analyzer's ``object_wrench`` is the sum of two F/T readings taken
at the contacts (the same sum), and SIGINT ends the process with exit code 0.
"""
import json
import os
import sys
import tempfile
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from std_msgs.msg import Float64MultiArray
import yaml

from ros_harness import (diag_values, domain_id_for, resultant_at, ros_env, stamped_wrench, TestClient,
                         wrench_values)
from wrench_distribution.processes import ChildProcess

pytestmark = [pytest.mark.ros]

DOMAIN = domain_id_for(__name__)
POSITIONS = np.array([[0.0, 0.3, 0.0], [0.0, -0.3, 0.0]])
COMMON = {'effectors': ['left', 'right'], 'contact_source': 'static', 'object_frame': 'object',
          'contact_positions': POSITIONS.ravel().tolist()}


def resultant(left, right) -> np.ndarray:
    """Resultant about the origin of two wrenches applied at the contacts (by hand)."""
    return resultant_at(POSITIONS, [left, right])


def start_cell(distributor: dict, executor: str = 'events') -> ChildProcess:
    """Start the cell on one parameter file (the distributor's extra parameters given).

    :return: the running cell.
    """
    tmp = tempfile.mkdtemp(prefix='wd_cell_')
    params = os.path.join(tmp, 'params.yaml')
    with open(params, 'w') as f:
        yaml.safe_dump(json.loads(json.dumps({  # no shared list: rcl refuses YAML aliases
            'wrench_distributor': {'ros__parameters': dict(COMMON, input_timeout=0.0,
                                                           **distributor)},
            'wrench_analyzer': {'ros__parameters': dict(COMMON, max_age=0.0)}})), f)
    return ChildProcess([sys.executable, '-m', 'wrench_distribution.cell', '--ros-args', '--params-file', params],
                        ros_env(DOMAIN, WRENCH_DISTRIBUTION_EXECUTOR=executor), log=os.path.join(tmp, 'log.txt'))


def test_distributor_and_analyzer_share_one_process():
    cell = start_cell({})
    client = TestClient(DOMAIN)
    try:
        commands = {e: client.collect(WrenchStamped, f'{e}/wrench_command') for e in ('left', 'right')}
        measured = client.collect(WrenchStamped, 'object_wrench')
        desired_pub = client.publisher(WrenchStamped, 'desired_wrench')
        ft_pubs = [client.publisher(WrenchStamped, f'{e}/ft_sensor') for e in ('left', 'right')]
        assert client.wait_matched(publishers=[desired_pub] + ft_pubs,
                                   topics=['left/wrench_command', 'object_wrench'], timeout=30.0), \
            cell.output()
        desired = [2.0, -1.0, 15.0, 0.3, -0.2, 0.1]
        readings = ([1.0, 12.0, 4.0, 0.1, 0.0, 0.2], [-0.5, -11.0, 5.0, 0.0, 0.3, -0.1])
        end = time.monotonic() + 10.0
        while time.monotonic() < end and not (commands['right'] and measured):
            now = time.time_ns()
            desired_pub.publish(stamped_wrench(desired, now, 'object'))
            for pub, reading in zip(ft_pubs, readings):
                pub.publish(stamped_wrench(reading, now))
            client.spin_for(0.05)
        assert commands['left'] and commands['right'] and measured, cell.output()
        np.testing.assert_allclose(resultant(wrench_values(commands['left'][-1]),
                                             wrench_values(commands['right'][-1])),
                                   desired, atol=1e-9)
        np.testing.assert_allclose(wrench_values(measured[-1]), resultant(*readings), atol=1e-9)
    finally:
        client.close()
        code = cell.close()
    output = cell.output()
    assert code == 0 and 'Traceback' not in output, output


def _subscribers(client: TestClient, topic: str) -> set:
    return {info.node_name for info in client.node.get_subscriptions_info_by_topic(topic)}


@pytest.mark.parametrize('feedback_topic, executor', [
    ('measured/internal_load', 'events'), ('elsewhere/internal_load', 'events'),
    ('measured/internal_load', 'multi')])
def test_the_distributor_takes_the_analyzers_measurement_in_the_process(feedback_topic, executor):
    """On the analyzer's own topic the measurement goes straight across, as the message would.

    The distributor's feedback status shows, per basis element, the measurement it took; it
    is the analyzer's read-out of the same F/T readings, equal to the ``measured/internal_load``
    message a subscriber of the graph receives. Handed over, the distributor holds no
    subscription of that topic. On another topic nothing is handed over (the subscription
    stays, no measurement comes), nor on the multi-threaded executor, where the message keeps
    the distributor's callbacks one at a time (the loop then closes over the subscription).
    """
    closes = feedback_topic == 'measured/internal_load'
    direct = closes and executor != 'multi'
    cell = start_cell({'internal_load_feedback': True, 'feedback_topic': feedback_topic,
                       'internal_load': [10.0, 0.0, 0.0, 0.0, 0.0, 0.0]}, executor)
    client = TestClient(DOMAIN)
    try:
        diags = client.collect(DiagnosticArray, '/diagnostics')
        messages = client.collect(Float64MultiArray, 'measured/internal_load')
        desired_pub = client.publisher(WrenchStamped, 'desired_wrench')
        ft_pubs = [client.publisher(WrenchStamped, f'{e}/ft_sensor') for e in ('left', 'right')]
        assert client.wait_matched(publishers=[desired_pub] + ft_pubs,
                                   topics=['measured/internal_load'], timeout=30.0), \
            cell.output()
        readings = ([1.0, 12.0, 4.0, 0.1, 0.0, 0.2], [-0.5, -11.0, 5.0, 0.0, 0.3, -0.1])

        def status() -> dict:
            return diag_values(diags, 'wrench_distributor: feedback')

        def seen() -> bool:  # on another topic the loop never closes: its status is enough
            return bool(messages) and (status().get('state', '').startswith('closed loop') if closes
                                       else bool(status()))
        noise = np.random.default_rng(7)  # a real sensor's noise: bit-identical readings are a frozen one
        end = time.monotonic() + 30.0  # bounded by what a loaded machine needs, ended when seen
        while time.monotonic() < end and not seen():
            now = time.time_ns()
            desired_pub.publish(stamped_wrench([0.0, 0.0, 15.0, 0.0, 0.0, 0.0], now, 'object'))
            for pub, reading in zip(ft_pubs, readings):
                pub.publish(stamped_wrench(np.add(reading, noise.normal(0.0, 0.01, 6)), now))
            client.spin_for(0.05)
        shown = status()  # as it was seen: the measurement it names is one of the messages
        client.spin_for(0.5)  # the messages still on their way
        output = cell.output()
        assert messages, output
        names = messages[-1].layout.dim[0].label.split(';')
        assert ('taken from wrench_analyzer in this process' in output) == direct, output
        if not direct:  # the graph shows the subscription once discovery has carried it here
            client.spin_until(lambda: 'wrench_distributor' in _subscribers(
                client, '/' + feedback_topic), 5.0)
        assert ('wrench_distributor' in _subscribers(client, '/' + feedback_topic)) != direct
        if closes:
            assert shown['state'].startswith('closed loop'), (shown, output)
            measured = [float(shown[name].split('measured ')[1].split(',')[0]) for name in names]
            assert any(np.allclose(measured, m.data, rtol=1e-5, atol=1e-9) for m in messages), \
                (measured, [list(m.data) for m in messages[-5:]])
            assert abs(messages[-1].data[0]) > 1.0  # the readings squeeze: a real figure
        else:
            assert not shown.get('state', '').startswith('closed loop'), shown
    finally:
        client.close()
        code = cell.close()
    assert code == 0 and 'Traceback' not in cell.output()
