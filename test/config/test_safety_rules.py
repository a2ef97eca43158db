"""The runtime safety rule of the distributor's parameters, as properties (no ROS).

Each rule's verdict is compared with the safe direction written out here, parameter by
parameter (a limit may only go down, per effector; a timeout guard may be switched on or
shortened; ``on_limit`` may never become ``scale``; ``on_timeout`` may only go towards ``zero``;
a contact transition may only be made slower);
the engine, fed a refused change, keeps commanding inside the limits in force.
"""
import os

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

from ros_harness import REPO
from wrench_distribution.config import changed_config, load_distributor_config, validate_params
from wrench_distribution.config import safety
from wrench_distribution.config.safety import (check_runtime_change, defaults_in_force,
                                               FREE_AT_RUNTIME, OPT_IN, RefusedChanges,
                                               RUNTIME_RULES, runtime_table, UnsafeChangeError)
from wrench_distribution.config.schema import DISTRIBUTOR_PARAMS, LIMIT_CEILING
from wrench_distribution.engine.distribution import DistributionEngine

SPECS = {s.name: s for s in DISTRIBUTOR_PARAMS}
LIMITS = ('force_limits', 'torque_limits', 'desired_force_limit', 'desired_torque_limit',
          'internal_load_limit', 'feedback_correction_limit', 'feedback_integral_limit',
          'friction_feedback_limit', 'feedback_timeout', 'friction_feedback_timeout')
GUARDS = ('input_timeout', 'contact_timeout', 'max_future')
NAMES = ['left', 'right', 'middle']
BASE = {'effectors': NAMES, 'contact_source': 'static',
        'contact_positions': [0.0, 0.3, 0.0, 0.0, -0.3, 0.0, 0.3, 0.0, 0.0],
        'force_limits': [60.0], 'torque_limits': [12.0], 'desired_force_limit': 150.0,
        'desired_torque_limit': 30.0, 'internal_load_limit': 50.0, 'input_timeout': 0.0}
positive = st.floats(min_value=1e-6, max_value=LIMIT_CEILING)


def verdict(name: str, old: dict, new: dict) -> bool:
    """Tell whether a change is accepted: ``check_runtime_change`` raising or not."""
    try:
        check_runtime_change(old, new, [name])
    except UnsafeChangeError as e:
        assert f"parameter '{name}'" in str(e) and repr(new[name]) in str(e)
        assert e.name == name and e.value == new[name]
        return False
    return True


def test_every_runtime_parameter_has_a_rule_or_a_reason_to_be_free():
    runtime = {s.name for s in DISTRIBUTOR_PARAMS if not s.read_only}
    free = set(FREE_AT_RUNTIME)
    assert runtime == set(RUNTIME_RULES) | free, runtime ^ (set(RUNTIME_RULES) | free)
    assert not set(RUNTIME_RULES) & free
    assert set(LIMITS) | set(GUARDS) | {'on_limit', 'on_timeout', 'contact_transition_time'} == set(RUNTIME_RULES)
    opt_in = SPECS[OPT_IN]
    assert opt_in.read_only and opt_in.default is False  # set at start-up only, off by default


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(LIMITS), old=st.lists(positive, min_size=1, max_size=3),
       new=st.lists(positive, min_size=1, max_size=3), opt_in=st.booleans())
def test_a_limit_may_only_go_down_per_effector(name, old, new, opt_in):
    per_effector = SPECS[name].type == 'double_array'
    if per_effector:  # 1 value (every effector) or 3; a list of 2 becomes 1
        old, new = (v if len(v) != 2 else v[:1] for v in (old, new))
        expanded = [np.resize(np.asarray(v), len(NAMES)) for v in (old, new)]
        safer = bool(np.all(expanded[1] <= expanded[0]))
    else:
        old, new = old[0], new[0]
        safer = new <= old
    cfg_old = dict(BASE, **{name: old, OPT_IN: opt_in})
    assert verdict(name, cfg_old, dict(cfg_old, **{name: new})) == (safer or opt_in)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(GUARDS), old=st.one_of(st.just(0.0), positive),
       new=st.one_of(st.just(0.0), positive), opt_in=st.booleans())
def test_a_timeout_guard_may_be_switched_on_or_shortened_never_off_or_longer(name, old, new, opt_in):
    safer = old == 0.0 or 0.0 < new <= old  # 0 disables the guard
    cfg_old = dict(BASE, **{name: old, OPT_IN: opt_in})
    assert verdict(name, cfg_old, dict(cfg_old, **{name: new})) == (safer or opt_in)


@pytest.mark.parametrize('old', ['hold', 'zero', 'scale'])
@pytest.mark.parametrize('new', ['hold', 'zero', 'scale'])
@pytest.mark.parametrize('opt_in', [False, True])
def test_every_on_limit_transition(old, new, opt_in):
    # scale sends a scaled copy of an over-limit request; hold and zero send nothing new
    refused = new == 'scale' and old != 'scale'
    cfg_old = dict(BASE, on_limit=old, **{OPT_IN: opt_in})
    assert verdict('on_limit', cfg_old, dict(cfg_old, on_limit=new)) == (not refused or opt_in)


