"""Coulomb friction of the simulator's point contacts: stick, slip at mu N, lift."""
import numpy as np
import pytest

from wrench_distribution.sim.physics.grasp import GraspCompliance
from wrench_distribution.sim.physics.held_object import HeldObjectSim, LOSS_DISTANCE


def pinched(mu=0.5):
    """Build a fixed block pinched at x = +-0.05 m by two fingertips, contact z along the push."""
    down = (0.0, np.sqrt(0.5), 0.0, np.sqrt(0.5))   # contact z = object -x
    up = (0.0, -np.sqrt(0.5), 0.0, np.sqrt(0.5))    # contact z = object +x
    return HeldObjectSim(1.0, np.eye(3) * 1e-3, (0, 0, 0), ['point', 'point'],
                         [(0.05, 0, 0), (-0.05, 0, 0)], [down, up], effector_mass=0.05,
                         compliance=GraspCompliance(2000.0, 14.0, 0.0, 0.0), gravity=(0, 0, 0),
                         friction=[mu, mu])


def hold(sim, commands, seconds=1.0, dt=1e-3):
    sim.preload(commands)
    for _ in range(int(seconds / dt)):
        sim.step(commands, dt, fixed=True)
    return sim.transmitted()


@pytest.mark.parametrize('tangential, slips', [(3.0, False), (4.9, False), (7.0, True)])
def test_stick_below_and_slide_at_mu_times_the_normal_force(tangential, slips):
    # each finger presses 10 N; mu = 0.5: the cone holds up to 5 N of tangential force
    sim = pinched()
    commands = np.array([[tangential, 0, 10.0, 0, 0, 0], [tangential, 0, 10.0, 0, 0, 0]])
    applied = hold(sim, commands, seconds=0.02 if slips else 1.0)
    np.testing.assert_allclose(applied[:, 2], 10.0, rtol=1e-2 if slips else 1e-3)
    expected = 5.0 if slips else tangential
    np.testing.assert_allclose(np.abs(applied[:, 0]), expected, rtol=1e-3)
    assert (sim.slip_distance > 1e-4).all() if slips else (sim.slip_distance == 0).all()
    if slips:  # the 2 N of excess keep the fingertips sliding until they slide off
        applied = hold(sim, commands, seconds=0.5)
        assert sim.lost.all() and np.all(applied == 0.0)
        assert np.all(np.linalg.norm(sim.slip, axis=1) > LOSS_DISTANCE)
    else:
        assert not sim.lost.any()


def test_a_pulling_fingertip_lifts_off():
    sim = pinched()
    applied = hold(sim, np.array([[0.0, 0, -2.0, 0, 0, 0], [0, 0, 2.0, 0, 0, 0]]), seconds=0.3)
    np.testing.assert_allclose(applied[0], 0.0, atol=1e-12)
    assert sim.lifted_time[0] > 0.25 and sim.lifted_time[1] == 0.0
    assert not sim.lost.any()  # it pulled straight off: nothing slid


def test_without_friction_the_spring_stays_bilateral():
    sim = HeldObjectSim(1.0, np.eye(3) * 1e-3, (0, 0, 0), ['point', 'point'],
                        [(0.05, 0, 0), (-0.05, 0, 0)], [(0, 0, 0, 1)] * 2, effector_mass=0.05,
                        compliance=GraspCompliance(2000.0, 14.0, 0.0, 0.0), gravity=(0, 0, 0))
    applied = hold(sim, np.array([[7.0, 0, -2.0, 0, 0, 0], [0, 0, 2.0, 0, 0, 0]]), seconds=0.5)
    np.testing.assert_allclose(applied[0, [0, 2]], [7.0, -2.0], rtol=1e-3)
