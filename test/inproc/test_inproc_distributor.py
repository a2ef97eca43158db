"""The distributor node's callbacks in this process, through its topics only (no DDS, no waiting).

The same contracts as test_ros_distributor.py and test_faults.py, where speed lets them be
properties over random inputs: commands reproduce the desired wrench through a grasp matrix
built here by hand, limits hold whatever the input, bad input gives no command and a status
naming the cause, a squeeze by topic is equal and opposite along the contact line, and
runtime parameters are validated before they are applied.
"""
import math
import struct
import warnings

from hypothesis import assume, given, settings, strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from inproc import InProcessNode, ros_context
from ros_harness import big_endian_pose_array_payload, big_endian_wrench_payload, stamped_wrench
from wrench_distribution.config import DISTRIBUTOR_PARAMS
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.core.messages import wrench_to_array
from wrench_distribution.distributor_node import DistributorNode
from wrench_distribution.ros.diagnostics import ERROR, level_of

pytestmark = [pytest.mark.ros, pytest.mark.inproc]

S2 = math.sqrt(0.5)
NAMES = ['left', 'right']
POSITIONS = np.array([[0.0, 0.3, 0.0], [0.0, -0.3, 0.0]])
QUATS = np.array([[S2, 0.0, 0.0, S2], [-S2, 0.0, 0.0, S2]])  # x, y, z, w
COM = np.array([0.02, 0.0, 0.05])
DIAG_PERIOD = 0.25  # tells the diagnostics timer from the watchdog (0.05 s) and summary (10 s)
BASE = {
    'effectors': NAMES, 'contact_types': ['rigid', 'rigid'], 'contact_source': 'static',
    'contact_positions': POSITIONS.ravel().tolist(), 'contact_orientations': QUATS.ravel().tolist(),
    'object_com': COM.tolist(), 'object_frame': 'object', 'diagnostics_period': DIAG_PERIOD,
    'input_timeout': 0.0,
}
LIMITS = {'force_limits': [60.0], 'torque_limits': [12.0], 'desired_force_limit': 150.0,
          'desired_torque_limit': 30.0, 'internal_load_limit': 50.0}
#: limits out of the way, set in the file (they cannot be raised at runtime), for tests of
#: the resultant over inputs up to 50 per component
WIDE = {'force_limits': [1e6], 'torque_limits': [1e6], 'desired_force_limit': 1e6,
        'desired_torque_limit': 1e6}
finite = st.floats(min_value=-50.0, max_value=50.0)


@pytest.fixture(scope='module')
def ctx():
    with ros_context() as c:
        yield c


def node(ctx, **params) -> InProcessNode:
    return InProcessNode(DistributorNode, ctx, dict(BASE, **params), DISTRIBUTOR_PARAMS)


def resultant(cmds, positions=POSITIONS, quats=QUATS, com=COM, object_axes=False) -> np.ndarray:
    """Wrench of per-effector commands on the object, about the CoM: the grasp matrix by hand.

    Contact frame: ``f = R f_c``, ``t = R t_c + p x f``; object axes: only the lever arm.
    """
    cmds = np.asarray(cmds, float)
    rot = Rotation.from_quat(quats)
    f = cmds[:, :3] if object_axes else rot.apply(cmds[:, :3])
    t = cmds[:, 3:] if object_axes else rot.apply(cmds[:, 3:])
    t = t + np.cross(np.asarray(positions) - com, f)
    return np.concatenate([f.sum(axis=0), t.sum(axis=0)])


_STAMP = [1_000_000_000]


def send(n: InProcessNode, values, frame='object', stamp_ns=None, names=NAMES):
    """Deliver a desired wrench; return the commands published for it, or None."""
    n.clear()
    _STAMP[0] += 1_000_000
    stamp = _STAMP[0] if stamp_ns is None else stamp_ns
    with warnings.catch_warnings():  # the node never warns (overflow, invalid value...)
        warnings.simplefilter('error', RuntimeWarning)
        n.deliver('desired_wrench', stamped_wrench(values, stamp, frame))
    got = [n.published(f'{e}/wrench_command') for e in names]
    if not all(got):
        assert not any(got), 'commands published for some effectors only'
        return None
    assert all(len(g) == 1 and stamp_to_ns(g[0].header.stamp) == stamp for g in got)
    return np.array([wrench_to_array(g[0].wrench) for g in got])


