"""Runtime limit changes on the distributor node, in this process.

Properties over every limit and every ``on_limit`` transition: a change toward safety is
applied to the next command, one away from it is refused naming the rule, counted, and
reported with the value asked; whatever was asked, no command exceeds the limits in force
(norms taken here). The start-up-only opt-in lets a bench raise them and says so.
"""
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

from inproc import ros_context
from test_inproc_distributor import diagnose, LIMITS, node, resultant, send, squeeze_msg
from wrench_distribution.ros.diagnostics import level_of, WARN

pytestmark = [pytest.mark.ros, pytest.mark.inproc]

COMMAND_LIMITS = ('force_limits', 'torque_limits', 'desired_force_limit', 'desired_torque_limit')


@pytest.fixture(scope='module')
def ctx():
    with ros_context() as c:
        yield c


def values(status) -> dict:
    return {kv.key: kv.value for kv in status.values}


def in_force(cfg: dict) -> tuple:
    """Force and torque norm bounds of each command under a configuration."""
    return cfg['force_limits'][0], cfg['torque_limits'][0]


def assert_inside(cmds, cfg: dict) -> None:
    force, torque = in_force(cfg)
    assert np.all(np.linalg.norm(cmds[:, :3], axis=1) <= force * (1 + 1e-12)), cmds
    assert np.all(np.linalg.norm(cmds[:, 3:], axis=1) <= torque * (1 + 1e-12)), cmds


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(COMMAND_LIMITS), factor=st.floats(min_value=0.3, max_value=4.0),
       policy=st.sampled_from(['hold', 'zero', 'scale']),
       direction=st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=6, max_size=6))
def test_a_limit_change_applies_only_toward_safety(ctx, name, factor, policy, direction):
    with node(ctx, on_limit=policy, **LIMITS) as n:
        first = send(n, [0.0, 0.0, 5.0, 0.0, 0.0, 0.2])
        assert first is not None
        old = LIMITS[name]
        asked = [old[0] * factor] if isinstance(old, list) else old * factor
        res = n.set_parameters(**{name: asked})[0]
        assert res.successful == (factor <= 1.0), res.reason
        cfg = dict(LIMITS, **({name: asked} if res.successful else {}))
        status = diagnose(n)['limits']
        shown = values(status)
        if not res.successful:
            assert f"parameter '{name}'" in res.reason and 'may only be lowered' in res.reason
            assert shown['last_refused_change'] == f'{name}={asked!r}'
            assert 'refused_unsafe_changes=1' in shown['counters']
        else:
            assert shown['last_refused_change'] == 'none'
        assert n.node.get_parameter(name).value == pytest.approx(cfg[name])
        # requests around and well beyond the old limits: every command inside those in force
        for size in (10.0, 100.0, 1e4, 1e300):
            cmds = send(n, [size * d for d in direction])
            if cmds is not None:
                assert_inside(cmds, cfg)


@pytest.mark.parametrize('old', ['hold', 'zero', 'scale'])
@pytest.mark.parametrize('new', ['hold', 'zero', 'scale'])
def test_every_on_limit_transition_on_the_node(ctx, old, new):
    with node(ctx, on_limit=old, **LIMITS) as n:
        valid = send(n, [0.0, 0.0, 5.0, 0.0, 0.0, 0.0])
        res = n.set_parameters(on_limit=new)[0]
        refused = new == 'scale' and old != 'scale'
        assert res.successful == (not refused), res.reason
        kept = old if refused else new
        assert values(diagnose(n)['distribution'])['on_limit'] == kept
        over = send(n, [0.0, 0.0, 1000.0, 0.0, 0.0, 0.0])  # over desired_force_limit 150 N
        if kept == 'scale':  # equal shares along z, each at its 60 N limit: 120 N up in all
            np.testing.assert_allclose(resultant(over), [0, 0, 120.0, 0, 0, 0], rtol=1e-8, atol=1e-9)
        elif kept == 'zero':
            assert np.all(over == 0.0)
        else:  # hold: the last valid commands again
            np.testing.assert_array_equal(over, valid)
        assert_inside(over, LIMITS)


