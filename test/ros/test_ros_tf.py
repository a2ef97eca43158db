"""The nodes' tf2 path, on the in-repo stand-in for tf2_ros (test/helpers/tf2_standin.py).

tf2_ros is not installable here, so the nodes run in this process (their own rclpy nodes
on the test client's context, talking over DDS) with ``use_tf2_implementation`` pointing
at the stand-in, whose buffer the test feeds as a ``TransformListener`` would.
"""
import math
import time
import types

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from rclpy.duration import Duration
from rclpy.parameter import Parameter
from rclpy.time import Time
from scipy.spatial.transform import Rotation

from ros_harness import (diag_messages, diag_values, domain_id_for, stamped_wrench,
                         TestClient)
import tf2_standin
from tf2_standin import transform
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.core.messages import wrench_to_array
from wrench_distribution.ros import tf as wd_tf

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
S2 = math.sqrt(0.5)
NAMES = ['left', 'right']
GRASPS = ['left_grasp', 'right_grasp']
SENSORS = ['left_ft', 'right_ft']
CONTACT_POSES = [((0.0, 0.3, 0.0), (S2, 0.0, 0.0, S2)), ((0.0, -0.3, 0.0), (-S2, 0.0, 0.0, S2))]
COM = np.array([0.0, 0.0, 0.05])
BASE = {
    'effectors': NAMES, 'contact_source': 'tf', 'contact_frames': GRASPS,
    'object_frame': 'box', 'object_com': COM.tolist(), 'diagnostics_period': 0.2,
}


@pytest.fixture
def client():
    c = TestClient(DOMAIN, 'wd_tf_client')
    yield c
    c.close()


@pytest.fixture
def standin():
    tf2_standin.Buffer.instances.clear()
    wd_tf.use_tf2_implementation(tf2_standin)
    yield tf2_standin
    wd_tf.use_tf2_implementation(None)


def _start(client, kind: str, params: dict):
    """Build a node of ``kind`` in this process on the client's context and spin it with it.

    :return: the node.
    """
    if kind == 'distributor':
        from wrench_distribution.distributor_node import DistributorNode as cls
    else:
        from wrench_distribution.analyzer_node import AnalyzerNode as cls
    overrides = [Parameter(k, value=v) for k, v in params.items()]
    node = cls(context=client.context, parameter_overrides=overrides)
    client.executor.add_node(node)
    return node


def _stop(client, node) -> None:
    client.executor.remove_node(node)
    node.destroy_node()


def _now_ns(client) -> int:
    return client.node.get_clock().now().nanoseconds


def _feed_contacts(buffer, stamp_ns: int) -> None:
    for frame, (p, q) in zip(GRASPS, CONTACT_POSES):
        buffer.set_transform(transform('box', frame, stamp_ns, p, q), 'test')


def test_standin_interpolates_inverts_and_refuses_extrapolation():
    """The stand-in's lookups against hand-derived values (it is a test instrument)."""
    buf = tf2_standin.Buffer()
    q90 = (0.0, 0.0, S2, S2)  # 90 degrees about z
    buf.set_transform(transform('a', 'b', 1_000_000_000, (0.0, 0.0, 0.0), (0, 0, 0, 1)), 't')
    buf.set_transform(transform('a', 'b', 3_000_000_000, (2.0, 0.0, 0.0), q90), 't')
    mid = buf.lookup_transform('a', 'b', Time(nanoseconds=2_000_000_000))
    assert mid.transform.translation.x == pytest.approx(1.0)
    assert mid.transform.rotation.z == pytest.approx(math.sin(math.pi / 8))  # 45 degrees
    assert stamp_to_ns(mid.header.stamp) == 2_000_000_000
    latest = buf.lookup_transform('a', 'b', Time())
    assert stamp_to_ns(latest.header.stamp) == 3_000_000_000
    inv = buf.lookup_transform('b', 'a', Time())  # a in b: rotate -90, then -p
    assert (inv.transform.translation.x, inv.transform.translation.y) == pytest.approx((0.0, 2.0))
    with pytest.raises(tf2_standin.ExtrapolationException):
        buf.lookup_transform('a', 'b', Time(nanoseconds=4_000_000_000))
    with pytest.raises(tf2_standin.LookupException):
        buf.lookup_transform('a', 'c', Time())