def diagnose(n: InProcessNode) -> dict:
    """Fire the diagnostics timer; return the statuses of the array it published, by concern."""
    assert n.fire_timers(DIAG_PERIOD) == 1
    arr = n.last('/diagnostics')
    return {st.name.split(': ', 1)[1]: st for st in arr.status}


def counters(n: InProcessNode) -> dict:
    return {kv.key: kv.value for kv in diagnose(n)['distribution'].values}


def squeeze_msg(value: float, label='squeeze(left,right)') -> Float64MultiArray:
    m = Float64MultiArray(data=[float(value)])
    m.layout.dim = [MultiArrayDimension(label=label, size=1, stride=1)]
    return m


# -- geometry ----------------------------------------------------------------------------
@st.composite
def grasps(draw):
    """2 to 4 rigid contacts, 5 cm apart at least, any orientation, a CoM near them."""
    n = draw(st.integers(2, 4))
    coord = st.floats(min_value=-0.5, max_value=0.5)
    pos = np.array(draw(st.lists(st.tuples(coord, coord, coord), min_size=n, max_size=n)))
    assume(min(np.linalg.norm(pos[i] - pos[j]) for i in range(n) for j in range(i)) > 0.05)
    quats = Rotation.random(n, random_state=draw(st.integers(0, 2**31))).as_quat()
    com = np.array(draw(st.tuples(coord, coord, coord)))
    return pos, quats, com


@settings(max_examples=20, deadline=None)
@given(grasp=grasps(), desired=st.lists(finite, min_size=6, max_size=6),
       frame=st.sampled_from(['contact', 'object']), sign=st.sampled_from([1, -1]))
def test_commands_reproduce_the_desired_wrench(ctx, grasp, desired, frame, sign):
    pos, quats, com = grasp
    names = [f'e{i}' for i in range(len(pos))]
    with node(ctx, effectors=names, contact_types=['rigid'] * len(names),
              contact_positions=pos.ravel().tolist(), contact_orientations=quats.ravel().tolist(),
              object_com=com.tolist(), command_frame=frame, command_sign=sign, **WIDE) as n:
        cmds = send(n, desired, names=names)
        assert cmds is not None, diagnose(n)['distribution'].message
        got = resultant(sign * cmds, pos, quats, com, object_axes=frame == 'object')
        np.testing.assert_allclose(got, desired, atol=1e-9 * (1 + np.abs(desired).max()))
        frames = [n.last(f'{e}/wrench_command').header.frame_id for e in names]
        assert frames == (['object'] * len(names) if frame == 'object'
                          else [f'{e}_contact' for e in names])


def test_markers_show_the_commands_in_the_object_frame(ctx):
    with node(ctx) as n:
        assert send(n, [3.0, -2.0, 15.0, 0.4, -0.3, 0.2]) is not None
        markers = n.last('~/markers')
        assert {m.ns for m in markers.markers} >= {'effector_force', 'resultant_force'}
        assert all(m.header.frame_id == 'object' for m in markers.markers)


def test_hold_object_weight_holds_with_a_zero_desired_wrench(ctx):
    """Zero desired wrench: the commands carry the 2 kg object (gravity -z in the object frame).

    Their resultant about the CoM, by hand, is (0, 0, 2 * 9.81, 0, 0, 0); the markers'
    effector arrows sum to it and the resultant arrow shows it; diagnostics say so.
    """
    with node(ctx, object_mass=2.0, hold_object_weight=True) as n:
        cmds = send(n, [0.0] * 6)
        assert cmds is not None, diagnose(n)['distribution'].message
        np.testing.assert_allclose(resultant(cmds), [0.0, 0.0, 2.0 * 9.81, 0.0, 0.0, 0.0],
                                   atol=1e-9)
        arrows = {(m.ns, m.id): m for m in n.last('~/markers').markers}
        up = arrows[('resultant_force', 0)].points
        assert up[1].z - up[0].z > 0 and up[1].x == pytest.approx(up[0].x)
        summary = {v.key: v.value for v in diagnose(n)['distribution'].values}
        assert summary['hold_object_weight'].startswith('on: 2 kg at object_com')


