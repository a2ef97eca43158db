"""The one grasp spring-damper (sim/grasp.py) against references written here.

1. Its stiffness part is the gradient of the potential ``1/2 p^T K_p p + 1/2 phi^T K_r phi``
   along every basis twist of the effector, by central differences, ``phi`` from scipy's
   ``Rotation.as_rotvec`` (not the model's logarithm).
2. Its damping part is the generalised force of the dissipation ``1/2 s'^T D s'`` with
   ``s = (p, phi)``: ``S^T D S nu``, ``S = ds/dnu`` by central differences; it never gives
   energy to the effector.
3. With isotropic constants and no damping, the Cartesian simulator's adapter gives the
   textbook world form ``f = k (p_e - p_c)``, ``t = k_r log(R_e R_c^T)`` (point contacts: no
   torque).
"""
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from wrench_distribution.sim.physics.grasp import (
    grasp_wrenches, GraspCompliance, spring_damper_wrench, spring_energy,
)

STEP = 1e-6


def coordinates(rotation, translation):
    """Return ``s = (p, phi)``, ``phi`` by scipy."""
    return np.concatenate([translation, Rotation.from_matrix(rotation).as_rotvec()])


def moved(rotation, translation, twist, time):
    """Return the effector frame moved for ``time`` along a body twist (straight path in p)."""
    return rotation @ Rotation.from_rotvec(time * twist[3:]).as_matrix(), \
        translation + time * rotation @ twist[:3]


def rate_of(function, rotation, translation, twist):
    """Return ``d/dt function(R(t), p(t))`` at 0 by central differences."""
    return (function(*moved(rotation, translation, twist, STEP))
            - function(*moved(rotation, translation, twist, -STEP))) / (2 * STEP)


@st.composite
def springs(draw):
    """Draw a deflected spring: turned by 0 to 3 rad (or exactly not), any length unit."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    angle = draw(st.sampled_from((0.0, 1e-7, 9.99e-4, 1.001e-3, 0.3, 1.5, 3.0)))
    axis = rng.normal(size=3)
    rotation = Rotation.from_rotvec(angle * axis / np.linalg.norm(axis)).as_matrix()
    unit = draw(st.sampled_from((1.0, 1e-3, 1e3)))
    translation = unit * rng.uniform(-0.01, 0.01, 3)
    stiffness = np.concatenate([rng.uniform(1e2, 1e5, 3) / unit ** 2, rng.uniform(1.0, 1e3, 3)])
    damping = np.concatenate([rng.uniform(1.0, 1e2, 3) / unit ** 2, rng.uniform(0.01, 10.0, 3)])
    return rotation, translation, stiffness, damping, unit


@settings(max_examples=60, deadline=None)
@given(spring=springs())
def test_the_stiffness_wrench_is_the_gradient_of_the_potential_along_every_basis_twist(spring):
    rotation, translation, stiffness, _, unit = spring

    def potential(turn, shift):
        s = coordinates(turn, shift)
        return 0.5 * s @ (stiffness * s)
    wrench = spring_damper_wrench(stiffness, np.zeros(6), rotation, translation, np.zeros(6))
    scale = np.concatenate([np.full(3, unit), np.ones(3)])  # a twist of one length unit
    expected = [rate_of(potential, rotation, translation, basis * scale) for basis in np.eye(6)]
    size = max(np.abs(expected).max(), 1e-12)
    assert np.allclose(np.asarray(wrench) * scale, expected, atol=1e-6 * size)
    # the stored energy is that potential
    assert spring_energy(stiffness[None], rotation[None], translation[None]) == pytest.approx(
        potential(rotation, translation), rel=1e-12, abs=1e-300)


@settings(max_examples=60, deadline=None)
@given(spring=springs(), seed=st.integers(0, 2**32 - 1))
def test_the_damping_wrench_is_the_dissipations_generalised_force_and_never_gives_energy(
        spring, seed):
    rotation, translation, _, damping, unit = spring
    twist = np.random.default_rng(seed).normal(size=6) * np.repeat([unit, 1.0], 3)
    jacobian = np.column_stack([
        rate_of(coordinates, rotation, translation, basis) for basis in np.eye(6)])
    expected = jacobian.T @ (damping * (jacobian @ twist))
    wrench = np.asarray(spring_damper_wrench(np.zeros(6), damping, rotation, translation, twist))
    assert np.allclose(wrench, expected, atol=1e-6 * np.abs(expected).max())
    # the effector receives -w: its power -w . nu is never positive
    assert wrench @ twist >= 0.0


@pytest.mark.parametrize('angle', (0.0, 0.2, 2.0))
def test_isotropic_springs_give_the_textbook_world_form_at_the_effector(angle):
    rng = np.random.default_rng(5)
    count = 3
    rigid = np.array([True, False, True])
    contact_rotation = Rotation.random(count, random_state=3).as_matrix()
    turns = Rotation.from_rotvec(angle * Rotation.random(count, random_state=4).as_rotvec()
                                 / np.pi).as_matrix()
    effector_rotation = np.where(rigid[:, None, None], turns @ contact_rotation,
                                 contact_rotation)
    contact_position, effector_position = rng.normal(size=(count, 3)), rng.normal(size=(count, 3))
    compliance = GraspCompliance(stiffness=2e3, damping=0.0, rot_stiffness=30.0, rot_damping=0.0)
    still = np.zeros((count, 3))
    world = grasp_wrenches(*compliance.per_axis(rigid), effector_position, effector_rotation,
                           still, still, contact_position, contact_rotation, still, still)
    assert np.allclose(world[:, :3], 2e3 * (effector_position - contact_position), atol=1e-9)
    rotation_vectors = Rotation.from_matrix(
        effector_rotation @ np.swapaxes(contact_rotation, 1, 2)).as_rotvec()
    assert np.allclose(world[rigid, 3:], 30.0 * rotation_vectors[rigid], atol=1e-9)
    assert not np.any(world[~rigid, 3:])


def test_a_half_turn_gets_a_clear_error():
    half_turn = Rotation.from_rotvec([0.0, 0.0, np.pi]).as_matrix()
    with pytest.raises(ValueError, match='half a revolution'):
        spring_damper_wrench(np.ones(6), np.ones(6), half_turn, np.zeros(3), np.zeros(6))
