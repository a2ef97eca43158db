"""The analyzer node follows the distributor's contact weights, in this process (docs/legs_and_hands.md).

A trunk on four point feet; the forces are written here from statics (three feet at whose
centroid the centre of mass lies carry a third of its weight each), so the expected read-out
never comes from the code under test.
"""
from geometry_msgs.msg import Pose, PoseArray
import numpy as np
import pytest
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from inproc import InProcessNode, ros_context
from legs_fixtures import FEET, FOOT_POSITIONS, GRAVITY, TRUNK_MASS
from ros_harness import stamped_wrench
from wrench_distribution.analyzer_node import AnalyzerNode
from wrench_distribution.config import ANALYZER_PARAMS
from wrench_distribution.core.messages import wrench_to_array
from wrench_distribution.ros.diagnostics import level_of, WARN

pytestmark = [pytest.mark.ros, pytest.mark.inproc]

DIAG_PERIOD = 0.25
COM = FOOT_POSITIONS[1:].mean(axis=0) * [1, 1, 0]   # the centroid of rf, lh, rh
THIRD = TRUNK_MASS * GRAVITY / 3
FINDINGS = ('did not lift', 'early touchdown', 'lost contact', 'did not touch down')


def params() -> dict:
    return {'effectors': list(FEET), 'contact_types': ['point'] * 4, 'contact_source': 'static',
            'contact_positions': FOOT_POSITIONS.ravel().tolist(),
            'contact_orientations': [0.0, 0.0, 0.0, 1.0] * 4, 'object_com': COM.tolist(),
            'object_frame': 'object', 'diagnostics_period': DIAG_PERIOD, 'sync_tolerance': 0.005,
            'max_age': 0.0, 'contact_loaded_force': 2.0}


def weights_msg(labels, values) -> Float64MultiArray:
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=';'.join(labels), size=len(values), stride=len(values))]
    msg.data = [float(v) for v in values]
    return msg


def analyse(node: InProcessNode, forces: np.ndarray, stamp: int) -> dict:
    node.clear()
    for name, force in zip(FEET, forces):
        node.deliver(f'{name}/ft_sensor', stamped_wrench(np.concatenate([force, np.zeros(3)]), stamp, ''))
    obj = node.last('object_wrench')
    assert obj is not None
    return {'object': wrench_to_array(obj.wrench),
            'man': np.array([wrench_to_array(node.last(f'{e}/wrench_manipulating').wrench) for e in FEET]),
            'basis': node.last('measured/internal_load').layout.dim[0].label.split(';'),
            'lambda': np.asarray(node.last('measured/internal_load').data)}


def diagnose(node: InProcessNode) -> dict:
    assert node.fire_timers(DIAG_PERIOD) == 1
    return {st.name.split(': ', 1)[1]: st for st in node.last('/diagnostics').status}


def test_the_analyzer_reads_out_on_the_feet_the_distributor_keeps():
    with ros_context() as ctx, InProcessNode(AnalyzerNode, ctx, params(), ANALYZER_PARAMS) as node:
        stance = np.array([[0.0, 0.0, 50.0], [0.0, 0.0, 40.0], [0.0, 0.0, 60.0], [0.0, 0.0, 46.2]])
        out = analyse(node, stance, 1_000_000_000)
        assert any('lf' in name for name in out['basis'])
        np.testing.assert_allclose(out['object'][:3], stance.sum(0), atol=1e-9)
        node.deliver('contact_weights/actual', weights_msg(FEET, [0.0, 1.0, 1.0, 1.0]))
        lifted = np.array([[0.0, 0.0, 0.3], [0.0, 0.0, THIRD], [0.0, 0.0, THIRD], [0.0, 0.0, THIRD]])
        out = analyse(node, lifted, 1_002_000_000)
        np.testing.assert_allclose(out['object'], [0, 0, TRUNK_MASS * GRAVITY, 0, 0, 0], atol=1e-9)
        assert not out['man'][0].any()                          # released: out of the read-out
        assert out['basis'] and not any('lf' in name for name in out['basis'])
        np.testing.assert_allclose(out['lambda'], 0.0, atol=1e-9)
        status = diagnose(node)['contacts']
        values = {kv.key: kv.value for st in diagnose(node).values() for kv in st.values}
        assert values['released'] == 'lf' and values['measured_contact_states'].startswith('lf: free')
        # the basis change is reported (WARN), no contact state is
        assert not any(word in status.message for word in FINDINGS), status.message
        # the foot touches down while its weight is still 0
        analyse(node, lifted + [[0.0, 0.0, 35.0], [0, 0, 0], [0, 0, 0], [0, 0, 0]], 1_004_000_000)
        status = diagnose(node)['contacts']
        assert level_of(status) == WARN and "contact 'lf' early touchdown" in status.message
        # bad weights are refused with a message; the weights in force stay
        node.deliver('contact_weights/actual', weights_msg(['lf', 'xx'], [1.0, 1.0]))
        status = diagnose(node)['contacts']
        values = {kv.key: kv.value for st in diagnose(node).values() for kv in st.values}
        assert 'contact weights not followed' in values['last_refused_weights']
        assert values['released'] == 'lf'