def limit_use(cmds, scaled_desired) -> float:
    """Largest use of any limit: each effector's force and torque, the scaled desired wrench."""
    d = np.asarray(scaled_desired, float)
    uses = [max(np.linalg.norm(c[:3]) / 60.0, np.linalg.norm(c[3:]) / 12.0) for c in cmds]
    return max(uses + [np.linalg.norm(d[:3]) / 150.0, np.linalg.norm(d[3:]) / 30.0])


def near_limits(bound: float):
    """Components around the limits (most draws), extremes now and then."""
    return st.one_of(st.floats(min_value=-bound, max_value=bound), st.just(0.0),
                     st.floats(min_value=-1.7e308, max_value=1.7e308))


desired_near_limits = st.tuples(*[near_limits(110.0)] * 3, *[near_limits(25.0)] * 3).map(list)


@settings(max_examples=40, deadline=None)
@given(policy=st.sampled_from(['hold', 'zero', 'scale']),
       wrenches=st.lists(desired_near_limits, min_size=1, max_size=8))
def test_no_command_beyond_a_limit_whatever_the_input(ctx, policy, wrenches):
    with node(ctx, on_limit=policy, **LIMITS) as n:
        last_good = None
        for desired in [[0.0, 0.0, 20.0, 0.0, 0.0, 0.0]] + wrenches:
            before = int(counters(n).get('dropped.desired_wrench.limit', 0))
            cmds = send(n, desired)
            limits = diagnose(n)['limits']
            hit = int(counters(n).get('dropped.desired_wrench.limit', 0)) > before
            d = np.asarray(desired)
            with np.errstate(over='ignore'):  # the norm of 1.7e308s is inf: over the limit
                over = np.linalg.norm(d[:3]) > 150.0 or np.linalg.norm(d[3:]) > 30.0
                dd = d @ d
            if over:
                assert hit, desired  # over a desired limit: always reported
            if cmds is not None:
                assert np.isfinite(cmds).all()
                assert all(np.linalg.norm(c[:3]) <= 60.0 * (1 + 1e-12) for c in cmds)
                assert all(np.linalg.norm(c[3:]) <= 12.0 * (1 + 1e-12) for c in cmds)
            if not hit:
                assert cmds is not None and level_of(limits) != ERROR
                np.testing.assert_allclose(resultant(cmds), desired, atol=1e-9 * (1 + np.abs(d).max()))
                last_good = cmds
                continue
            assert level_of(limits) == ERROR and 'limit' in limits.message
            if policy == 'hold':
                assert (cmds is None) if last_good is None else np.array_equal(cmds, last_good)
            elif policy == 'zero':
                assert cmds is not None and np.all(cmds == 0.0)
            elif np.isfinite(dd):  # scale: same direction, the binding limit met
                r = resultant(cmds)
                s = float(r @ d / dd) if dd > 0 else 0.0
                assert 0.0 <= s < 1.0 and 'scaled by' in limits.message
                np.testing.assert_allclose(r, s * d, atol=1e-9 * (1 + np.abs(d).max()))
                if s > 1e-9:
                    assert limit_use(cmds, s * d) == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize('values,frame,stamp_ahead_s,text,key', [
    ([math.nan, 0, 0, 0, 0, 0], 'object', 0.0, 'NaN or Inf', 'dropped.desired_wrench.nan'),
    ([1, 0, 0, 0, math.inf, 0], 'object', 0.0, 'NaN or Inf', 'dropped.desired_wrench.nan'),
    ([1, 0, 0, 0, 0, 0], 'world', 0.0, "frame 'world'", 'dropped.desired_wrench.frame'),
    ([1, 0, 0, 0, 0, 0], 'object', 10.0, 'ahead of the node clock', 'dropped.desired_wrench.future'),
])
def test_bad_input_gives_no_command_and_a_status_naming_the_cause(ctx, values, frame, stamp_ahead_s, text, key):
    with node(ctx) as n:
        stamp = n.node.get_clock().now().nanoseconds + int(stamp_ahead_s * 1e9) if stamp_ahead_s else None
        assert send(n, values, frame, stamp_ns=stamp) is None
        st_ = diagnose(n)
        assert level_of(st_['input']) == ERROR and text in st_['input'].message
        assert level_of(st_['distribution']) == ERROR and text in st_['distribution'].message
        assert counters(n)[key] == '1'
        assert all(not n.published(f'{e}/wrench_command') for e in NAMES)
        # the next good input is served
        assert send(n, [0, 0, 10, 0, 0, 0]) is not None


