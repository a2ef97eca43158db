"""Fault injection against the real nodes over DDS.

Every fault: nothing wrong is published (no command over a limit, no NaN, no output
stamped backwards), the fault is diagnosed in its own status (never hidden by STALE),
counted per source and cause, and the node recovers when the fault goes away.
"""
import math
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from ros_harness import domain_id_for, NodeProcess, stamped_wrench, TestClient
from wrench_distribution.core import Contact, LoadDistributor, ObjectModel
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.core.messages import wrench_to_array
from wrench_distribution.ros.diagnostics import level_of

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
S2 = math.sqrt(0.5)
POSITIONS = [[0.0, 0.3, 0.0], [0.0, -0.3, 0.0]]
QUATS = [[S2, 0.0, 0.0, S2], [-S2, 0.0, 0.0, S2]]
NAMES = ['left', 'right']
FORCE_LIMIT, TORQUE_LIMIT = 100.0, 20.0
BASE = {
    'effectors': NAMES, 'contact_types': ['rigid', 'rigid'], 'contact_source': 'static',
    'contact_positions': sum(POSITIONS, []), 'contact_orientations': sum(QUATS, []),
    'object_com': [0.0, 0.0, 0.05], 'object_frame': 'object', 'diagnostics_period': 0.2,
    'input_timeout': 0.0, 'force_limits': [FORCE_LIMIT], 'torque_limits': [TORQUE_LIMIT],
    'desired_force_limit': 150.0, 'desired_torque_limit': 30.0, 'internal_load_limit': 50.0,
    'summary_period': 1.0,
}


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN, 'wd_fault_client')
    yield c
    c.close()


def get_parameters(client: TestClient, node: str, names: list) -> dict:
    """``/<node>/get_parameters``: name -> (type, value) of what the node reports."""
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python
    cli = client.node.create_client(GetParameters, f'/{node}/get_parameters')
    try:
        assert cli.wait_for_service(timeout_sec=5.0)
        fut = cli.call_async(GetParameters.Request(names=names))
        client.executor.spin_until_future_complete(fut, timeout_sec=5.0)
        return {n: (v.type, parameter_value_to_python(v))
                for n, v in zip(names, fut.result().values)}
    finally:
        client.node.destroy_client(cli)


class Dist:
    """A distributor process's inputs, collected outputs and diagnostics."""

    stamp = [2_000_000_000]

    def __init__(self, c: TestClient) -> None:
        self.c = c
        self.pub = c.publisher(WrenchStamped, 'desired_wrench')
        self.il_pub = c.publisher(Float64MultiArray, 'internal_load')
        self.cmds = {n: c.collect(WrenchStamped, f'{n}/wrench_command') for n in NAMES}
        self.diag = c.collect(DiagnosticArray, '/diagnostics')
        self.all_cmds: list = []
        self.clear()
        assert c.wait_matched(publishers=[self.pub, self.il_pub],
                              topics=[f'{n}/wrench_command' for n in NAMES])
        end = time.monotonic() + 10.0
        while time.monotonic() < end and self.send([0, 0, 1, 0, 0, 0], wait=0.2) is None:
            pass
        c.spin_for(0.3)
        self.clear()

    def clear(self) -> None:
        for v in self.cmds.values():
            self.all_cmds.extend(wrench_to_array(m.wrench) for m in v)
            v.clear()
        self.diag.clear()

    def send(self, values, wait=3.0, stamp_ns=None):
        Dist.stamp[0] += 1_000_000
        s = stamp_ns if stamp_ns is not None else Dist.stamp[0]
        self.pub.publish(stamped_wrench(values, s, 'object'))

        def got() -> bool:
            return all(any(stamp_to_ns(m.header.stamp) == s for m in v)
                       for v in self.cmds.values())
        if not self.c.spin_until(got, wait):
            return None
        return np.array([wrench_to_array(next(
            m for m in self.cmds[n] if stamp_to_ns(m.header.stamp) == s).wrench) for n in NAMES])

    def status(self, concern: str, text: str = '', timeout: float = 3.0):
        """Wait for a status of a concern whose message contains a text; return it."""
        found = []

        def ok() -> bool:
            for a in self.diag:
                for st in a.status:
                    if st.name.endswith(f': {concern}') and text in st.message:
                        found.append(st)
                        return True
            return False
        self.c.spin_until(ok, timeout)
        return found[0] if found else None

    def counter(self, key: str) -> int:
        for a in reversed(self.diag):
            for st in a.status:
                if st.name.endswith(': distribution'):
                    return int({kv.key: kv.value for kv in st.values}.get(key, 0))
        return 0

    def wait_counter(self, key: str, at_least: int = 1, timeout: float = 3.0) -> int:
        self.c.spin_until(lambda: self.counter(key) >= at_least, timeout)
        return self.counter(key)

    def assert_within_limits(self) -> None:
        self.clear()
        for w in self.all_cmds:
            assert np.all(np.isfinite(w))
            assert np.linalg.norm(w[:3]) <= FORCE_LIMIT * (1 + 1e-12), w
            assert np.linalg.norm(w[3:]) <= TORQUE_LIMIT * (1 + 1e-12), w


