"""Through the nodes: the prescribed internal load is read back, element by element.

The distributor's commands are fed unchanged over DDS to the analyzer as its F/T inputs.
"""
import math
import time

from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from std_msgs.msg import Float64, Float64MultiArray

from ros_harness import domain_id_for, NodeProcess, stamped_wrench, TestClient
from wrench_distribution.core import Contact, DistributionOptions, LoadDistributor, ObjectModel
from wrench_distribution.core.messages import wrench_to_array

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
S2 = math.sqrt(0.5)
NAMES = ['left', 'right']
POSITIONS = [0.0, 0.3, 0.0, 0.0, -0.3, 0.0]
ORIENTATIONS = [S2, 0.0, 0.0, S2, -S2, 0.0, 0.0, S2]
COMMON = {
    'effectors': NAMES, 'contact_source': 'static', 'contact_positions': POSITIONS,
    'contact_orientations': ORIENTATIONS, 'object_com': [0.02, 0.05, -0.1], 'object_frame': 'object',
    'torque_share': 0.3,
}


def reference() -> LoadDistributor:
    """Build the same grasp in the core, for the basis names and order."""
    contacts = [Contact(n, 'rigid', POSITIONS[3 * i:3 * i + 3], ORIENTATIONS[4 * i:4 * i + 4])
                for i, n in enumerate(NAMES)]
    return LoadDistributor(contacts, ObjectModel(com=COMMON['object_com']), DistributionOptions(torque_share=0.3))


def test_every_element_commanded_is_read_back_over_dds():
    grasp = reference()
    lam = np.array([15.0, 1.0, -0.4, 0.3, 2.0, -1.5])  # every element of the dual-arm basis
    handles = [f'{name}={float(value)!r}' for name, value in zip(grasp.basis_names, lam)]
    distributor = dict(COMMON, internal_load_handles=handles, input_timeout=0.0)
    analyzer = dict(COMMON, ft_topics=[f'{n}/wrench_command' for n in NAMES], max_age=0.0,
                    sync_tolerance=0.0, input_qos='reliable', qos_depth=100)
    client = TestClient(DOMAIN)
    try:
        with NodeProcess('distributor', distributor, DOMAIN) as dist_proc, \
                NodeProcess('analyzer', analyzer, DOMAIN) as ana_proc:
            desired = client.publisher(WrenchStamped, 'desired_wrench')
            readings = client.collect(Float64MultiArray, 'measured/internal_load')
            internal = client.collect(WrenchStamped, 'left/wrench_internal')
            norms = client.collect(Float64, 'measured/internal_load_norm')
            invariant = client.collect(Float64, 'measured/invariant_norm')
            assert client.wait_matched(publishers=[desired], topics=['measured/internal_load']), \
                dist_proc.output() + ana_proc.output()
            # zero, tiny and large resultant torques, in several directions
            torques = [np.zeros(3), [1e-9, 0, 0], [0, 1e-6, 0], [0.3, -0.2, 0.1], [0, 0, 5.0]]
            for attempt in range(100):  # bounded: until discovery is complete and samples flow
                torque = torques[attempt % len(torques)]
                desired.publish(stamped_wrench(np.r_[1.0, -2.0, 49.05, torque], time.time_ns(), 'object'))
                client.spin_for(0.05)
                if len(readings) >= 2 * len(torques):
                    break
            assert client.spin_until(lambda: len(readings) >= len(torques), 5.0), \
                dist_proc.output() + ana_proc.output()
            assert readings[0].layout.dim[0].label == ';'.join(grasp.basis_names)
            for message in readings:
                np.testing.assert_allclose(message.data, lam, rtol=1e-9, atol=1e-9)
            # the per-contact wrench of that load and its norm, under the core's names
            expected = grasp.synthesize(np.zeros(6), lam)
            assert client.spin_until(lambda: internal and norms and invariant, 5.0)
            # with a zero resultant the commands are E lambda alone (contact frame)
            np.testing.assert_allclose(wrench_to_array(internal[-1].wrench), expected.wrench_contact[0], atol=1e-9)
            measured = grasp.analyze(expected.wrench_contact)
            np.testing.assert_allclose(norms[-1].data, measured.internal_load_norm, rtol=1e-9)
            # each invariant norm published is the core's for one of the resultants sent
            sent = [grasp.analyze(grasp.synthesize(np.r_[1.0, -2.0, 49.05, torque], lam).wrench_contact)
                    .invariant_norm for torque in torques]
            for message in invariant:
                assert min(abs(message.data - value) for value in sent) <= 1e-9 * message.data, \
                    (message.data, sent)
    finally:
        client.close()