def test_standin_chains_frames_through_the_common_ancestor():
    """A chain world -> base -> flange -> sensor and a branch world -> box, by hand.

    The pose of ``sensor`` in ``box`` is derived here with homogeneous matrices; time zero
    is the latest time every dynamic edge covers; a time past an edge's data, an unknown
    frame and a second tree raise tf2's exceptions.
    """
    def matrix(p, q):
        m = np.eye(4)
        m[:3, :3], m[:3, 3] = Rotation.from_quat(q).as_matrix(), p
        return m
    buf = tf2_standin.Buffer()
    q_base = Rotation.from_euler('z', 30, degrees=True).as_quat()
    q_box = Rotation.from_euler('x', -20, degrees=True).as_quat()
    q_sensor = (0.0, 0.0, S2, S2)
    buf.set_transform_static(transform('world', 'base', 0, (1.0, 0.0, 0.5), q_base), 't')
    buf.set_transform_static(transform('world', 'box', 0, (1.5, 0.2, 0.3), q_box), 't')
    buf.set_transform_static(transform('flange', 'sensor', 0, (0.0, 0.0, 0.04), q_sensor), 't')
    for stamp, angle, z in ((1_000_000_000, 0.0, 0.4), (3_000_000_000, 40.0, 0.6)):
        q = Rotation.from_euler('y', angle, degrees=True).as_quat()
        buf.set_transform(transform('base', 'flange', stamp, (0.3, 0.0, z), q), 't')
    buf.set_transform(transform('world', 'unrelated_moving_frame', 5_000_000_000, (0, 0, 0),
                                (0, 0, 0, 1)), 't')
    at = 2_000_000_000  # half way: 20 degrees about y, z = 0.5
    flange = matrix((0.3, 0.0, 0.5), Rotation.from_euler('y', 20, degrees=True).as_quat())
    expected = (np.linalg.inv(matrix((1.5, 0.2, 0.3), q_box)) @ matrix((1.0, 0.0, 0.5), q_base)
                @ flange @ matrix((0.0, 0.0, 0.04), q_sensor))
    got = buf.lookup_transform('box', 'sensor', Time(nanoseconds=at))
    tr, r = got.transform.translation, got.transform.rotation
    np.testing.assert_allclose(matrix((tr.x, tr.y, tr.z), (r.x, r.y, r.z, r.w)), expected,
                               atol=1e-12)
    assert stamp_to_ns(got.header.stamp) == at
    back = buf.lookup_transform('sensor', 'box', Time(nanoseconds=at))
    tr, r = back.transform.translation, back.transform.rotation
    np.testing.assert_allclose(matrix((tr.x, tr.y, tr.z), (r.x, r.y, r.z, r.w)),
                               np.linalg.inv(expected), atol=1e-12)
    latest = buf.lookup_transform('box', 'sensor', Time())
    assert stamp_to_ns(latest.header.stamp) == 3_000_000_000  # the flange edge's newest
    assert stamp_to_ns(buf.lookup_transform('box', 'base', Time()).header.stamp) == 0
    with pytest.raises(tf2_standin.ExtrapolationException):
        buf.lookup_transform('box', 'sensor', Time(nanoseconds=4_000_000_000))
    with pytest.raises(tf2_standin.LookupException):
        buf.lookup_transform('box', 'camera', Time())
    buf.set_transform(transform('map', 'robot2', 1, (0, 0, 0), (0, 0, 0, 1)), 't')
    with pytest.raises(tf2_standin.ConnectivityException):
        buf.lookup_transform('box', 'robot2', Time())
    assert isinstance(tf2_standin.ConnectivityException(), tf2_standin.TransformException)
    assert not buf.can_transform('box', 'robot2', Time()) and buf.can_transform('box', 'sensor', Time())
    short = tf2_standin.Buffer(cache_time=Duration(seconds=1.5))  # tf2's cache_time
    for stamp in (1_000_000_000, 2_000_000_000, 3_000_000_000):
        short.set_transform(transform('a', 'b', stamp, (stamp * 1e-9, 0, 0), (0, 0, 0, 1)), 't')
    assert short.can_transform('a', 'b', Time(nanoseconds=2_000_000_000))
    with pytest.raises(tf2_standin.ExtrapolationException):  # older than 3 s - 1.5 s: dropped
        short.lookup_transform('a', 'b', Time(nanoseconds=1_000_000_000))
    buf.clear()  # the flange edge is dynamic: gone, the static ones stay
    assert not buf.can_transform('box', 'sensor', Time()) and buf.can_transform('box', 'base', Time())