def test_a_desired_wrench_in_either_byte_order_is_served_alike_and_garbage_is_dropped(ctx):
    desired = [3.0, -2.0, 12.0, 0.4, -0.1, 0.2]
    with node(ctx) as n:
        expected = send(n, desired)
        stamp = _STAMP[0] + 1_000_000
        n.clear()
        n.deliver('desired_wrench', big_endian_wrench_payload(desired, stamp, 'object'))
        got = [n.published(f'{e}/wrench_command') for e in NAMES]
        assert all(len(g) == 1 and stamp_to_ns(g[0].header.stamp) == stamp for g in got)
        np.testing.assert_array_equal([wrench_to_array(g[0].wrench) for g in got], expected)
        n.clear()
        for garbage in (b'', b'\x00\x01\x00\x00abc', b'\x00\x01\x00\x00' + bytes(range(60))):
            n.deliver('desired_wrench', garbage)
        assert all(not n.published(f'{e}/wrench_command') for e in NAMES)
        st_ = diagnose(n)
        assert level_of(st_['input']) == ERROR
        assert 'desired wrench is not a WrenchStamped' in st_['input'].message
        values = counters(n)
        assert values['dropped.desired_wrench.malformed'] == '3'
        assert values['rejected_malformed'] == '3'
        assert send(n, desired) is not None  # the next good input is served


@settings(max_examples=25, deadline=None)
@given(value=st.floats(min_value=-40.0, max_value=40.0), desired=st.lists(finite, min_size=6, max_size=6))
def test_squeeze_by_topic_is_equal_and_opposite_along_the_contact_line(ctx, value, desired):
    with node(ctx, **WIDE) as n:
        plain = send(n, desired)
        n.deliver('internal_load', squeeze_msg(value))
        squeezed = send(n, desired)
        np.testing.assert_allclose(resultant(squeezed), desired, atol=1e-9 * (1 + np.abs(desired).max()))
        rot = Rotation.from_quat(QUATS)
        extra_f = rot.apply((squeezed - plain)[:, :3])
        extra_t = rot.apply((squeezed - plain)[:, 3:])
        e = (POSITIONS[1] - POSITIONS[0]) / np.linalg.norm(POSITIONS[1] - POSITIONS[0])
        np.testing.assert_allclose(extra_f, [value * e, -value * e], atol=1e-9 * (1 + abs(value)))
        np.testing.assert_allclose(extra_t, 0.0, atol=1e-9 * (1 + abs(value)))
        # the diagnostics tell what is in force and where it came from; the node never
        # writes its own parameters from a topic
        assert n.node.get_parameter('internal_load_handles').value == []
        values = {kv.key: kv.value for kv in diagnose(n)['distribution'].values}
        assert values['internal_load_source'] == 'topic'
        assert values['internal_load_prescription'] == f'handles squeeze(left,right)={value:g}'