def squeeze(value: float) -> Float64MultiArray:
    m = Float64MultiArray(data=[value])
    m.layout.dim = [MultiArrayDimension(label='squeeze(left,right)', size=1, stride=1)]
    return m


def resultant(cmds) -> np.ndarray:
    """Resultant of contact-frame commands about the object CoM (independent of the node)."""
    from wrench_distribution.core import quaternion_to_matrix, transform_wrench
    total = np.zeros(6)
    for w, p, q in zip(cmds, POSITIONS, QUATS):
        total += transform_wrench(w, quaternion_to_matrix(q), np.asarray(p))
    total[3:] -= np.cross(np.asarray(BASE['object_com']), total[:3])
    return total


def test_huge_internal_loads_are_refused_with_the_figure(client):
    with NodeProcess('distributor', BASE, DOMAIN) as proc:
        d = Dist(client)
        good = d.send([0, 0, 20, 0, 0, 0])
        dist = LoadDistributor([Contact(n, 'rigid', p, q) for n, p, q in
                                zip(NAMES, POSITIONS, QUATS)], ObjectModel(BASE['object_com']))
        m = len(dist.basis_names)
        for bad, figure in (([1e300] + [0.0] * (m - 1), '1e+300'),
                            ([1.7e308] * m, '1.7e+308'), (None, '1e+09')):
            d.il_pub.publish(Float64MultiArray(data=bad) if bad else squeeze(1e9))
            st = d.status('internal load', figure)
            assert st is not None and level_of(st) == 2, proc.output()
            # the previous prescription (none) stays: the same commands as before
            np.testing.assert_allclose(d.send([0, 0, 20, 0, 0, 0]), good, atol=1e-9)
        assert d.wait_counter('rejected_internal_load') >= 3
        # by parameter: refused with the reason, nothing changes
        res = client.set_parameters('wrench_distributor', [Parameter(
            'internal_load', Parameter.Type.DOUBLE_ARRAY, [1e300] + [0.0] * (m - 1))])
        assert not res[0].successful and 'internal_load_limit' in res[0].reason
        np.testing.assert_allclose(d.send([0, 0, 20, 0, 0, 0]), good, atol=1e-9)
        # recovery: a sane squeeze is taken
        d.il_pub.publish(squeeze(10.0))
        client.spin_for(0.3)
        cmds = d.send([0, 0, 20, 0, 0, 0])
        np.testing.assert_allclose(resultant(cmds), [0, 0, 20, 0, 0, 0], atol=1e-9)
        assert not np.allclose(cmds, good)
        d.assert_within_limits()
    out = proc.output()
    assert 'Traceback' not in out and 'RuntimeWarning' not in out


