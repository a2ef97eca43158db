"""The paper's worked examples reproduced to the printed digits (Flight and Gosselin 2026).

Reference numbers are copied from the paper; the paper rounds to three decimals, so the
tolerance is 1.5e-3 (half a unit in the last printed digit plus the rounding of inputs
the paper itself computed with; two printed values, m2 = 0.790 and h_c3,y = -0.364, are off by
one in the last digit from the exact 0.78947 and -0.36346).
"""
import numpy as np
import pytest

from core_cases import sphere, sphere_positions, SPHERE_WRENCHES
from wrench_distribution.core import Contact, DistributionOptions, LoadDistributor, ObjectModel

ATOL = 1.5e-3


def test_ix_c_resultant_and_virtual_masses():
    distributor = sphere()
    analysis = distributor.analyze(SPHERE_WRENCHES)
    np.testing.assert_allclose(analysis.resultant, [1.250, 1, 3, -0.208, 1.957, 1.846], atol=ATOL)
    np.testing.assert_allclose(distributor.virtual_masses, [1.123, 0.790, 0.967, 1.121], atol=ATOL)
    assert distributor.regime.name == 'paper'


def test_ix_c_virtual_inertia_and_acceleration():
    # eq. 94 and the printed acceleration; computed here from the masses and eqs. 48, 52.
    distributor = sphere()
    r = sphere_positions()
    m = distributor.virtual_masses
    inertia = sum(mi * (ri @ ri * np.eye(3) - np.outer(ri, ri)) for mi, ri in zip(m, r))
    np.testing.assert_allclose(
        inertia, [[2.430, 0.096, -0.074], [0.096, 3.117, 0.176], [-0.074, 0.176, 2.454]], atol=ATOL)
    h_o = SPHERE_WRENCHES[:, :3].sum(0), None
    acceleration = np.r_[h_o[0] / 4.0, np.linalg.solve(inertia, [-0.208, 1.957, 1.846])]
    np.testing.assert_allclose(acceleration, [0.313, 0.250, 0.750, -0.087, 0.591, 0.707], atol=ATOL)
    # the forces-only manipulating forces are m_i times that helicoidal field (eq. 49)
    forces = distributor.analyze(SPHERE_WRENCHES).manipulating_object[:, :3]
    field = acceleration[:3] + np.cross(acceleration[3:], r)
    np.testing.assert_allclose(forces, m[:, None] * field, atol=ATOL)


def test_ix_c_forces_only_decomposition():
    analysis = sphere(0.0).analyze(SPHERE_WRENCHES)
    expected_manipulating = [  # eq. 95
        [0.952, 0.705, 0.562], [0.488, 0.421, 0.435], [-0.540, 0.387, 0.501], [0.350, -0.513, 1.503]]
    np.testing.assert_allclose(analysis.manipulating_object[:, :3], expected_manipulating, atol=ATOL)
    np.testing.assert_allclose(analysis.manipulating_object[:, 3:], 0.0, atol=1e-12)
    expected_constraint = [  # eq. 96
        [-0.048, 0.205, -0.438, 0, -0.500, -0.500], [0.488, 0.421, -0.565, -1.000, 0, 0],
        [-0.290, -0.364, 0.501, 0, 0.500, -0.500], [-0.150, -0.263, 0.503, 0.500, -0.750, 0]]
    np.testing.assert_allclose(analysis.constraint_object, expected_constraint, atol=ATOL)


def test_ix_c_all_torque_to_contacts():
    analysis = sphere(1.0).analyze(SPHERE_WRENCHES)
    expected_manipulating = [  # eq. 100
        [0.351, 0.281, 0.842, -0.052, 0.489, 0.462], [0.247, 0.197, 0.592, -0.052, 0.489, 0.462],
        [0.302, 0.242, 0.725, -0.052, 0.489, 0.462], [0.350, 0.280, 0.841, -0.052, 0.489, 0.462]]
    np.testing.assert_allclose(analysis.manipulating_object, expected_manipulating, atol=ATOL)
    expected_constraint = [  # eq. 101
        [-0.649, -0.219, -0.158, -0.052, -0.011, -0.039], [0.247, 0.197, -0.408, -1.052, 0.489, 0.461],
        [0.552, -0.508, 0.725, -0.052, 0.989, -0.039], [-0.150, 0.530, -0.159, 0.448, -0.261, 0.461]]
    np.testing.assert_allclose(analysis.constraint_object, expected_constraint, atol=ATOL)