def pose_array(positions: np.ndarray, stamp_ns: int) -> PoseArray:
    msg = PoseArray()
    msg.header.frame_id = 'object'
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    for position in positions:
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = (float(v) for v in position)
        pose.orientation.w = 1.0 if np.isfinite(position).all() else float('nan')
        msg.poses.append(pose)
    return msg


def test_a_released_foot_may_have_no_pose_a_carrying_one_may_not():
    """Poses from a topic: lf's NaN pose, released, reads out as the three others.

    Following lf back to weight 1 without its pose is refused, named; with a pose it is followed,
    and a later sample whose pose of lf is NaN is dropped, the reason naming the foot.
    """
    topic = dict(params(), contact_source='topic', contact_timeout=0.0)
    for name in ('contact_positions', 'contact_orientations'):
        topic.pop(name)
    lifted = np.array([[0.0, 0.0, 0.3], [0.0, 0.0, THIRD], [0.0, 0.0, THIRD], [0.0, 0.0, THIRD]])
    blind = FOOT_POSITIONS.copy()
    blind[0] = np.nan
    with ros_context() as ctx, InProcessNode(AnalyzerNode, ctx, topic, ANALYZER_PARAMS) as node:
        node.deliver('contact_weights/actual', weights_msg(FEET, [0.0, 1.0, 1.0, 1.0]))
        node.deliver('contact_poses', pose_array(blind, 900_000_000))
        out = analyse(node, lifted, 1_000_000_000)
        assert np.isfinite(out['object']).all() and np.isfinite(out['lambda']).all()
        np.testing.assert_allclose(out['object'], [0, 0, TRUNK_MASS * GRAVITY, 0, 0, 0], atol=1e-9)
        assert not out['man'][0].any()
        node.deliver('contact_weights/actual', weights_msg(['lf'], [1.0]))
        values = {kv.key: kv.value for st in diagnose(node).values() for kv in st.values}
        assert 'no pose of lf' in values['last_refused_weights'] and values['released'] == 'lf'
        assert not analyse(node, lifted, 1_002_000_000)['man'][0].any()   # still out of the read-out
        node.deliver('contact_poses', pose_array(FOOT_POSITIONS, 1_003_000_000))
        analyse(node, lifted, 1_003_500_000)   # a sample at the new poses: the solver has lf's
        node.deliver('contact_weights/actual', weights_msg(['lf'], [1.0]))
        assert analyse(node, lifted, 1_004_000_000)['man'][0].any()       # followed: in the read-out
        node.deliver('contact_poses', pose_array(blind, 1_005_000_000))
        node.clear()
        for name, force in zip(FEET, lifted):
            node.deliver(f'{name}/ft_sensor', stamped_wrench(np.concatenate([force, np.zeros(3)]), 1_006_000_000, ''))
        assert node.last('object_wrench') is None
        status = diagnose(node)['contacts']
        assert 'no pose of lf' in status.message, status.message