@pytest.mark.parametrize('policy', ['hold', 'zero', 'scale'])
def test_desired_wrench_over_a_limit(client, policy):
    with NodeProcess('distributor', dict(BASE, on_limit=policy), DOMAIN) as proc:
        d = Dist(client)
        good = d.send([0, 0, 20, 0, 0, 0])
        for desired, what in (([0, 0, 1e300, 0, 0, 0], 'desired force 1e+300 N'),
                              ([1.7e308] * 6, 'desired force inf N'),
                              ([0, 0, 140, 25, 0, 0], "force of '")):
            cmds = d.send(desired)
            st = d.status('limits', what)
            assert st is not None and level_of(st) == 2, (what, proc.output())
            if policy == 'hold':
                np.testing.assert_allclose(cmds, good, atol=1e-12)
            elif policy == 'zero':
                assert np.all(cmds == 0.0)
            else:  # the whole set scaled: same direction, inside every limit
                r = resultant(cmds)
                s = r[2] / desired[2] if desired[2] < 1e300 else None
                if s is not None:
                    assert 0 < s < 1
                    np.testing.assert_allclose(r, s * np.asarray(desired, float), atol=1e-6)
                assert 'scaled by' in st.message
        assert d.wait_counter('dropped.desired_wrench.limit') >= 3
        # recovery: a valid wrench gives exact commands again
        np.testing.assert_allclose(resultant(d.send([1, 2, 30, 0.1, 0, 0])),
                                   [1, 2, 30, 0.1, 0, 0], atol=1e-9)
        d.assert_within_limits()
    out = proc.output()
    assert 'Traceback' not in out and 'RuntimeWarning' not in out


def test_watchdog_and_diagnostics_without_clock_under_sim_time(client):
    params = dict(BASE, use_sim_time=True, input_timeout=0.3, on_timeout='zero')
    with NodeProcess('distributor', params, DOMAIN) as proc:
        d = Dist(client)  # commands flow although no /clock is published
        assert d.send([0, 0, 10, 0, 0, 0]) is not None
        client.spin_for(0.1)
        d.clear()
        # the input stops: zeros within the timeout on the steady clock
        assert client.spin_until(lambda: len(d.cmds['left']) >= 3, 3.0), proc.output()
        assert all(np.all(wrench_to_array(m.wrench) == 0.0) for m in d.cmds['left'])
        st = d.status('clock', 'no /clock')
        assert st is not None and level_of(st) == 2
        n0 = len(d.diag)  # /diagnostics keep coming (0.2 s period; bounded for a loaded machine)
        assert client.spin_until(lambda: len(d.diag) - n0 >= 3, 5.0), proc.output()
        assert d.counter('timeouts') >= 1
        # and recovers when input comes back
        assert d.send([0, 0, 10, 0, 0, 0]) is not None


def test_use_sim_time_set_at_runtime_keeps_watchdog(client):
    params = dict(BASE, input_timeout=0.3, on_timeout='zero')
    with NodeProcess('distributor', params, DOMAIN):
        d = Dist(client)
        res = client.set_parameters('wrench_distributor', [
            Parameter('use_sim_time', Parameter.Type.BOOL, True)])
        assert res[0].successful
        assert d.send([0, 0, 10, 0, 0, 0]) is not None
        d.clear()
        assert client.spin_until(lambda: len(d.cmds['left']) >= 3, 3.0)
        assert all(np.all(wrench_to_array(m.wrench) == 0.0) for m in d.cmds['left'])
        assert d.status('clock', '/clock') is not None