def test_internal_load_refused_keeps_the_last_good_one(ctx):
    with node(ctx, **LIMITS) as n:
        n.deliver('internal_load', squeeze_msg(10.0))
        good = send(n, [0, 0, 20, 0, 0, 0])
        for bad, text in ((Float64MultiArray(data=[1.0, 2.0]), 'internal_load message rejected'),
                          (Float64MultiArray(data=[math.nan] * 6), 'NaN or Inf'),
                          (squeeze_msg(1e9), '1e+09'),
                          (squeeze_msg(1.0, 'squeeze(left,nobody)'), 'squeeze(left,right)')):
            n.deliver('internal_load', bad)
            status = diagnose(n)['internal load']
            assert level_of(status) == ERROR and text in status.message, (text, status.message)
            np.testing.assert_array_equal(send(n, [0, 0, 20, 0, 0, 0]), good)


def test_unrealisable_wrench_gives_no_command(ctx):
    with node(ctx, contact_types=['point', 'point'], object_com=[0.0, 0.0, 0.0]) as n:
        assert send(n, [0, 0, 0, 0, 1.0, 0]) is None  # a torque about the line of the contacts
        status = diagnose(n)['solver']
        assert level_of(status) == ERROR and 'no command' in status.message
        assert counters(n)['unrealisable'] == '1'
        assert send(n, [0, 0, 10.0, 0, 0, 0]) is not None


def test_runtime_parameters_refused_with_the_name_or_applied(ctx):
    with node(ctx, **LIMITS) as n:
        desired = [0.0, 0.0, 10.0, 0.0, 0.0, 1.0]
        before = send(n, desired)
        for name, value, needles in (
                ('torque_share', 2.0, ['torque_share']),
                ('torque_share', 'lots', []),  # refused by rclpy's type check, before the node's
                ('on_timeout', 'explode', ["'on_timeout'", 'zero, stop']),
                ('effectors', ['a', 'b'], ['effectors', 'read-only']),
                ('internal_load_handles', ['bogus(a,b)=1.0'], ['squeeze(left,right)']),
                ('internal_load', [1e300, 0.0, 0.0, 0.0, 0.0, 0.0], ['internal_load_limit']),
                ('force_limits', [-1.0], ['force_limits'])):
            res = n.set_parameters(**{name: value})[0]
            assert not res.successful and all(s in res.reason for s in needles), (name, res.reason)
            np.testing.assert_array_equal(send(n, desired), before)  # nothing changed
        assert n.node.get_parameter('torque_share').value == 0.0
        assert n.set_parameters(internal_load_handles=['squeeze(left,right)=20.0'])[0].successful
        squeezed = send(n, desired)
        np.testing.assert_allclose(resultant(squeezed), desired, atol=1e-9)
        f = Rotation.from_quat(QUATS).apply((squeezed - before)[:, :3])
        np.testing.assert_allclose(f, [[0, -20, 0], [0, 20, 0]], atol=1e-9)
        assert n.set_parameters(torque_share=0.5)[0].successful
        np.testing.assert_allclose(resultant(send(n, desired)), desired, atol=1e-9)
        # a limit the squeeze in force would break: refused, the commands stay
        res = n.set_parameters(force_limits=[1.0])[0]
        assert not res.successful and 'internal load alone exceeds' in res.reason, res.reason
        assert send(n, desired) is not None


def test_an_integer_set_on_a_double_is_that_double_as_in_a_file(ctx):
    """``ros2 param set /wrench_distributor torque_share 1`` sends an INTEGER: read as 1.0.

    (From Iron on, rclpy's pre-set callback; Humble has none and refuses the type first.)
    """
    from rclpy.parameter import Parameter
    with node(ctx, **LIMITS) as n:
        desired = [0.0, 0.0, 10.0, 0.0, 0.0, 1.0]
        res = n.node.set_parameters([Parameter('torque_share', Parameter.Type.INTEGER, 1)])[0]
        assert res.successful, res.reason
        got = n.node.get_parameter('torque_share')
        assert (got.type_, got.value) == (Parameter.Type.DOUBLE, 1.0)
        res = n.node.set_parameters([Parameter('force_limits', Parameter.Type.INTEGER_ARRAY, [50])])[0]
        assert res.successful, res.reason
        assert list(n.node.get_parameter('force_limits').value) == [50.0]
        np.testing.assert_allclose(resultant(send(n, desired)), desired, atol=1e-9)
        res = n.node.set_parameters([Parameter('torque_share', Parameter.Type.STRING, 'one')])[0]
        assert not res.successful  # any other type is still refused


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.floats(min_value=-0.5, max_value=1.5), min_size=1, max_size=5))
def test_torque_share_applied_exactly_when_in_range(ctx, values):
    with node(ctx) as n:
        accepted = 0.0
        for v in values:
            ok = n.set_parameters(torque_share=v)[0].successful
            assert ok == (0.0 <= v <= 1.0)
            accepted = v if ok else accepted
            assert n.node.get_parameter('torque_share').value == accepted
            desired = [1.0, -2.0, 12.0, 0.3, 0.2, -0.1]
            np.testing.assert_allclose(resultant(send(n, desired)), desired, atol=1e-9)


