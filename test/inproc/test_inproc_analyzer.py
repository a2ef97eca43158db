"""The analyzer node's callbacks in this process, through its topics only (no DDS, no waiting).

Readings are synthesised here by hand (a grasp matrix, a squeeze as equal and opposite forces
along the line joining two contacts, the sensor transport of the brief), so the expected
values never come from the code under test: synchronised readings give back their resultant
and the prescribed internal load, a skewed, late or bad reading is dropped and diagnosed,
outputs never go backwards, and runtime parameters are validated before they apply.
"""
import math
import struct
import warnings

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from rosgraph_msgs.msg import Clock
from scipy.spatial.transform import Rotation

from inproc import InProcessNode, ros_context
from ros_harness import big_endian_wrench_payload, stamped_wrench
from wrench_distribution.analyzer_node import AnalyzerNode
from wrench_distribution.config import ANALYZER_PARAMS
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.core.messages import wrench_to_array
from wrench_distribution.ros.diagnostics import ERROR, level_of, WARN

pytestmark = [pytest.mark.ros, pytest.mark.inproc]

S2 = math.sqrt(0.5)
DIAG_PERIOD = 0.25  # tells the diagnostics timer from the drop-summary timer (10 s)
ARMS = {  # two rigid grippers facing each other
    'names': ['left', 'right'], 'types': ['rigid', 'rigid'],
    'positions': np.array([[0.0, 0.3, 0.0], [0.0, -0.3, 0.0]]),
    'quats': np.array([[S2, 0.0, 0.0, S2], [-S2, 0.0, 0.0, S2]]),
    'com': np.array([0.02, 0.0, 0.05]),
}
FINGERS = {  # three point contacts around a ball, z axes inwards
    'names': ['thumb', 'index', 'middle'], 'types': ['point'] * 3,
    'positions': np.array([[0.04, 0.0, 0.0], [-0.02, 0.035, 0.0], [-0.02, -0.035, 0.01]]),
    'quats': Rotation.from_euler('yx', [[-90, 0], [90, -20], [90, 20]], degrees=True).as_quat(),
    'com': np.array([0.0, 0.0, 0.005]),
}
GRASPS = {'arms': ARMS, 'fingers': FINGERS}


def params(grasp: dict, **extra) -> dict:
    n = len(grasp['names'])
    return dict({
        'effectors': grasp['names'], 'contact_types': grasp['types'], 'contact_source': 'static',
        'contact_positions': grasp['positions'].ravel().tolist(),
        'contact_orientations': grasp['quats'].ravel().tolist(),
        'object_com': grasp['com'].tolist(), 'object_frame': 'object',
        'diagnostics_period': DIAG_PERIOD, 'sync_tolerance': 0.005, 'max_age': 0.0,
        'ft_frames': [f'{e}_ft' for e in grasp['names']], 'sensor_signs': [1] * n,
    }, **extra)


@pytest.fixture(scope='module')
def ctx():
    with ros_context() as c:
        yield c


@pytest.fixture(scope='module')
def nodes(ctx):
    """One analyzer per grasp, shared by the examples of a property (stamps keep increasing)."""
    made = {k: InProcessNode(AnalyzerNode, ctx, params(g), ANALYZER_PARAMS) for k, g in GRASPS.items()}
    yield made
    for n in made.values():
        n.close()


def node(ctx, grasp=ARMS, **extra) -> InProcessNode:
    return InProcessNode(AnalyzerNode, ctx, params(grasp, **extra), ANALYZER_PARAMS)


def resultant(h, grasp: dict) -> np.ndarray:
    """Wrench of contact-frame wrenches on the object about the CoM: the grasp matrix by hand."""
    h = np.asarray(h, float)
    rot = Rotation.from_quat(grasp['quats'])
    f = rot.apply(h[:, :3])
    t = rot.apply(h[:, 3:]) + np.cross(grasp['positions'] - grasp['com'], f)
    return np.concatenate([f.sum(axis=0), t.sum(axis=0)])


