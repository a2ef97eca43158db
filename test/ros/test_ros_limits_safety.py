"""Runtime limits over DDS: only toward safety, unless a bench opted in at start-up.

The distributor runs as its console script; a test node calls ``set_parameters`` as
``ros2 param set`` would, sends desired wrenches and internal loads beyond the limits and
checks every command it receives against the limits in force (norms taken here).
"""
import numpy as np
import pytest
from rclpy.parameter import Parameter

from ros_harness import diag_values, domain_id_for, NodeProcess, TestClient
from test_faults import BASE, Dist, resultant, squeeze
from wrench_distribution.ros.diagnostics import level_of, WARN

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
OLD = {'force_limits': [100.0], 'torque_limits': [20.0], 'desired_force_limit': 150.0,
       'desired_torque_limit': 30.0, 'internal_load_limit': 50.0,
       'feedback_correction_limit': 20.0, 'feedback_integral_limit': 20.0,
       'friction_feedback_limit': 0.3}
#: each limit raised to a valid value (friction_margin 0.1 + friction_feedback_limit <= 0.95)
RAISED = {'force_limits': [1000.0], 'torque_limits': [200.0], 'desired_force_limit': 1500.0,
          'desired_torque_limit': 300.0, 'internal_load_limit': 500.0,
          'feedback_correction_limit': 200.0, 'feedback_integral_limit': 200.0,
          'friction_feedback_limit': 0.8}
#: desired wrenches beyond the old limits, each on its own (forces and torques)
BEYOND = ([0, 0, 1000, 0, 0, 0], [0, 0, 0, 200, 0, 0], [400, -300, 0, 0, 50, 0],
          [0, 0, 250, 0, 0, 0], [0, 0, 0, 0, 0, 45])


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN, 'wd_limits_safety_client')
    yield c
    c.close()


def set_one(client: TestClient, name: str, value):
    """Ask for one change, sent once: the node counts each request (:func:`served` first)."""
    served(client)
    return client.set_parameters('wrench_distributor', [Parameter(name, value=value)],
                                 timeout=30.0, again_after=30.0)[0]


def served(client: TestClient) -> None:
    """Set a harmless parameter until the node's ``set_parameters`` answers (its server matched)."""
    assert client.set_parameters('wrench_distributor', [Parameter('publish_markers', value=True)],
                                 timeout=30.0)[0].successful


def assert_inside(cmds, force: float, torque: float) -> None:
    for w in cmds:
        assert np.all(np.isfinite(w))
        assert np.linalg.norm(w[:3]) <= force * (1 + 1e-12), w
        assert np.linalg.norm(w[3:]) <= torque * (1 + 1e-12), w


def limits_values(d: Dist) -> dict:
    return diag_values(d.diag, 'wrench_distributor: limits')


@pytest.mark.parametrize('policy', ['hold', 'scale'])
def test_raising_each_limit_is_refused_and_nothing_over_the_old_limit_is_published(client, policy):
    with NodeProcess('distributor', dict(BASE, **OLD, on_limit=policy), DOMAIN) as proc:
        d = Dist(client)
        d.all_cmds.clear()  # the collectors are the client's: forget earlier tests' commands
        valid = d.send([0, 0, 20, 0, 0, 0])
        for k, name in enumerate(OLD, start=1):
            res = set_one(client, name, RAISED[name])
            assert not res.successful, (name, proc.output())
            assert f"parameter '{name}'" in res.reason and 'may only be lowered' in res.reason
            assert client.spin_until(lambda: d.counter('refused_unsafe_changes') == k, 3.0)
        if policy == 'hold':
            res = set_one(client, 'on_limit', 'scale')
            assert not res.successful and 'never to scale' in res.reason, res.reason
            assert client.spin_until(lambda: limits_values(d).get('last_refused_change')
                                     == "on_limit='scale'", 3.0), limits_values(d)
        else:
            assert client.spin_until(lambda: limits_values(d).get('last_refused_change')
                                     == 'friction_feedback_limit=0.8', 3.0), limits_values(d)
        refused = len(OLD) + (policy == 'hold')
        assert d.wait_counter('refused_unsafe_changes', refused) == refused
        d.il_pub.publish(squeeze(60.0))  # over the old internal_load_limit 50: refused
        client.spin_for(0.2)
        np.testing.assert_array_equal(d.send([0, 0, 20, 0, 0, 0]), valid)
        for desired in BEYOND:
            got = d.send(desired)
            if policy == 'hold':
                np.testing.assert_array_equal(got, valid)  # on_limit stays hold: the last valid
        if policy == 'scale':  # 1000 N up scaled to the old desired_force_limit 150 N, shared
            got = d.send(BEYOND[0])
            np.testing.assert_allclose(np.linalg.norm(got[:, :3], axis=1), 75.0, rtol=1e-8)
        d.clear()
        assert len(d.all_cmds) >= 2 * (len(BEYOND) + 2)
        assert_inside(d.all_cmds, 100.0, 20.0)
    assert 'Traceback' not in proc.output()