def pose_array(positions, quats, frame='object'):
    from geometry_msgs.msg import Pose, PoseArray
    pa = PoseArray()
    pa.header.frame_id = frame
    for (x, y, z), (qx, qy, qz, qw) in zip(positions, quats):
        p = Pose()
        p.position.x, p.position.y, p.position.z = float(x), float(y), float(z)
        p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = qx, qy, qz, qw
        pa.poses.append(p)
    return pa


def topic_node(ctx) -> InProcessNode:
    return node(ctx, contact_source='topic', contact_positions=[], contact_orientations=[])


def test_contact_poses_by_topic_checked_then_used(ctx):
    with topic_node(ctx) as n:
        assert send(n, [0, 0, 10, 0, 0, 0]) is None
        status = diagnose(n)['contacts']
        assert level_of(status) == ERROR and 'no contact poses yet' in status.message
        for bad, text in ((pose_array(POSITIONS[:1], QUATS[:1]), 'expected 2'),
                          (pose_array(POSITIONS, QUATS, 'world'), "'world'"),
                          (pose_array([[0, 1e200, 0], POSITIONS[1]], QUATS), 'out of range')):
            n.deliver('contact_poses', bad)
            status = diagnose(n)['contacts']
            assert level_of(status) == ERROR and text in status.message, (text, status.message)
            assert send(n, [0, 0, 10, 0, 0, 0]) is None
        n.deliver('contact_poses', pose_array(POSITIONS, QUATS))
        desired = [1.0, 2.0, 3.0, 0.1, 0.2, 0.3]
        np.testing.assert_allclose(resultant(send(n, desired)), desired, atol=1e-9)
        n.deliver('contact_poses', pose_array(POSITIONS, QUATS))  # the same poses: solver reused
        send(n, desired)
        assert counters(n)['solver_builds'] == '1'


@settings(max_examples=200, deadline=None)
@given(frame=st.text(st.characters(blacklist_characters='\x00', blacklist_categories=('Cs',)), max_size=12),
       numbers=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=42),
       stamp_ns=st.integers(0, 2**31 * 1_000_000_000 - 1))