def test_standin_listener_takes_tf_and_latched_tf_static_over_dds(client):
    """The listener feeds its buffer from /tf and /tf_static, static ones latched for late joiners.

    The static transform is sent before the listener exists (transient local, as tf2's static
    broadcaster); the dynamic one after. The chain through both resolves.
    """
    static = tf2_standin.StaticTransformBroadcaster(client.node)
    static.sendTransform(transform('world', 'base', 0, (0.0, 0.0, 1.0), (0, 0, 0, 1)))
    client.spin_for(0.3)
    late = client.rclpy.create_node('wd_tf_late_listener', context=client.context)
    client.executor.add_node(late)
    try:
        buffer = tf2_standin.Buffer()
        tf2_standin.TransformListener(buffer, late)
        assert client.spin_until(lambda: buffer.can_transform('world', 'base', Time()), 5.0)
        dynamic = tf2_standin.TransformBroadcaster(client.node)
        stamp = _now_ns(client)
        assert client.spin_until(lambda: dynamic.pub.get_subscription_count() > 0, 5.0)
        dynamic.sendTransform(transform('base', 'tool', stamp, (0.5, 0.0, 0.0), (0, 0, S2, S2)))
        assert client.spin_until(lambda: buffer.can_transform('world', 'tool', Time()), 5.0)
        t = buffer.lookup_transform('world', 'tool', Time())
        tr = t.transform.translation
        assert (tr.x, tr.y, tr.z) == pytest.approx((0.5, 0.0, 1.0))
        assert stamp_to_ns(t.header.stamp) == stamp
    finally:
        client.executor.remove_node(late)
        late.destroy_node()


def test_distributor_contact_timeout_follows_transform_stamps(client, standin):
    """Stop commands once the transforms are older than contact_timeout.

    No command before the contact frames are known; commands while tf is published; none
    once the transforms are older than contact_timeout (the tf publisher stopped).
    """
    timeout = 0.5
    node = _start(client, 'distributor', dict(BASE, contact_timeout=timeout))
    try:
        buffer = standin.Buffer.instances[-1]
        cmds = client.collect(WrenchStamped, 'left/wrench_command')
        diags = client.collect(DiagnosticArray, '/diagnostics')
        pub = client.publisher(WrenchStamped, 'desired_wrench')
        assert client.wait_matched(publishers=[pub], topics=['left/wrench_command'])
        desired = [0.0, 0.0, 20.0, 0.0, 0.0, 0.0]
        for _ in range(10):
            pub.publish(stamped_wrench(desired, _now_ns(client), 'box'))
            client.spin_for(0.05)
        client.spin_for(0.3)
        assert not cmds, 'a command before the contact frames were known'
        assert any('no contact poses yet' in m and 'left_grasp' in m
                   for m in diag_messages(diags, 'wrench_distributor')), diag_messages(diags, '')
        last_tf = 0
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            last_tf = _now_ns(client)
            _feed_contacts(buffer, last_tf)
            pub.publish(stamped_wrench(desired, _now_ns(client), 'box'))
            client.spin_for(0.05)
        assert cmds, 'no command while the contact transforms were published'
        del diags[:]
        end = time.monotonic() + 2.0 * timeout + 0.5
        late = 0
        while time.monotonic() < end:  # tf publisher stopped; commands still requested
            now = _now_ns(client)
            late += (now - last_tf) * 1e-9 > timeout + 0.05
            pub.publish(stamped_wrench(desired, now, 'box'))
            client.spin_for(0.05)
        client.spin_for(0.3)
        assert late > 5
        # on_timeout: zero wrenches (stamped now) are the safe output once commands stop
        overdue = [(stamp_to_ns(m.header.stamp) - last_tf) * 1e-9 for m in cmds
                   if np.any(wrench_to_array(m.wrench) != 0.0)]
        assert max(overdue) <= timeout, f'a command {max(overdue):.3f} s after the last transform'
        assert any('stale' in m for m in diag_messages(diags, 'wrench_distributor'))
    finally:
        _stop(client, node)