def test_lowering_is_accepted_and_applies_to_the_next_command(client):
    with NodeProcess('distributor', dict(BASE, **OLD, on_limit='hold'), DOMAIN) as proc:
        d = Dist(client)
        d.all_cmds.clear()  # the collectors are the client's: forget earlier tests' commands
        under = d.send([0, 0, 90, 0, 0, 0])  # 45 N per contact: valid under 100 N and 50 N
        assert set_one(client, 'force_limits', [50.0]).successful, proc.output()
        # 55 N per contact: valid before, over the new limit now: held at the last valid
        np.testing.assert_array_equal(d.send([0, 0, 110, 0, 0, 0]), under)
        assert set_one(client, 'on_limit', 'zero').successful  # toward safety
        assert np.all(d.send([0, 0, 110, 0, 0, 0]) == 0.0)
        assert set_one(client, 'desired_force_limit', 60.0).successful
        assert np.all(d.send([0, 0, 70, 0, 0, 0]) == 0.0)  # 35 N per contact, over 60 N in all
        np.testing.assert_allclose(resultant(d.send([0, 0, 50, 0, 0, 0])), [0, 0, 50, 0, 0, 0],
                                   atol=1e-9)
        assert client.spin_until(lambda: limits_values(d).get('force_limits') == '50, 50', 3.0)
        assert d.counter('refused_unsafe_changes') == 0
        d.clear()
        assert_inside(d.all_cmds, 50.0, 20.0)


def test_the_start_up_opt_in_allows_raising_and_diagnostics_say_so(client):
    params = dict(BASE, **OLD, allow_unsafe_runtime_changes=True)
    with NodeProcess('distributor', params, DOMAIN) as proc:
        d = Dist(client)
        d.all_cmds.clear()  # the collectors are the client's: forget earlier tests' commands
        st = d.status('limits', 'allow_unsafe_runtime_changes is true')
        assert st is not None and level_of(st) == WARN, proc.output()
        assert set_one(client, 'force_limits', [200.0]).successful
        assert set_one(client, 'desired_force_limit', 300.0).successful
        cmds = d.send([0, 0, 250, 0, 0, 0])  # 125 N per contact: over the old 100 N
        np.testing.assert_allclose(np.linalg.norm(cmds[:, :3], axis=1), [125.0, 125.0], rtol=1e-9)
        res = set_one(client, 'allow_unsafe_runtime_changes', False)
        assert not res.successful  # start-up only: read-only
        assert 'accepting less safe change' in proc.output()


def test_a_node_started_without_limits_holds_the_collaborative_defaults_with_a_warn(client):
    params = {k: v for k, v in BASE.items() if k not in OLD}
    with NodeProcess('distributor', dict(params, on_limit='scale'), DOMAIN) as proc:
        d = Dist(client)
        d.all_cmds.clear()  # the collectors are the client's: forget earlier tests' commands
        st = d.status('limits', 'package default limits in force')
        assert st is not None and level_of(st) == WARN, proc.output()
        assert 'force_limits=[150.0]' in st.message and 'torque_limits=[20.0]' in st.message
        for desired in BEYOND:
            assert d.send(desired) is not None  # scaled into the defaults
        d.clear()
        assert_inside(d.all_cmds, 150.0, 20.0)
        assert not set_one(client, 'force_limits', [1000.0]).successful
    assert 'package default limits in force' in proc.output()


def test_relaxing_the_watchdog_is_refused_and_it_still_zeroes_the_commands(client):
    params = dict(BASE, **OLD, input_timeout=0.3, on_timeout='zero')
    with NodeProcess('distributor', params, DOMAIN) as proc:
        d = Dist(client)
        for name, value, rule in (('input_timeout', 0.0, 'timeout guard'),
                                  ('input_timeout', 5.0, 'timeout guard'),
                                  ('on_timeout', 'stop', 'not to stop')):
            res = set_one(client, name, value)
            assert not res.successful and rule in res.reason, (name, res.reason)
        assert d.send([0, 0, 20, 0, 0, 0]) is not None
        d.clear()  # the input stops: zero wrenches within the 0.3 s in force
        assert client.spin_until(lambda: len(d.cmds['left']) >= 3, 3.0), proc.output()
        assert d.wait_counter('refused_unsafe_changes', 3) == 3
        d.clear()
        assert d.all_cmds and all(np.all(w == 0.0) for w in d.all_cmds[-3:])