@pytest.mark.parametrize('old', ['zero', 'stop', 'hold_object_weight'])
@pytest.mark.parametrize('new', ['zero', 'stop', 'hold_object_weight'])
def test_every_on_timeout_transition(old, new):
    # stop leaves the arm controllers on their last reference; hold_object_weight keeps commanding the
    # weight split (inside the limits); zero ends every command: only towards zero
    cfg_old = dict(BASE, on_timeout=old, object_mass=2.0)
    order = ['zero', 'hold_object_weight', 'stop']
    assert verdict('on_timeout', cfg_old, dict(cfg_old, on_timeout=new)) == (
        order.index(new) <= order.index(old))


@settings(max_examples=100, deadline=None)
@given(old=st.floats(0.0, 3600.0), new=st.floats(0.0, 3600.0), opt_in=st.booleans())
def test_a_contact_transition_may_only_be_made_slower(old, new, opt_in):
    # a shorter ramp moves the commands further per tick
    cfg_old = dict(BASE, contact_transition_time=old, **{OPT_IN: opt_in})
    assert verdict('contact_transition_time', cfg_old,
                   dict(cfg_old, contact_transition_time=new)) == (new >= old or opt_in)


def test_one_unsafe_change_refuses_the_whole_request():
    new = dict(BASE, force_limits=[10.0], torque_limits=[13.0])
    with pytest.raises(UnsafeChangeError, match="'torque_limits'.*12.0.*may only be lowered"):
        check_runtime_change(BASE, new, ['force_limits', 'torque_limits'])


@settings(max_examples=40, deadline=None)
@given(factor=st.floats(min_value=0.2, max_value=5.0),
       name=st.sampled_from(['force_limits', 'torque_limits', 'desired_force_limit',
                             'desired_torque_limit']),
       direction=st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=6, max_size=6),
       size=st.floats(min_value=1.0, max_value=1e4))
def test_the_engine_commands_inside_the_limits_in_force_after_any_request(factor, name,
                                                                          direction, size):
    cfg = validate_params('distributor', dict(BASE, on_limit='scale'))
    config = load_distributor_config(cfg)
    engine = DistributionEngine(config)
    update = engine.offer_contacts(np.reshape(cfg['contact_positions'], (3, 3)),
                                   np.tile([0, 0, 0, 1.0], (3, 1)), 0)
    assert update.rebuilt and update.refusal is None
    old = cfg[name]
    asked = [v * factor for v in old] if isinstance(old, list) else old * factor
    new = dict(cfg, **{name: asked})
    try:
        plan = engine.plan(changed_config(config, {name: asked}))
    except UnsafeChangeError:
        assert factor > 1.0
        in_force = cfg
    else:
        assert factor <= 1.0
        engine.adopt(plan, 0)
        in_force = new
    out = engine.step(1, [size * d for d in direction], 0, 1).commands
    assert out is not None  # on_limit scale: always a command set, scaled inside the limits
    force, torque = in_force['force_limits'][0], in_force['torque_limits'][0]
    assert np.all(np.linalg.norm(out[:, :3], axis=1) <= force * (1 + 1e-12))
    assert np.all(np.linalg.norm(out[:, 3:], axis=1) <= torque * (1 + 1e-12))
    total_force = np.linalg.norm(out[:, :3].sum(axis=0))  # identity orientations: object axes
    assert total_force <= in_force['desired_force_limit'] * (1 + 1e-9)


def test_defaults_in_force_are_named_and_the_refusals_counted():
    cfg = validate_params('distributor', {'effectors': NAMES, 'contact_source': 'topic'})
    named = defaults_in_force(cfg, frozenset())
    assert [n.split('=')[0] for n in named] == list(safety.LIMIT_PARAMS)
    assert defaults_in_force(cfg, {'force_limits'})[0].startswith('torque_limits=')
    # a limit set to its default value is set: the user chose it (no WARN)
    given = {'effectors': NAMES, 'contact_source': 'topic',
             **{name: cfg[name] for name in safety.LIMIT_PARAMS}}
    assert load_distributor_config(given).settings.defaults_in_force == ()
    log = RefusedChanges()
    assert log.values() == {'last_refused_change': 'none'}
    log.note('force_limits=[1e9]', 'no', True)
    log.note('on_timeout=' + 'x' * 500, 'invalid', False)
    assert log.counters == {'refused_parameter_changes': 2, 'refused_unsafe_changes': 1}
    assert log.values()['last_refusal_reason'] == 'invalid'
    assert len(log.values()['last_refused_change']) <= safety.ASKED_CHARS + 3


def test_the_security_page_holds_the_generated_table():
    with open(os.path.join(REPO, 'docs', 'security.md')) as f:
        assert runtime_table() in f.read()


def test_the_shipped_ur5e_cell_sets_every_limit_and_gets_no_default_warn():
    """Its limits equal the package defaults, but it sets them: no 'package default limits' WARN."""
    from wrench_distribution.config import load_distributor_config
    path = os.path.join(REPO, 'config', 'ur5e_cell', 'wrench_distribution.yaml')
    config = load_distributor_config(path)
    assert config.settings.defaults_in_force == ()
    assert DistributionEngine(config).safety_conditions() == []
