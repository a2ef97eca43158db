"""The simulator's pieces for contacts that come and go: the lean, the weights schedule (no ROS)."""
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

from wrench_distribution.config.handles import parse_weights_schedule
from wrench_distribution.config.schema import ConfigError
from wrench_distribution.sim.control.object_controller import shift_profile
from wrench_distribution.sim.physics.held_object import HeldObjectSim

SHIFTS = [1.0, 0.5, 0.08, 0.06, 0.0, 3.0, 1.0, -0.02, 0.0, 0.01]

offsets = st.lists(st.floats(-0.2, 0.2), min_size=3, max_size=3)


def test_shift_profile_rests_at_each_offset_and_starts_from_zero():
    assert np.array_equal(shift_profile(SHIFTS, 0.0), np.zeros(3))
    assert np.array_equal(shift_profile(SHIFTS, 1.0), np.zeros(3))
    assert np.allclose(shift_profile(SHIFTS, 2.0), [0.08, 0.06, 0.0])
    assert np.allclose(shift_profile(SHIFTS, 3.0), [0.08, 0.06, 0.0])
    assert np.allclose(shift_profile(SHIFTS, 10.0), [-0.02, 0.0, 0.01])
    # halfway through a minimum-jerk move: halfway between its ends
    assert np.allclose(shift_profile(SHIFTS, 3.5), [0.03, 0.03, 0.005])


@settings(max_examples=30, deadline=None)
@given(first=offsets, second=offsets, t=st.floats(0.0, 5.0))
def test_shift_profile_is_continuous(first, second, t):
    """A step of 1 ms moves at most the peak speed of a minimum-jerk move (1.875 d / T) times 1 ms."""
    shifts = [1.0, 0.5, *first, 2.0, 1.0, *second]
    step = np.linalg.norm(shift_profile(shifts, t + 1e-3) - shift_profile(shifts, t))
    bound = 1.875 * max(np.linalg.norm(first) / 0.5,
                        np.linalg.norm(np.subtract(second, first)) / 1.0) * 1e-3
    assert step <= bound * (1 + 1e-6) + 1e-12


def _trunk() -> HeldObjectSim:
    feet = [[0.25, 0.15, -0.3], [0.25, -0.15, -0.3], [-0.25, 0.15, -0.3], [-0.25, -0.15, -0.3]]
    return HeldObjectSim(12.0, np.diag([0.1, 0.3, 0.35]), [0.03, 0.0, 0.0], ['point'] * 4, feet,
                         [[0.0, 0.0, 0.0, 1.0]] * 4, effector_mass=1.0, friction=[0.8] * 4,
                         position=[0.0, 0.0, 0.3], orientation=[0.0, 0.0, 0.38268343, 0.92387953])


def test_moving_the_contacts_carries_the_feet_and_transmits_nothing_new():
    sim = _trunk()
    commands = np.zeros((4, 6))
    commands[:, 2] = 12.0 * 9.81 / 4
    for _ in range(200):
        sim.step(commands, 1e-3, fixed=True)
    before = sim.contact_wrenches().copy()
    feet = sim.eff_pos.copy()
    shift = np.array([0.08, 0.06, 0.0])
    sim.move_contacts(sim.r + shift)
    # the springs keep their stretch: the same wrenches, no slip, on the moved contacts
    assert np.allclose(sim.contact_wrenches(), before, atol=1e-9)
    assert np.array_equal(sim.slip_distance, np.zeros(4))
    # the feet moved by the shift in world axes (the trunk is turned 45 deg about z)
    c, s = np.cos(np.pi / 4), np.sin(np.pi / 4)
    assert np.allclose(sim.eff_pos - feet, [0.08 * c - 0.06 * s, 0.08 * s + 0.06 * c, 0.0], atol=1e-7)
    for _ in range(100):  # and nothing slides afterwards
        sim.step(commands, 1e-3, fixed=True)
    assert np.array_equal(sim.slip_distance, np.zeros(4))


def test_weights_schedule_parses_and_refuses_with_the_parameter_named():
    assert parse_weights_schedule(['1.6: lf=0', '2.6: lf=1, rf=0.5']) == [
        (1.6, {'lf': 0.0}), (2.6, {'lf': 1.0, 'rf': 0.5})]
    assert parse_weights_schedule([]) == []
    for bad in (['lf=0'], ['0: lf'], ['0: lf=1.5'], ['0: lf=nan'], ['0: lf=0, lf=1'],
                ['2: lf=0', '1: lf=1'], ['x: lf=1']):
        with pytest.raises(ConfigError, match="'contact_weights_schedule'.*accepted"):
            parse_weights_schedule(bad)


def test_the_command_step_counts_a_paused_stream_as_its_ticks():
    """A ramp of 0.3 N a tick at 1 kHz: 5 ms without a command then 1.5 N more is still 0.3 N a tick.

    A change of 2 N within one tick is a jump and is reported whole (references by hand).
    """
    from wrench_distribution.sim.reports.series import Series
    from wrench_distribution.sim.reports.transitions import _command_steps

    ticks = np.concatenate([np.arange(0, 20), np.arange(24, 40)])   # ticks 20-23 missing
    forces = np.zeros((len(ticks), 6))
    forces[:, 2] = 0.3 * ticks
    ramp = Series(t=1e-3 * ticks, v=forces)
    steps = _command_steps({'lf/wrench_command': ramp}, ['lf'], 0.0, 1.0)
    assert steps['command_step_max_N'] == pytest.approx(0.3, rel=1e-9)
    jumped = forces.copy()
    jumped[30:, 0] += 2.0
    steps = _command_steps({'lf/wrench_command': Series(t=ramp.t, v=jumped)}, ['lf'], 0.0, 1.0)
    assert steps['command_step_max_N'] == pytest.approx(np.hypot(2.0, 0.3), rel=1e-9)
    assert steps['command_step_effector'] == 'lf'