def test_ix_c_internal_load_state_is_unique():
    # Section IX-C, last paragraph: (96), (101) and every other admissible h_m give one state
    # (eq. 78): the invariant does not depend on the configured torque share.
    results = [sphere(s).analyze(SPHERE_WRENCHES) for s in (0.0, 0.25, 0.5, 1.0)]
    for other in results[1:]:
        np.testing.assert_allclose(other.invariant_object, results[0].invariant_object, atol=1e-9)
        np.testing.assert_allclose(other.invariant_norm, results[0].invariant_norm, atol=1e-9)
        # the linear read-out is relative to the configured h_m: h_c differs by an N_m element
        np.testing.assert_allclose(other.internal_object - results[0].internal_object,
                                   results[0].manipulating_object - other.manipulating_object, atol=1e-9)
    assert results[0].invariant_norm > 0.1


def test_ix_b_planar_triangle_torque_share():
    # IX-B: equilateral triangle, vertices 1 m from the CoM, h_o = [1 2 0 0 0 -2], m* = [1 1 1];
    # 0 %, 50 %, 100 % of t_o assigned to the manipulating torques.
    vertices = [(np.cos(a), np.sin(a), 0.0) for a in np.radians([90, 210, 330])]
    contacts = [Contact(f'v{i}', 'rigid', p) for i, p in enumerate(vertices)]
    h_o = np.array([1.0, 2.0, 0.0, 0.0, 0.0, -2.0])
    for share, tau_m in ((0.0, 0.0), (0.5, -1.0), (1.0, -2.0)):
        d = LoadDistributor(contacts, ObjectModel(), DistributionOptions(torque_share=share))
        np.testing.assert_allclose(d.virtual_masses, [1, 1, 1], atol=1e-12)
        assert d.regime.name == 'paper'
        s = d.synthesize(h_o)
        np.testing.assert_allclose(s.wrench_object[:, 5].sum(), tau_m, atol=1e-12)
        if share == 1.0:  # field lines parallel: every force is f_o / 3
            np.testing.assert_allclose(s.wrench_object[:, :3], np.tile(h_o[:3] / 3, (3, 1)), atol=1e-12)


def test_ix_a_point_mass_minimum_norm_masses():
    # IX-A: three forces on a point mass; the minimum-norm masses are [1 1 1], f_m,i = f_o / 3,
    # and N_m has dimension 2 (dim N(R) of eq. 86).
    contacts = [Contact(f'f{i}', 'point', (0.0, 0.0, 0.0)) for i in range(3)]
    d = LoadDistributor(contacts, ObjectModel())
    np.testing.assert_allclose(d.virtual_masses, [1, 1, 1])
    f_o = np.array([2.0, 1.0, 0.0])
    s = d.synthesize(np.r_[f_o, 0, 0, 0])
    np.testing.assert_allclose(s.wrench_object[:, :3], np.tile(f_o / 3, (3, 1)), atol=1e-12)
    # Constraint forces along f_o (the k_1, k_2 of eq. 88) are manipulating, not internal, in
    # the paper's sense (the invariant), as long as the masses they imply stay positive
    # (here m = [1.67, 0.33, 1]); the linear read-out still sees the load it is in the basis.
    u = f_o / np.linalg.norm(f_o)
    applied = np.tile(f_o / 3, (3, 1)) + np.array([u, -u, [0, 0, 0]]) * 0.5
    analysis = d.analyze(np.c_[applied, np.zeros((3, 3))])
    np.testing.assert_allclose(analysis.invariant_object, 0.0, atol=1e-9)
    assert analysis.invariant_norm < 1e-9
    np.testing.assert_allclose(analysis.internal_object[:, :3], applied - f_o / 3, atol=1e-12)
    # a squeeze across f_o is internal
    w = np.array([-u[1], u[0], 0.0])
    squeezed = np.tile(f_o / 3, (3, 1)) + np.array([w, -w, [0, 0, 0]])
    assert d.analyze(np.c_[squeezed, np.zeros((3, 3))]).invariant_norm > 0.5


@pytest.mark.parametrize('share', [0.0, 0.25, 0.5, 0.9])
def test_eq_81_equals_weighted_pseudo_inverse(share):
    # Independent derivation: for positive masses satisfying eq. 53, G_M+ = M* G^T (G M* G^T)^-1
    # with M* = diag(m_i I, J_i*), J_i* = w_i s/(1-s) J_f (section VI-C).
    d = sphere(share)
    r = sphere_positions()
    m = d.virtual_masses
    j_f = sum(mi * (ri @ ri * np.eye(3) - np.outer(ri, ri)) for mi, ri in zip(m, r))
    blocks = [np.diag(np.r_[np.full(3, mi), np.zeros(3)]) for mi in m]
    for b in blocks:
        b[3:, 3:] = share / (1 - share) * j_f / 4
    big_m = np.zeros((24, 24))
    for i, b in enumerate(blocks):
        big_m[6 * i:6 * i + 6, 6 * i:6 * i + 6] = b
    g = d.grasp_matrix
    reference = big_m @ g.T @ np.linalg.inv(g @ big_m @ g.T)
    np.testing.assert_allclose(d.pseudo_inverse, reference, atol=1e-12)