def test_diagnostics_tell_what_is_in_force_and_parameters_stay_as_set(client):
    params = dict(BASE, internal_load_handles=['squeeze(left,right)=15.0'])
    with NodeProcess('distributor', params, DOMAIN) as proc:
        d = Dist(client)
        got = get_parameters(client, 'wrench_distributor', ['internal_load', 'command_topics'])
        # an empty array is a real, typed value (8: PARAMETER_DOUBLE_ARRAY, 9: STRING_ARRAY)
        assert got['internal_load'] == (8, []) and got['command_topics'] == (9, [])
        # every declared parameter has a value (ros2 param dump lists them all)
        from wrench_distribution.config import DISTRIBUTOR_PARAMS
        every = get_parameters(client, 'wrench_distributor', [p.name for p in DISTRIBUTOR_PARAMS])
        assert len(every) == len(DISTRIBUTOR_PARAMS) and all(t != 0 for t, _ in every.values())
        res = client.set_parameters('wrench_distributor', [  # still read-only
            Parameter('command_topics', Parameter.Type.STRING_ARRAY, ['a', 'b'])])
        assert not res[0].successful
        squeeze15 = d.send([0, 0, 20, 0, 0, 0])
        # a prescription by topic: the diagnostics say "topic" and show it; the node never
        # writes its own parameters, so they keep what was set through them
        d.il_pub.publish(squeeze(5.0))
        assert client.spin_until(lambda: any(
            kv.key == 'internal_load_source' and kv.value == 'topic'
            for a in d.diag for st in a.status for kv in st.values), 3.0)
        assert client.spin_until(lambda: any(
            kv.key == 'internal_load_prescription' and kv.value == 'handles squeeze(left,right)=5'
            for a in d.diag for st in a.status for kv in st.values), 3.0)
        assert d.status('internal load') is not None
        assert get_parameters(client, 'wrench_distributor', ['internal_load_handles'])[
            'internal_load_handles'][1] == ['squeeze(left,right)=15.0']
        squeeze5 = d.send([0, 0, 20, 0, 0, 0])
        np.testing.assert_allclose(resultant(squeeze5), [0, 0, 20, 0, 0, 0], atol=1e-9)
        assert not np.allclose(squeeze5, squeeze15)  # the topic's squeeze is in force
        # clearing the prescription clears it (no older squeeze comes back)
        d.clear()
        res = client.set_parameters('wrench_distributor', [
            Parameter('internal_load_handles', Parameter.Type.STRING_ARRAY, [])])
        assert res[0].successful
        client.spin_for(0.2)
        none = d.send([0, 0, 20, 0, 0, 0])
        np.testing.assert_allclose(resultant(none), [0, 0, 20, 0, 0, 0], atol=1e-9)
        # no internal load: the two grippers push along +z only (equal shares), no squeeze
        assert not np.allclose(none, squeeze15)
        assert client.spin_until(lambda: any(
            kv.key == 'internal_load_prescription' and kv.value == 'none'
            for a in d.diag for st in a.status for kv in st.values), 3.0)
        got = get_parameters(client, 'wrench_distributor',
                             ['internal_load', 'internal_load_handles'])
        assert got['internal_load'][1] == [] and got['internal_load_handles'][1] == []
    assert 'Traceback' not in proc.output()


def test_error_never_hidden_by_stale_and_logs_per_reason(client):
    params = dict(BASE, input_timeout=0.3, on_timeout='stop')
    with NodeProcess('distributor', params, DOMAIN) as proc:
        d = Dist(client)
        d.send([0, 0, 10, 0, 0, 0])
        assert d.status('input', 'input timeout') is not None  # STALE
        d.pub.publish(stamped_wrench([0, 0, 1, 0, 0, 0], Dist.stamp[0] + 1, 'world'))
        client.spin_for(0.3)
        d.pub.publish(stamped_wrench([math.nan, 0, 1, 0, 0, 0], Dist.stamp[0] + 2, 'object'))
        # a stamp 10 s in the future of the node clock
        d.send([0, 0, 1, 0, 0, 0], wait=0.3, stamp_ns=time.time_ns() + 10_000_000_000)

        def summary_error() -> bool:
            return any(st.name.endswith(': distribution') and level_of(st) == 2
                       and 'NaN' in st.message for a in d.diag for st in a.status)
        assert client.spin_until(summary_error, 3.0)
        assert d.wait_counter('dropped.desired_wrench.future') == 1
        assert d.counter('dropped.desired_wrench.frame') == 1
        assert d.counter('dropped.desired_wrench.nan') == 1
        client.spin_for(1.2)  # the periodic summary line
    out = proc.output()
    # both reasons logged although 0.3 s apart (throttled per reason, not per node)
    assert "frame 'world'" in out and 'NaN or Inf' in out and 'ahead of the node clock' in out
    assert 'dropped inputs: desired_wrench:' in out and 'frame 1' in out