def test_internal_load_limit_raise_refused_and_a_larger_squeeze_stays_refused(ctx):
    with node(ctx, **LIMITS) as n:
        plain = send(n, [0.0, 0.0, 10.0, 0.0, 0.0, 0.0])
        res = n.set_parameters(internal_load_limit=500.0)[0]
        assert not res.successful and 'internal_load_limit' in res.reason
        n.deliver('internal_load', squeeze_msg(55.0))  # over the 50 in force
        np.testing.assert_array_equal(send(n, [0.0, 0.0, 10.0, 0.0, 0.0, 0.0]), plain)
        assert n.set_parameters(internal_load_limit=20.0)[0].successful  # lower: accepted
        n.deliver('internal_load', squeeze_msg(25.0))  # under the old 50, over the new 20
        np.testing.assert_array_equal(send(n, [0.0, 0.0, 10.0, 0.0, 0.0, 0.0]), plain)
        n.deliver('internal_load', squeeze_msg(15.0))
        assert not np.allclose(send(n, [0.0, 0.0, 10.0, 0.0, 0.0, 0.0]), plain)


@pytest.mark.parametrize('name,value', [('feedback_correction_limit', 40.0),
                                        ('feedback_integral_limit', 40.0),
                                        ('friction_feedback_limit', 0.5),
                                        ('input_timeout', 0.0), ('max_future', 0.0),
                                        ('contact_timeout', 0.0), ('feedback_timeout', 1.0),
                                        ('on_timeout', 'stop')])
def test_guards_and_feedback_limits_refused_when_relaxed(ctx, name, value):
    start = {'input_timeout': 0.5, 'contact_timeout': 1.0, 'on_timeout': 'zero'}
    with node(ctx, **dict(LIMITS, **start)) as n:
        before = n.node.get_parameter(name).value
        res = n.set_parameters(**{name: value})[0]
        assert not res.successful and f"parameter '{name}'" in res.reason, res.reason
        assert n.node.get_parameter(name).value == before
        assert values(diagnose(n)['limits'])['last_refused_change'] == f'{name}={value!r}'


def test_the_opt_in_allows_raising_and_says_so(ctx):
    with node(ctx, allow_unsafe_runtime_changes=True, **LIMITS) as n:
        status = diagnose(n)['limits']
        assert level_of(status) == WARN and 'allow_unsafe_runtime_changes is true' in status.message
        assert values(status)['allow_unsafe_runtime_changes'] == 'true'
        assert n.set_parameters(force_limits=[90.0], desired_force_limit=400.0)[0].successful
        # 70 N per contact: over the old 60, inside the new 90
        cmds = send(n, [0.0, 0.0, 140.0, 0.0, 0.0, 0.0])
        assert cmds is not None
        np.testing.assert_allclose(np.linalg.norm(cmds[:, :3], axis=1), [70.0, 70.0], rtol=1e-9)
        res = n.set_parameters(allow_unsafe_runtime_changes=False)[0]
        assert not res.successful  # start-up only


def test_without_limits_in_the_file_the_collaborative_defaults_hold_with_a_warn(ctx):
    with node(ctx, on_limit='scale') as n:
        status = diagnose(n)['limits']
        assert level_of(status) == WARN and 'package default limits in force' in status.message
        for name in ('force_limits', 'torque_limits', 'desired_force_limit',
                     'desired_torque_limit', 'internal_load_limit'):
            assert name in status.message
        defaults = {'force_limits': [150.0], 'torque_limits': [20.0]}
        for desired in ([0.0, 0.0, 1000.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 500.0, 0.0, 0.0],
                        [200.0, -100.0, 250.0, 30.0, 10.0, -40.0]):
            cmds = send(n, desired)
            assert cmds is not None  # scaled inside the defaults
            assert_inside(cmds, defaults)
        assert not n.set_parameters(force_limits=[151.0])[0].successful
    with node(ctx, **LIMITS) as n:  # limits set in the file: no WARN about defaults
        assert level_of(diagnose(n)['limits']) == 0
        assert values(diagnose(n)['limits'])['defaults_in_force'] == 'none'