def squeeze(grasp: dict, a: int, b: int, value: float) -> np.ndarray:
    """Contact-frame wrenches of a squeeze: ``+value e`` at ``a``, ``-value e`` at ``b``, e from a to b."""
    p = grasp['positions']
    e = (p[b] - p[a]) / np.linalg.norm(p[b] - p[a])
    h = np.zeros((len(p), 6))
    rot = Rotation.from_quat(grasp['quats'])
    h[a, :3] = rot[a].inv().apply(value * e)
    h[b, :3] = rot[b].inv().apply(-value * e)
    return h


_STAMP = [1_000_000_000]


def next_stamp(step_ns: int = 1_000_000) -> int:
    _STAMP[0] += step_ns
    return _STAMP[0]


def feed(n: InProcessNode, readings, stamps, names, frames=None) -> None:
    """Deliver one reading per effector, in order (the node never warns while it works)."""
    with warnings.catch_warnings():
        warnings.simplefilter('error', RuntimeWarning)
        for i, (e, r, s) in enumerate(zip(names, readings, stamps)):
            n.deliver(f'{e}/ft_sensor', stamped_wrench(r, s, frames[i] if frames else f'{e}_ft'))


def outputs(n: InProcessNode, names) -> dict:
    """Return the latest analysis: every output of the node, as arrays (None when nothing came)."""
    obj = n.last('object_wrench')
    if obj is None:
        return None
    return {'stamp': stamp_to_ns(obj.header.stamp), 'object': wrench_to_array(obj.wrench),
            'man': np.array([wrench_to_array(n.last(f'{e}/wrench_manipulating').wrench) for e in names]),
            'con': np.array([wrench_to_array(n.last(f'{e}/wrench_constraint').wrench) for e in names]),
            'frames': [n.last(f'{e}/wrench_manipulating').header.frame_id for e in names],
            'lambda': np.asarray(n.last('measured/internal_load').data),
            'basis': n.last('measured/internal_load').layout.dim[0].label.split(';'),
            'norm': n.last('measured/internal_load_norm').data}


def analyse(n: InProcessNode, h, names) -> dict:
    n.clear()
    stamp = next_stamp()
    feed(n, h, [stamp] * len(names), names)
    out = outputs(n, names)
    assert out is not None and out['stamp'] == stamp
    return out


def diagnose(n: InProcessNode) -> dict:
    """Fire the diagnostics timer; return the statuses it published, by concern."""
    assert n.fire_timers(DIAG_PERIOD) == 1
    return {st.name.split(': ', 1)[1]: st for st in n.last('/diagnostics').status}


def counters(n: InProcessNode) -> dict:
    return {kv.key: kv.value for kv in diagnose(n)['analysis'].values}


wrench_values = st.floats(min_value=-30.0, max_value=30.0)


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(sorted(GRASPS)), data=st.data(), value=st.floats(min_value=-40.0, max_value=40.0))
def test_resultant_reproduced_and_a_squeeze_read_back(nodes, kind, data, value):
    grasp, n = GRASPS[kind], nodes[kind]
    names = grasp['names']
    k = len(names)
    h = np.array(data.draw(st.lists(st.lists(wrench_values, min_size=6, max_size=6), min_size=k, max_size=k)))
    if kind == 'fingers':
        h[:, 3:] = 0.0  # point contacts transmit no torque
    a, b = data.draw(st.sampled_from([(i, j) for i in range(k) for j in range(i + 1, k)]))
    sq = squeeze(grasp, a, b, value)
    tol = 1e-9 * (1 + np.abs(h).max() + abs(value))
    base, squeezed, pure = (analyse(n, x, names) for x in (h, h + sq, sq))
    for out, x in ((base, h), (squeezed, h + sq), (pure, sq)):
        np.testing.assert_allclose(out['object'], resultant(x, grasp), atol=tol)
        np.testing.assert_allclose(out['man'] - out['con'], x, atol=tol)  # h_c = h_m - h (eq. 80)
        np.testing.assert_allclose(resultant(out['con'], grasp), 0.0, atol=tol)  # no net wrench
        assert out['frames'] == [f'{e}_contact' for e in names]
    # the read-out is linear: the squeeze shows in its own coordinate and nowhere else
    element = np.array([name == f'squeeze({names[a]},{names[b]})' for name in base['basis']], float)
    assert element.sum() == 1.0, base['basis']
    np.testing.assert_allclose(squeezed['lambda'] - base['lambda'], value * element, atol=tol)
    np.testing.assert_allclose(pure['lambda'], value * element, atol=tol)
    assert pure['norm'] == pytest.approx(abs(value), abs=tol)  # docs/theory.md 5: a squeeze F reads F