# -- analyzer ---------------------------------------------------------------------------
# reliable inputs with room for every reading sent: what is counted is the analyzer's drops,
# never DDS's (best effort loses readings while a loaded machine delays the node)
ANALYZER = dict(BASE, max_age=0.0, sync_tolerance=0.002, ft_frames=['left_ft', 'right_ft'],
                input_qos='reliable', qos_depth=100)
for _k in ('input_timeout', 'force_limits', 'torque_limits', 'desired_force_limit',
           'desired_torque_limit', 'internal_load_limit'):
    ANALYZER.pop(_k)


class Ana:
    def __init__(self, c: TestClient) -> None:
        self.c = c
        self.pubs = [c.publisher(WrenchStamped, f'{n}/ft_sensor', 100) for n in NAMES]
        self.out = c.collect(WrenchStamped, 'object_wrench')
        self.diag = c.collect(DiagnosticArray, '/diagnostics')
        assert c.wait_matched(publishers=self.pubs, topics=['object_wrench'])

    def warm_up(self, first_ns: int) -> dict:
        """Send pairs from ``first_ns`` on until one comes out, then return the counters then.

        A publisher matched to the node is not yet a node that takes its readings (discovery
        ends on each side in its own time, later on a loaded machine): counting starts here.
        """
        for k in range(100):
            stamp = first_ns + k * 2_000_000
            self.pair(stamp)
            if self.c.spin_until(lambda: any(stamp_to_ns(m.header.stamp) == stamp for m in self.out), 0.2):
                break
        assert any(stamp_to_ns(m.header.stamp) == stamp for m in self.out), 'no output in 100 pairs'
        # one more pair, once both streams reach the node: whatever a reading that came alone
        # left in a slot is dropped now, before the counts start
        stamp += 2_000_000
        self.pair(stamp)
        assert self.c.spin_until(lambda: any(stamp_to_ns(m.header.stamp) == stamp for m in self.out), 10.0)
        return self.still()

    def still(self, arrays: int = 3, timeout: float = 10.0) -> dict:
        """Return the counters once ``arrays`` diagnostics arrays in a row carry the same counts.

        Nothing is sent meanwhile: the counters have settled, even when this process reads the
        arrays late (a loaded machine), which one or two fresh arrays do not ensure.
        """
        seen = []

        def same() -> bool:
            if not self.diag:
                return False
            if not seen or seen[-1][0] is not self.diag[-1]:
                seen.append((self.diag[-1], {k: v for k, v in self.counters().items()
                                             if k.startswith('dropped.') or k == 'samples_published'}))
            return len(seen) >= arrays and all(c == seen[-1][1] for _, c in seen[-arrays:])
        self.diag.clear()
        assert self.c.spin_until(same, timeout), seen[-arrays:]
        return self.counters()

    def reading(self, i: int, stamp_ns: int, frame=None, values=(0, 0, 5, 0, 0, 0)) -> None:
        self.pubs[i].publish(stamped_wrench(values, stamp_ns, frame or f'{NAMES[i]}_ft'))
        self.c.spin_for(0.01)

    def pair(self, stamp_ns: int, frames=(None, None)) -> None:
        for i in (0, 1):
            self.reading(i, stamp_ns, frames[i])

    def counters(self) -> dict:
        for a in reversed(self.diag):
            for st in a.status:
                if st.name.endswith(': analysis'):
                    return {kv.key: kv.value for kv in st.values}
        return {}

    def count(self, key: str) -> int:
        return int(self.counters().get(key, 0))