def test_a_pose_array_payload_decodes_as_rclpy_reads_it(frame, numbers, stamp_ns):
    """The contact poses' raw decoder gives rclpy's deserialisation, for any frame id and count."""
    from geometry_msgs.msg import Pose, PoseArray
    from rclpy.serialization import deserialize_message, serialize_message
    from wrench_distribution.core.codec import decode_pose_array_payload, ns_to_stamp
    from wrench_distribution.ros.conversions import read_pose_array_payload
    rows = np.reshape(numbers[:len(numbers) // 7 * 7], (-1, 7))
    msg = PoseArray()
    msg.header.frame_id, msg.header.stamp = frame, ns_to_stamp(stamp_ns, type(msg.header.stamp))
    for x, y, z, qx, qy, qz, qw in rows.tolist():
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = x, y, z
        pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = qx, qy, qz, qw
        msg.poses.append(pose)
    payload = serialize_message(msg)
    stamp, frame_id, decoded = decode_pose_array_payload(payload)
    assert (stamp, frame_id) == (stamp_ns, frame)
    assert struct.pack(f'<{rows.size}d', *decoded) == struct.pack(f'<{rows.size}d', *rows.ravel())
    for other in (payload, big_endian_pose_array_payload(rows, stamp_ns, frame)):  # the fallback too
        back = deserialize_message(other, PoseArray)
        stamp, frame_id, poses = read_pose_array_payload(other)
        assert (stamp, frame_id, poses.shape) == (stamp_to_ns(back.header.stamp), back.header.frame_id, rows.shape)
        assert poses.tobytes() == rows.tobytes()


def test_contact_poses_in_either_byte_order_are_used_alike_and_garbage_is_refused(ctx):
    desired = [1.0, 2.0, 3.0, 0.1, 0.2, 0.3]
    poses = np.concatenate([POSITIONS, QUATS], axis=1)
    with topic_node(ctx) as n:
        for garbage in (b'', b'\x00\x01\x00\x00abc', b'\x00\x01\x00\x00' + bytes(range(60))):
            n.deliver('contact_poses', garbage)
            status = diagnose(n)['contacts']
            assert level_of(status) == ERROR and 'not a PoseArray' in status.message, status.message
            assert send(n, desired) is None
        n.deliver('contact_poses', big_endian_pose_array_payload(poses, _STAMP[0], 'object'))
        by_hand = send(n, desired)
        np.testing.assert_allclose(resultant(by_hand), desired, atol=1e-9)
        n.deliver('contact_poses', pose_array(POSITIONS, QUATS))  # little-endian, from rclpy
        np.testing.assert_array_equal(send(n, desired), by_hand)


def test_a_basis_change_is_reported_with_the_loop_off_and_no_prescription(ctx):
    """The diagnostics follow the basis nothing else reads then: a change of names is a WARN.

    engine/internal_load.py builds the basis of a new geometry only when something reads it.
    """
    first = [[0.059, 0.006, 0.109], [-0.147, -0.033, -0.096], [0.12, 0.008, -0.058]]
    second = [[0.069, 0.164, 0.066], [-0.261, 0.181, 0.089], [-0.107, 0.116, 0.073]]
    quats = [[0.0, 0.0, 0.0, 1.0]] * 3
    with node(ctx, effectors=['a', 'b', 'c'], contact_types=['point'] * 3, contact_source='topic',
              contact_positions=[], contact_orientations=[]) as n:
        n.deliver('contact_poses', pose_array(first, quats))
        assert 'basis_changes' not in counters(n)
        n.deliver('contact_poses', pose_array(second, quats))
        status = diagnose(n)['contacts']
        assert 'internal-load basis changed with the contacts: squeeze(a,b);squeeze(a,c);squeeze(b,c) -> ' \
            'squeeze(a,b);squeeze(a,c);balanced_fy(a)' in status.message, status.message
        assert counters(n)['basis_changes'] == '1'


@settings(max_examples=20, deadline=None)
@given(grasp=grasps().filter(lambda g: len(g[0]) == 2), desired=st.lists(finite, min_size=6, max_size=6))
def test_commands_follow_the_contact_poses_of_the_topic(ctx, grasp, desired):
    pos, quats, com = grasp
    with node(ctx, contact_source='topic', contact_positions=[], contact_orientations=[],
              object_com=com.tolist(), **WIDE) as n:
        n.deliver('contact_poses', pose_array(POSITIONS, QUATS))
        assert send(n, desired) is not None
        n.deliver('contact_poses', pose_array(pos, quats))  # the contacts move
        cmds = send(n, desired)
        np.testing.assert_allclose(resultant(cmds, pos, quats, com), desired,
                                   atol=1e-9 * (1 + np.abs(desired).max()))


def test_clearing_the_internal_load_parameter_clears_the_prescription(ctx):
    with node(ctx, internal_load_handles=['squeeze(left,right)=15.0']) as n:
        squeezed = send(n, [0, 0, 20, 0, 0, 0])
        assert n.set_parameters(internal_load_handles=[])[0].successful
        plain = send(n, [0, 0, 20, 0, 0, 0])
        np.testing.assert_allclose(resultant(plain), [0, 0, 20, 0, 0, 0], atol=1e-9)
        f = Rotation.from_quat(QUATS).apply((squeezed - plain)[:, :3])
        np.testing.assert_allclose(f, [[0, -15, 0], [0, 15, 0]], atol=1e-9)
        values = {kv.key: kv.value for kv in diagnose(n)['distribution'].values}
        assert values['internal_load_prescription'] == 'none'
        assert n.node.get_parameter('internal_load_handles').value == []


def test_the_helper_records_snapshots_and_names_what_the_node_has(ctx):
    with node(ctx) as n:
        n.deliver('desired_wrench', stamped_wrench([0, 0, 30, 0, 0, 0], 7, 'object'))
        n.deliver('desired_wrench', stamped_wrench([0, 0, 20, 0, 0, 0], 8, 'object'))
        got = n.published('left/wrench_command')
        # the node reuses its message objects: each record is a copy taken when it was sent
        assert [stamp_to_ns(m.header.stamp) for m in got] == [7, 8]
        assert got[0].wrench.force != got[1].wrench.force
        with pytest.raises(KeyError, match='desired_wrench'):
            n.deliver('no_such_topic', stamped_wrench([0] * 6, 9))
        with pytest.raises(KeyError, match='wrench_command'):
            n.published('no_such_topic')
        left = next(p for p in n.node.publishers if n.topic_of(p) == '/left/wrench_command')
        with pytest.raises(TypeError, match='WrenchStamped'):
            left.publish(Float64MultiArray())


@pytest.mark.parametrize('object_frame', ['object', '/object'])
@pytest.mark.parametrize('frame', ['object', '/object', '//object'])
def test_a_leading_slash_is_ignored_in_every_frame_id(ctx, object_frame, frame):
    """desired_wrench and contact_poses obey the one frame-id rule (core.codec.same_frame)."""
    desired = [1.0, 2.0, 3.0, 0.1, 0.2, 0.3]
    with node(ctx, object_frame=object_frame) as n:
        np.testing.assert_allclose(resultant(send(n, desired, frame)), desired, atol=1e-9)
        assert send(n, desired, '/world') is None
    with node(ctx, object_frame=object_frame, contact_source='topic', contact_positions=[],
              contact_orientations=[]) as n:
        n.deliver('contact_poses', pose_array(POSITIONS, QUATS, frame))
        np.testing.assert_allclose(resultant(send(n, desired, frame)), desired, atol=1e-9)


def test_a_command_the_middleware_refuses_is_an_error_and_the_other_effector_still_gets_its(ctx):
    """A sample Fast DDS refuses (rclpy raises, ros2/rclcpp#827) is an ERROR naming the topic, no crash."""
    desired = [5.0, -3.0, 12.0, 0.4, 0.2, -0.1]
    with node(ctx, **WIDE) as n:
        reference = send(n, desired)
        assert reference is not None and np.abs(reference).max(axis=1).min() > 1.0  # both carry
        n.refuse('right/wrench_command')
        n.clear()
        _STAMP[0] += 1_000_000
        n.deliver('desired_wrench', stamped_wrench(desired, _STAMP[0], 'object'))
        assert not n.published('right/wrench_command')
        left = n.published('left/wrench_command')
        assert len(left) == 1 and stamp_to_ns(left[0].header.stamp) == _STAMP[0]
        np.testing.assert_array_equal(wrench_to_array(left[0].wrench), reference[0])
        outputs = diagnose(n)['outputs']
        assert level_of(outputs) == ERROR
        assert '/right/wrench_command' in outputs.message and 'refused' in outputs.message
        assert counters(n)['refused_publishes'] == '1'
        n.refuse('right/wrench_command', False)
        np.testing.assert_array_equal(send(n, desired), reference)
        assert level_of(diagnose(n)['outputs']) != ERROR  # reported once, for the period it happened in
        n.refuse('/diagnostics')
        assert n.fire_timers(DIAG_PERIOD) == 1  # the refused diagnostics raise nothing either
        n.refuse('/diagnostics', False)
        outputs = diagnose(n)['outputs']
        assert level_of(outputs) == ERROR and '/diagnostics' in outputs.message