def to_sensor(h, grasp: dict, sensors: dict, gravity) -> np.ndarray:
    """Return the readings that produce contact wrenches ``h``: the brief's transport inverted, by hand.

    Contact from sensor: ``f = R s (r_f + m g_s)``, ``t = R s (r_t + c x m g_s) + p x f``.
    """
    out = []
    for i, hi in enumerate(np.asarray(h, float)):
        rs = Rotation.from_quat(sensors['quats'][i])
        p, sign = sensors['positions'][i], sensors['signs'][i]
        g_s = rs.inv().apply(Rotation.from_quat(grasp['quats'][i]).inv().apply(gravity))
        weight = sensors['masses'][i] * g_s
        f_s = rs.inv().apply(hi[:3])
        t_s = rs.inv().apply(hi[3:] - np.cross(p, hi[:3]))
        out.append(sign * np.concatenate([f_s - weight, t_s - np.cross(sensors['coms'][i], weight)]))
    return np.array(out)


def test_sensor_models_turn_readings_into_the_applied_wrenches(ctx):
    sensors = {'positions': np.array([[0.0, 0.0, -0.08], [0.01, 0.0, -0.1]]),
               'quats': np.array([[0.0, 0.0, S2, S2], [0.0, 0.0, 0.0, 1.0]]),
               'signs': [-1, 1], 'masses': [0.9, 0.5], 'coms': np.array([[0, 0, 0.04], [0, 0.01, 0.03]])}
    gravity = np.array([0.0, 0.0, -9.81])
    h = np.array([[1.0, 12.0, -3.0, 0.2, 0.1, 0.0], [-2.0, 9.0, 4.0, 0.0, -0.3, 0.1]])
    with node(ctx, sensor_positions=sensors['positions'].ravel().tolist(),
              sensor_orientations=sensors['quats'].ravel().tolist(), sensor_signs=sensors['signs'],
              tool_masses=sensors['masses'], tool_coms=sensors['coms'].ravel().tolist(),
              gravity=gravity.tolist()) as n:
        out = analyse(n, to_sensor(h, ARMS, sensors, gravity), ARMS['names'])
        np.testing.assert_allclose(out['man'] - out['con'], h, atol=1e-9)
        np.testing.assert_allclose(out['object'], resultant(h, ARMS), atol=1e-9)


def test_skewed_late_and_bad_readings_are_dropped_and_diagnosed(ctx):
    names = ARMS['names']
    h = np.array([[0.0, 5.0, 2.0, 0.0, 0.0, 0.0], [0.0, 5.0, 2.0, 0.0, 0.0, 0.0]])
    with node(ctx) as n:
        s = next_stamp()
        feed(n, h, [s, s + 50_000_000], names)  # 50 ms apart > sync_tolerance 5 ms
        assert n.last('object_wrench') is None
        status = diagnose(n)['input']
        assert level_of(status) == WARN and 'out of sync' in status.message, status.message
        assert counters(n)['skew_drops'] == '1'
        # the newer reading waits for its partner: a matching one completes the sample
        feed(n, h[:1], [s + 50_000_000], names[:1])
        assert outputs(n, names)['stamp'] == s + 50_000_000
        np.testing.assert_allclose(outputs(n, names)['object'], resultant(h, ARMS), atol=1e-9)
        n.clear()
        for readings, frames, text, key in (
                (np.where(np.arange(6) == 2, np.nan, h), None, "'left' contains NaN", 'dropped.left.nan'),
                (h, ['right_ft', 'left_ft'], "expected 'left_ft'", 'dropped.left.frame'),
                (h, None, 'before (or at) the last published', 'dropped.left.out_of_order')):
            stamp = s + 10_000_000 if key.endswith('out_of_order') else next_stamp(100_000_000)
            feed(n, readings, [stamp] * 2, names, frames)
            assert n.last('object_wrench') is None, key
            status = diagnose(n)['input']
            assert level_of(status) >= WARN and text in status.message, (text, status.message)
            assert int(counters(n)[key]) == 1
            feed(n, h, [next_stamp(100_000_000)] * 2, names)  # recovery: outputs again
            assert n.last('object_wrench') is not None
            n.clear()


