"""Command limits (core/limits.py) as properties."""
import warnings

from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays
import numpy as np

from wrench_distribution import config as P
from wrench_distribution.core.limits import CommandLimits, scaled_inside

_big = st.floats(min_value=-1.7e308, max_value=1.7e308, allow_nan=False)
_mixed = st.one_of(_big, st.floats(min_value=-1e3, max_value=1e3), st.just(0.0))
_limit = st.floats(min_value=1e-6, max_value=P.LIMIT_CEILING)


def _limits(n, f, t, df=1.0, dt=1.0, il=1.0, policy='scale'):
    return CommandLimits([f'e{i}' for i in range(n)], [f] * n, [t] * n, df, dt, il, policy)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 6), data=st.data(), flim=_limit, tlim=_limit)
def test_scaled_set_is_inside_every_limit_and_keeps_direction(n, data, flim, tlim):
    cmds = data.draw(arrays(float, (n, 6), elements=_mixed))
    lim = _limits(n, flim, tlim)
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # no overflow / invalid warnings, ever
        out, s = scaled_inside(cmds, lim)
        assert lim.within(out)
    assert 0.0 <= s <= 1.0
    np.testing.assert_array_equal(out, cmds * s if s < 1.0 else cmds)
    # a violation is reported exactly when a norm (in long double where it fits) is over
    with np.errstate(over='ignore'):
        fn = np.linalg.norm(cmds[:, :3].astype(np.longdouble), axis=1)
        tn = np.linalg.norm(cmds[:, 3:].astype(np.longdouble), axis=1)
    over = bool(np.any(fn > flim) or np.any(tn > tlim))
    assert (lim.check_commands(cmds) is not None) == over


@settings(max_examples=300, deadline=None)
@given(w=arrays(float, 6, elements=_mixed), df=_limit, dt=_limit)
def test_desired_wrench_check_and_scale(w, df, dt):
    lim = _limits(2, 1.0, 1.0, df, dt)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        v = lim.check_desired(w)
    fn = np.linalg.norm(w[:3].astype(np.longdouble))
    tn = np.linalg.norm(w[3:].astype(np.longdouble))
    assert (v is not None) == bool(fn > df or tn > dt)
    if v is not None:
        assert 0.0 <= v.scale < 1.0 and 'limit' in v.text
        scaled = w * v.scale
        assert np.linalg.norm(scaled[:3]) <= df and np.linalg.norm(scaled[3:]) <= dt


def test_internal_load_limit_names_the_figure():
    lim = _limits(2, 1.0, 1.0, il=50.0)
    assert lim.check_internal_load([10.0, -49.0]) is None
    why = lim.check_internal_load([10.0, -1e300])
    assert '-1e+300' in why and 'internal_load_limit 50' in why


def test_limit_parameters_are_validated():
    base = {'effectors': ['a', 'b'], 'contact_source': 'topic'}
    for bad in ({'force_limits': [1.0, 2.0, 3.0]}, {'force_limits': [0.0]},
                {'torque_limits': [1e10]}, {'desired_force_limit': 1e300},
                {'internal_load': [60.0], 'internal_load_limit': 50.0},
                {'internal_load_handles': ['squeeze(a,b)=1e9']}, {'on_limit': 'ignore'}):
        try:
            P.load_distributor_config(dict(base, **bad))  # the node's path: values, checks, build
        except P.ConfigError as e:
            assert repr(list(bad)[0]).strip("'") in str(e) or 'internal_load' in str(e)
        else:
            raise AssertionError(f'accepted {bad}')
    ok = P.validate_params('distributor', dict(base, force_limits=[5.0, 6.0]))
    assert P.expand_limits(ok['force_limits'], 2) == (5.0, 6.0)
    assert P.expand_limits(ok['torque_limits'], 2) == (20.0, 20.0)  # the package default, per effector