def _sensor_params(**extra) -> dict:
    return dict(BASE, sensor_frames=SENSORS, sync_tolerance=0.005, max_age=2.0,
                gravity=[0.0, 0.0, 0.0], **extra)


def _resultant(readings, contact_poses, sensor_poses) -> np.ndarray:
    """Compute the object wrench about the centre of mass from sensor readings.

    Each reading is moved to its contact (f' = R f, t' = R t + p x f'), then to the
    object, then about the CoM.
    """
    total = np.zeros(6)
    for w, (pc, qc), (ps, qs) in zip(readings, contact_poses, sensor_poses):
        w = np.asarray(w, float)
        for p, q in ((ps, qs), (pc, qc)):
            r = Rotation.from_quat(q)
            f = r.apply(w[:3])
            w = np.concatenate([f, r.apply(w[3:]) + np.cross(p, f)])
        total += w
    total[3:] -= np.cross(COM, total[:3])
    return total


def _publish_pair(client, pubs, readings, stamp_ns: int) -> None:
    for p, w in zip(pubs, readings):
        p.publish(stamped_wrench(w, stamp_ns))
    client.spin_for(0.15)


def test_analyzer_waits_for_sensor_frames_then_uses_them(client, standin):
    """Analyse nothing until the sensor frames are known, then use their tf poses.

    Before: no output, counted and diagnosed. After: the sensor poses from tf move the
    readings (checked against an independent transport).
    """
    node = _start(client, 'analyzer', _sensor_params())
    try:
        buffer = standin.Buffer.instances[-1]
        for frame, (p, q) in zip(GRASPS, CONTACT_POSES):
            buffer.set_transform_static(transform('box', frame, 0, p, q), 'test')
        pubs = [client.publisher(WrenchStamped, f'{n}/ft_sensor') for n in NAMES]
        obj = client.collect(WrenchStamped, 'object_wrench')
        diags = client.collect(DiagnosticArray, '/diagnostics')
        assert client.wait_matched(publishers=pubs, topics=['object_wrench'])
        readings = [[1.0, -2.0, 15.0, 0.2, -0.1, 0.05], [-0.5, 3.0, 12.0, -0.3, 0.2, 0.1]]
        for _ in range(3):
            _publish_pair(client, pubs, readings, _now_ns(client))
        client.spin_for(0.3)
        assert not obj, 'analysed before the sensor frames were known'
        msgs = diag_messages(diags, 'wrench_analyzer')
        assert any('sensor frames not known yet' in m and 'left_ft in left_grasp' in m
                   for m in msgs), msgs
        assert int(diag_values(diags, 'wrench_analyzer').get('no_contacts', 0)) >= 3
        sensors = [((0.01, 0.0, -0.08), (0.0, 0.0, S2, S2)), ((0.0, 0.02, -0.1), (0, 0, 0, 1))]
        for grasp, frame, (p, q) in zip(GRASPS, SENSORS, sensors):
            buffer.set_transform_static(transform(grasp, frame, 0, p, q), 'test')
        _publish_pair(client, pubs, readings, _now_ns(client))
        assert client.spin_until(lambda: obj, 3.0)
        expected = _resultant(readings, CONTACT_POSES, sensors)
        np.testing.assert_allclose(wrench_to_array(obj[-1].wrench), expected, atol=1e-9)
    finally:
        _stop(client, node)