def test_stale_samples_dropped_on_the_node_clock(ctx):
    """Under ``use_sim_time`` the node clock comes by ``/clock``: a sample older than max_age is dropped."""
    names = ARMS['names']
    h = np.zeros((2, 6))
    h[:, 1] = 3.0
    with node(ctx, use_sim_time=True, max_age=1.0) as n:
        t = 500_000_000_000
        clock = Clock()
        clock.clock.sec, clock.clock.nanosec = divmod(t, 1_000_000_000)
        n.deliver('/clock', clock)
        feed(n, h, [t - 5_000_000_000] * 2, names)
        assert n.last('object_wrench') is None
        status = diagnose(n)['input']
        assert 'stale' in status.message and counters(n)['stale_drops'] == '1'
        feed(n, h, [t - 500_000_000] * 2, names)
        assert outputs(n, names)['stamp'] == t - 500_000_000


events = st.lists(st.tuples(st.integers(0, 1), st.integers(-3, 6), st.booleans()), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(events=events)
def test_outputs_never_go_backwards_and_always_match_the_readings(ctx, events):
    """Readings of two streams, stamps jittered by up to 6 ms, some NaN: what comes out is right."""
    names = ARMS['names']
    with node(ctx) as n:
        t0 = next_stamp(1_000_000_000)
        latest = np.zeros((2, 6))
        for j, (i, jitter_ms, nan) in enumerate(events):
            r = np.array([j, i, 10.0, 0.1 * j, 0.0, -0.1 * i])
            if nan:
                r[0] = np.nan
            stamp = t0 + j * 10_000_000 + jitter_ms * 1_000_000
            before = len(n.published('object_wrench'))
            with warnings.catch_warnings():
                warnings.simplefilter('error', RuntimeWarning)
                n.deliver(f'{names[i]}/ft_sensor', stamped_wrench(r, stamp, f'{names[i]}_ft'))
            if not nan:
                latest[i] = r
            if len(n.published('object_wrench')) > before:  # a sample: the latest two readings
                assert not nan
                np.testing.assert_allclose(wrench_to_array(n.last('object_wrench').wrench),
                                           resultant(latest, ARMS), atol=1e-9)
        stamps = [stamp_to_ns(m.header.stamp) for m in n.published('object_wrench')]
        assert stamps == sorted(set(stamps))
        assert all(np.isfinite(wrench_to_array(m.wrench)).all() for m in n.published('object_wrench'))


def test_runtime_parameters_refused_with_the_name_or_applied(ctx):
    names = ARMS['names']
    h = np.array([[0.0, 5.0, 2.0, 0.0, 0.0, 0.0], [0.0, 5.0, 2.0, 0.0, 0.0, 0.0]])
    with node(ctx) as n:
        for name, value in (('sync_tolerance', -1.0), ('max_age', -0.5), ('torque_share', 2.0),
                            ('output_frame', 'sideways')):
            res = n.set_parameters(**{name: value})[0]
            assert not res.successful and name in res.reason, (name, res.reason)
        res = n.set_parameters(effectors=['a', 'b'])[0]
        assert not res.successful and 'read-only' in res.reason
        assert n.node.get_parameter('sync_tolerance').value == 0.005
        assert n.set_parameters(sync_tolerance=0.1)[0].successful
        s = next_stamp()
        feed(n, h, [s, s + 50_000_000], names)  # now within tolerance
        assert outputs(n, names)['stamp'] == s + 50_000_000
        next_stamp(100_000_000)  # past the last output
        assert n.set_parameters(torque_share=0.5)[0].successful
        out = analyse(n, h, names)
        np.testing.assert_allclose(out['object'], resultant(h, ARMS), atol=1e-9)
        np.testing.assert_allclose(out['man'] - out['con'], h, atol=1e-9)


def test_a_missing_stream_is_named(ctx):
    with node(ctx) as n:
        feed(n, np.zeros((1, 6)), [next_stamp()], ['left'])
        status = diagnose(n)['input']
        assert level_of(status) == WARN and 'no F/T data yet from: right' in status.message
        assert n.last('object_wrench') is None


def test_object_frame_outputs_are_the_contact_ones_in_object_axes(ctx):
    h = np.array([[1.0, 12.0, -3.0, 0.2, 0.1, 0.0], [-2.0, 9.0, 4.0, 0.0, -0.3, 0.1]])
    with node(ctx) as in_contact, node(ctx, output_frame='object') as in_object:
        a = analyse(in_contact, h, ARMS['names'])
        b = analyse(in_object, h, ARMS['names'])
    rot = Rotation.from_quat(ARMS['quats'])
    for part in ('man', 'con'):
        np.testing.assert_allclose(b[part][:, :3], rot.apply(a[part][:, :3]), atol=1e-9)
        np.testing.assert_allclose(b[part][:, 3:], rot.apply(a[part][:, 3:]), atol=1e-9)
    assert b['frames'] == ['object', 'object']
    np.testing.assert_allclose(b['object'], a['object'], atol=1e-9)
    np.testing.assert_allclose(b['lambda'], a['lambda'], atol=1e-9)


#: Every int32 stamp, any frame id (unicode, empty), any six doubles (NaN and Inf included).
raw_wrench_cases = given(
    sec=st.integers(-2**31, 2**31 - 1), nanosec=st.integers(0, 999_999_999),
    frame=st.text(st.characters(blacklist_characters='\x00', blacklist_categories=('Cs',)),
                  max_size=40),
    values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=6,
                    max_size=6))