def test_analyzer_counts_every_drop_and_never_goes_backwards(client):
    with NodeProcess('analyzer', ANALYZER, DOMAIN) as proc:
        a = Ana(client)
        t = time.time_ns() - 1_000_000_000
        base = a.warm_up(t - 1_000_000_000)

        def since(key: str) -> int:
            """Return a count since the warm-up (a prefix: the sum of the counters it starts)."""
            return sum(int(v) - int(base.get(k, 0)) for k, v in a.counters().items() if k.startswith(key))

        # the right sensor at half rate: every other left reading is counted
        for k in range(20):
            a.reading(0, t + k * 2_000_000)
            if k % 2:
                a.reading(1, t + k * 2_000_000)
        # counted in the diagnostics (one array per diagnostics_period): waits bounded by
        # what a loaded machine needs, ended as soon as the count is in
        assert client.spin_until(lambda: since('samples_published') >= 9, 10.0), (a.counters(), proc.output())
        client.spin_until(lambda: since('samples_published') + since('dropped.left.') >= 19, 10.0)
        assert since('dropped.left.unsynchronised') >= 9, a.counters()
        assert 19 <= since('samples_published') + since('dropped.left.') <= 20, a.counters()  # every reading
        # stamps going backwards: dropped, counted, never published
        n_pub = int(a.still()['samples_published'])
        last = t + 19 * 2_000_000
        a.pair(last - 500_000_000)
        assert client.spin_until(lambda: a.count('dropped.left.out_of_order') >= 1, 10.0)
        # a stamp 10 s in the future: dropped
        a.pair(time.time_ns() + 10_000_000_000)
        assert client.spin_until(lambda: a.count('dropped.left.future') >= 1, 10.0)
        # swapped sensors: wrong frame ids, dropped
        a.pair(last + 1_000_000, frames=('right_ft', 'left_ft'))
        assert client.spin_until(lambda: a.count('dropped.left.frame') >= 1
                                 and a.count('dropped.right.frame') >= 1, 10.0)
        # NaN: dropped
        a.reading(0, last + 2_000_000, values=(math.nan, 0, 0, 0, 0, 0))
        assert client.spin_until(lambda: a.count('dropped.left.nan') >= 1, 10.0)
        assert a.count('samples_published') == n_pub
        # recovery
        a.pair(last + 3_000_000)
        assert client.spin_until(lambda: a.count('samples_published') == n_pub + 1, 10.0)
        stamps = [stamp_to_ns(m.header.stamp) for m in a.out]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        assert all(np.all(np.isfinite(wrench_to_array(m.wrench))) for m in a.out)
        client.spin_for(1.2)
    out = proc.output()
    assert 'dropped inputs: left:' in out and 'unsynchronised' in out
    assert 'Traceback' not in out


def test_unknown_parameters_are_named_without_private_rclpy_state(client):
    """With allow_unknown_parameters the misspelling is a warning and the node runs on."""
    with NodeProcess('distributor', dict(BASE, no_such_limit=1.0, allow_unknown_parameters=True),
                     DOMAIN) as proc:
        Dist(client)
    assert "'no_such_limit' (did you mean" in proc.output()
    assert 'ignored (allow_unknown_parameters)' in proc.output()


def test_contact_poses_far_out_are_refused(client):
    from geometry_msgs.msg import Pose, PoseArray
    params = dict(BASE, contact_source='topic')
    del params['contact_positions'], params['contact_orientations']
    with NodeProcess('distributor', params, DOMAIN) as proc:
        pose_pub = client.publisher(PoseArray, 'contact_poses')
        assert client.wait_matched(publishers=[pose_pub])

        def poses(far: float) -> PoseArray:
            pa = PoseArray()
            pa.header.frame_id = 'object'
            for (x, y, z), (qx, qy, qz, qw) in zip(POSITIONS, QUATS):
                p = Pose()
                p.position.x, p.position.y, p.position.z = x, y if y < 0 else far, z
                p.orientation.x, p.orientation.y = qx, qy
                p.orientation.z, p.orientation.w = qz, qw
                pa.poses.append(p)
            return pa
        diag = client.collect(DiagnosticArray, '/diagnostics')
        diag.clear()
        # sent until refused: a publisher matched to the node is not yet a node that takes it
        assert client.spin_until(lambda: pose_pub.publish(poses(1e200)) or any(
            st.name.endswith(': contacts') and level_of(st) == 2 and 'out of range' in st.message
            for a in diag for st in a.status), 10.0), proc.output()
        pose_pub.publish(poses(0.3))  # recovery
        client.spin_for(0.3)
        d = Dist(client)
        np.testing.assert_allclose(resultant(d.send([0, 0, 20, 0, 0, 0])), [0, 0, 20, 0, 0, 0],
                                   atol=1e-9)
    out = proc.output()
    assert 'RuntimeWarning' not in out and 'Traceback' not in out