def test_analyzer_looks_contacts_up_at_the_sample_stamp(client, standin, capfd):
    """Analyse each sample of a moving contact with the pose at its own stamp.

    As offline (``analyze-bag``), a sample outside the transforms in the buffer has no contact
    pose: it is not analysed with other poses, but dropped, logged and counted (no_contacts).
    """
    node = _start(client, 'analyzer', dict(BASE, sync_tolerance=0.005, max_age=5.0,
                                           gravity=[0.0, 0.0, 0.0]))
    try:
        buffer = standin.Buffer.instances[-1]
        pubs = [client.publisher(WrenchStamped, f'{n}/ft_sensor') for n in NAMES]
        obj = client.collect(WrenchStamped, 'object_wrench')
        diags = client.collect(DiagnosticArray, '/diagnostics')
        assert client.wait_matched(publishers=pubs, topics=['object_wrench'])
        t0 = _now_ns(client)
        t1, t2 = t0 - 1_000_000_000, t0 - 500_000_000
        (pl, ql), right = CONTACT_POSES
        moved = ((0.1, 0.3, 0.05), ql)
        for stamp, left in ((t1, (pl, ql)), (t2, moved)):
            buffer.set_transform(transform('box', GRASPS[0], stamp, *left), 'test')
            buffer.set_transform(transform('box', GRASPS[1], stamp, *right), 'test')
        readings = [[1.0, -2.0, 15.0, 0.2, -0.1, 0.05], [-0.5, 3.0, 12.0, -0.3, 0.2, 0.1]]
        identity = [((0.0, 0.0, 0.0), (0, 0, 0, 1))] * 2
        mid = ((0.05, 0.3, 0.025), ql)  # half way between the two left poses
        # stamps in increasing order: the analyzer never publishes backwards in time
        for stamp, left in ((t1, (pl, ql)), ((t1 + t2) // 2, mid), (t2, moved)):
            del obj[:]
            _publish_pair(client, pubs, readings, stamp)
            assert client.spin_until(lambda: obj, 3.0), f'no analysis at {stamp}'
            expected = _resultant(readings, [left, right], identity)
            np.testing.assert_allclose(wrench_to_array(obj[-1].wrench), expected, atol=1e-9)
        buffer.clear()  # tf data gone: lookups fail
        del obj[:]
        _publish_pair(client, pubs, readings, t2 + 1)
        assert client.spin_until(
            lambda: int(diag_values(diags, 'wrench_analyzer').get('no_contacts', 0)) >= 1, 3.0)
        assert not obj, 'analysed without a contact pose at the stamp'
        err = capfd.readouterr().err
        assert 'no transform left_grasp in box' in err and err.count('no analysis:') == 1
    finally:
        _stop(client, node)


@pytest.mark.parametrize('buffer_cls', ['Buffer', 'HumbleBuffer'])
def test_buffer_follows_node_clock_and_clears_on_jump_back(client, standin, buffer_cls):
    """Clear the buffer once when sim time goes back (a looping bag).

    Whether the tf2 Buffer registers its own jump callback (Jazzy on) or not (Humble: the
    node adds one).
    """
    from rosgraph_msgs.msg import Clock
    impl = types.SimpleNamespace(Buffer=getattr(standin, buffer_cls),
                                 TransformListener=standin.TransformListener)
    wd_tf.use_tf2_implementation(impl)
    node = _start(client, 'distributor', dict(BASE, use_sim_time=True))
    try:
        buffer = standin.Buffer.instances[-1]
        assert buffer.node is node  # built with the node, so it follows the node's clock
        pub = client.publisher(Clock, '/clock')
        assert client.wait_matched(publishers=[pub])

        def tick(sec: int) -> None:
            m = Clock()
            m.clock.sec = sec
            pub.publish(m)
            client.spin_for(0.2)
        for sec in (100, 101, 102):
            tick(sec)
        assert node.get_clock().now().nanoseconds == 102_000_000_000
        assert buffer.clear_count == 0
        tick(10)
        assert client.spin_until(lambda: buffer.clear_count > 0, 2.0), 'not cleared on a jump back'
        client.spin_for(0.2)
        assert buffer.clear_count == 1
    finally:
        _stop(client, node)