@settings(max_examples=200, deadline=None)
@raw_wrench_cases
def test_a_raw_reading_decodes_to_what_rclpy_serialized(sec, nanosec, frame, values):
    from rclpy.serialization import serialize_message
    from wrench_distribution.core.codec import decode_wrench_payload
    msg = stamped_wrench(values, 0, frame)
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    stamp_ns, frame_id, wrench = decode_wrench_payload(serialize_message(msg))
    assert stamp_ns == sec * 1_000_000_000 + nanosec
    assert frame_id == frame
    # bit for bit, component by component (NaN payloads and signed zeros included)
    assert struct.pack('<6d', *wrench) == struct.pack('<6d', *values)
    assert decode_wrench_payload(big_endian_wrench_payload(values, 0, frame)) is None  # rclpy's then


@settings(max_examples=200, deadline=None)
@raw_wrench_cases
def test_an_encoded_wrench_is_what_rclpy_reads(sec, nanosec, frame, values):
    """What the nodes publish raw (commands, the analyzer's wrenches) read by rclpy's own decoder."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import deserialize_message, serialize_message
    from wrench_distribution.core.codec import decode_wrench_payload, encode_wrench_payload
    payload = encode_wrench_payload(sec * 1_000_000_000 + nanosec, frame, values)
    msg = deserialize_message(payload, WrenchStamped)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (sec, nanosec)
    assert msg.header.frame_id == frame
    assert struct.pack('<6d', *wrench_to_array(msg.wrench)) == struct.pack('<6d', *values)
    assert len(payload) == len(serialize_message(msg))  # the same layout, padding included
    stamp_ns, frame_id, wrench = decode_wrench_payload(payload)
    assert (stamp_ns, frame_id) == (sec * 1_000_000_000 + nanosec, frame)
    assert struct.pack('<6d', *wrench) == struct.pack('<6d', *values)


@settings(max_examples=200, deadline=None)
@given(names=st.lists(st.text(st.characters(blacklist_characters='\x00;', blacklist_categories=('Cs',)),
                              min_size=1, max_size=20), max_size=7),
       health=st.one_of(st.none(), st.text(st.characters(blacklist_characters='\x00', blacklist_categories=('Cs',)),
                                           max_size=90)),
       values=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=7))
def test_an_encoded_labelled_array_is_what_rclpy_reads(names, health, values):
    """A labelled array published raw is what rclpy's own decoder reads, laid out as its serializer does.

    The measured internal load with its health label, the actual contact weights without.
    """
    from rclpy.serialization import deserialize_message, serialize_message
    from std_msgs.msg import Float64MultiArray
    from wrench_distribution.core.codec import LabelledPayloads
    payloads = LabelledPayloads(names)
    payloads.encode([1.0] * 3, 'x' if health is None else None)  # another label and count first: the formats follow
    payload = payloads.encode(values, health)
    msg = deserialize_message(payload, Float64MultiArray)
    assert [(d.label, d.size, d.stride) for d in msg.layout.dim] == [
        (';'.join(names), len(names), len(names))] + ([] if health is None else [(health, 1, 1)])
    assert msg.layout.data_offset == 0
    assert struct.pack(f'<{len(values)}d', *msg.data) == struct.pack(f'<{len(values)}d', *values)
    assert len(payload) == len(serialize_message(msg))  # the same layout, padding included


def test_readings_in_either_byte_order_are_analysed_alike_and_garbage_is_dropped(ctx):
    from rclpy.serialization import deserialize_message
    from geometry_msgs.msg import WrenchStamped
    names = ARMS['names']
    h = np.array([[0.5, 5.0, 2.0, 0.1, 0.0, -0.2], [0.0, -5.0, 2.5, 0.0, 0.3, 0.0]])
    stamp = next_stamp()
    payload = big_endian_wrench_payload(h[1], stamp, 'right_ft')
    checked = deserialize_message(payload, WrenchStamped)  # the layout above is what rclpy reads
    assert wrench_to_array(checked.wrench).tolist() == h[1].tolist()
    with node(ctx) as n:
        n.deliver('left/ft_sensor', stamped_wrench(h[0], stamp, 'left_ft'))
        n.deliver('right/ft_sensor', payload)
        out = outputs(n, names)
        assert out is not None and out['stamp'] == stamp
        np.testing.assert_allclose(out['object'], resultant(h, ARMS), atol=1e-9)
        n.clear()
        for garbage in (b'', b'\x00\x01\x00\x00abc', b'\x00\x01\x00\x00' + bytes(range(60))):
            n.deliver('left/ft_sensor', garbage)
        n.deliver('right/ft_sensor', stamped_wrench(h[1], next_stamp(), 'right_ft'))
        assert n.last('object_wrench') is None
        status = diagnose(n)['input']
        assert level_of(status) == ERROR and "'left' is not a WrenchStamped" in status.message
        assert int(counters(n)['dropped.left.malformed']) == 3
        feed(n, h, [next_stamp(100_000_000)] * 2, names)  # recovery: outputs again
        np.testing.assert_allclose(outputs(n, names)['object'], resultant(h, ARMS), atol=1e-9)


def test_an_output_the_middleware_refuses_is_an_error_and_the_others_still_come(ctx):
    """A sample Fast DDS refuses (rclpy raises, ros2/rclcpp#827) is an ERROR naming the topic, no crash."""
    names = ARMS['names']
    h = squeeze(ARMS, 0, 1, 12.0)
    with node(ctx) as n:
        reference = analyse(n, h, names)
        n.refuse('object_wrench')
        n.clear()
        stamp = next_stamp()
        feed(n, h, [stamp] * 2, names)
        assert not n.published('object_wrench')
        for e, expected in zip(names, reference['con']):  # the constraint parts still come, the same
            got = n.last(f'{e}/wrench_constraint')
            assert stamp_to_ns(got.header.stamp) == stamp
            np.testing.assert_array_equal(wrench_to_array(got.wrench), expected)
        np.testing.assert_array_equal(n.last('measured/internal_load').data, reference['lambda'])
        statuses = diagnose(n)
        assert level_of(statuses['outputs']) == ERROR
        assert '/object_wrench' in statuses['outputs'].message and 'refused' in statuses['outputs'].message
        n.refuse('object_wrench', False)
        np.testing.assert_array_equal(analyse(n, h, names)['object'], reference['object'])
        assert level_of(diagnose(n)['outputs']) != ERROR  # reported once, for the period it happened in
        assert counters(n)['refused_publishes'] == '1'
