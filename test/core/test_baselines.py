"""Tests of ``wrench_distribution.core.baselines`` against the paper's printed numbers.

Reference values are the digits printed in Flight and Gosselin (arXiv:2603.11431), section IX-C
(the 3-D unit-sphere example, eqs. 92-101). Printed values have 3 decimals, so comparisons use
``PRINTED`` = half a unit in the last printed digit (plus float slack); quantities that the paper
obtains by summing rounded numbers get a slightly looser tolerance, stated where used.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from wrench_distribution import core
from wrench_distribution.core import baselines as bl

PRINTED = 5e-4 + 1e-9  # half a unit of the 3rd decimal
# One unit of the 3rd decimal. Used only where the paper's printed digits are not the correct
# rounding of the quantity computed from the paper's own inputs (eq. 64 m_2* = 0.78947 printed
# 0.790; eq. 97 0.62646 printed 0.627 and 0.43344 printed 0.434; eq. 99, see
# kumar_waldron_helicoidal). No combination of rounded intermediates tried reproduces them.
ONE_UNIT = 1e-3 + 1e-9

# ---------------------------------------------------------------- section IX-C data (eqs. 92-93)

# (azimuth, elevation) in degrees, text below eq. 92
ANGLES = [(0.0, 65.0), (-60.0, -25.0), (65.0, -45.0), (180.0, 0.0)]


def sphere_point(alpha_deg: float, gamma_deg: float) -> np.ndarray:
    """Eq. 92: point on the unit sphere."""
    a, g = np.radians(alpha_deg), np.radians(gamma_deg)
    return np.array([np.cos(a) * np.cos(g), np.sin(a) * np.cos(g), np.sin(g)])


R = np.array([sphere_point(a, g) for a, g in ANGLES])
# eq. 93, [fx fy fz tx ty tz] per contact
H = np.array([
    [1.0, 0.5, 1.0, 0.0, 0.5, 0.5],
    [0.0, 0.0, 1.0, 1.0, 0.0, 0.0],
    [-0.25, 0.75, 0.0, 0.0, -0.5, 0.5],
    [0.5, -0.25, 1.0, -0.5, 0.75, 0.0],
])
RIGID = ['rigid'] * 4
POINT = ['point'] * 4

# printed results
H_O_PRINTED = np.array([1.250, 1.0, 3.0, -0.208, 1.957, 1.846])  # text after eq. 93
M_STAR_PRINTED = np.array([1.123, 0.790, 0.967, 1.121])  # text before eq. 94 (m_o* = 4)
J_O_PRINTED = np.array([[2.430, 0.096, -0.074],
                        [0.096, 3.117, 0.176],
                        [-0.074, 0.176, 2.454]])  # eq. 94
XDD_O_PRINTED = np.array([0.313, 0.250, 0.750, -0.087, 0.591, 0.707])  # text after eq. 94
F95 = np.array([[0.952, 0.705, 0.562], [0.488, 0.421, 0.435],
                [-0.540, 0.387, 0.501], [0.350, -0.513, 1.503]])  # eq. 95
F97 = np.array([[1.145, 0.627, 0.463], [0.434, 0.395, 0.351],
                [-0.736, 0.418, 0.398], [0.408, -0.439, 1.789]])  # eq. 97
H_O_97_PRINTED = np.array([1.250, 1.0, 3.0, -0.126, 2.690, 1.820])  # text after eq. 97
F98 = np.array([[0.969, 0.609, 0.478], [0.555, 0.484, 0.542],
                [-0.602, 0.350, 0.496], [0.328, -0.443, 1.484]])  # eq. 98
F99 = np.array([[0.889, 0.667, 0.481], [0.600, 0.517, 0.563],
                [-0.592, 0.370, 0.477], [0.313, -0.459, 1.386]])  # eq. 99
H_O_99_PRINTED = np.array([1.210, 1.095, 2.908, -0.260, 1.756, 1.935])  # text after eq. 99


def skew(v: np.ndarray) -> np.ndarray:
    """Test-local S(v) (independent of the module's helper)."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def resultant_of_forces(r: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Eq. 12 for pure forces, written out independently of grasp_matrix."""
    return np.concatenate([f.sum(axis=0), np.cross(r, f).sum(axis=0)])


def eq64_masses(r: np.ndarray, m_o: float) -> np.ndarray:
    """Independent derivation of m* from eq. 64: [1 ... 1; r_1 ... r_n] m* = [m_o*; 0]."""
    big_r = np.vstack([np.ones(r.shape[0]), r.T])
    c = np.concatenate([[m_o], np.zeros(3)])
    m, *_ = np.linalg.lstsq(big_r, c, rcond=None)
    return m


M_STAR = eq64_masses(R, 4.0)
H_O = resultant_of_forces(R, H[:, :3]) + np.concatenate([np.zeros(3), H[:, 3:].sum(axis=0)])


# ---------------------------------------------------------------- grasp matrix


def test_grasp_matrix_blocks_eq13_eq14_mixed():
    types = ['rigid', 'point', 'rigid', 'point']
    g = bl.grasp_matrix(R, types)
    assert g.shape == (6, 18)
    # rigid contact 0: columns 0..5 = [[I, 0], [S(r), I]] (eq. 14)
    np.testing.assert_array_equal(g[:3, 0:3], np.eye(3))
    np.testing.assert_array_equal(g[:3, 3:6], np.zeros((3, 3)))
    np.testing.assert_allclose(g[3:, 0:3], skew(R[0]))
    np.testing.assert_array_equal(g[3:, 3:6], np.eye(3))
    # point contact 1: columns 6..8 = [I; S(r)] (eq. 13)
    np.testing.assert_array_equal(g[:3, 6:9], np.eye(3))
    np.testing.assert_allclose(g[3:, 6:9], skew(R[1]))
    # G h equals the sums of eq. 12, point torques dropped
    h = H.copy()
    h[[1, 3], 3:] = 0.0
    expected = resultant_of_forces(R, h[:, :3]) + np.concatenate([np.zeros(3), h[:, 3:].sum(0)])
    np.testing.assert_allclose(g @ bl.stack_expanded(h, types), expected, atol=1e-12)


def test_expand_and_stack_round_trip_and_batch():
    types = ['point', 'rigid', 'point']
    x = np.arange(12.0)
    e = bl.expand_stacked(x, types)
    assert e.shape == (3, 6)
    np.testing.assert_array_equal(e[0], [0, 1, 2, 0, 0, 0])
    np.testing.assert_array_equal(e[1], [3, 4, 5, 6, 7, 8])
    np.testing.assert_array_equal(e[2], [9, 10, 11, 0, 0, 0])
    np.testing.assert_array_equal(bl.stack_expanded(e, types), x)
    xb = np.arange(36.0).reshape(3, 12)
    eb = bl.expand_stacked(xb, types)
    assert eb.shape == (3, 3, 6)
    np.testing.assert_array_equal(bl.stack_expanded(eb, types), xb)


def test_section_ix_c_resultant_matches_printed():
    g = bl.grasp_matrix(R, RIGID)
    np.testing.assert_allclose(g @ H.ravel(), H_O_PRINTED, atol=PRINTED)
    np.testing.assert_allclose(H_O, H_O_PRINTED, atol=PRINTED)


def test_eq64_virtual_masses_and_eq94_inertia_match_printed():
    np.testing.assert_allclose(M_STAR, M_STAR_PRINTED, atol=ONE_UNIT)  # 0.789474 printed 0.790
    j_o = sum(m * skew(r) @ skew(r).T for m, r in zip(M_STAR, R))
    np.testing.assert_allclose(j_o, J_O_PRINTED, atol=PRINTED)


# ---------------------------------------------------------------- Kumar & Waldron (eqs. 2, 3, 98)


def test_moore_penrose_matches_eq98_and_eq2():
    h = bl.moore_penrose(R, POINT, H_O)
    assert h.shape == (4, 6)
    np.testing.assert_array_equal(h[:, 3:], 0.0)
    np.testing.assert_allclose(h[:, :3], F98, atol=PRINTED)
    # reproduces the prescribed resultant (eq. 1)
    np.testing.assert_allclose(resultant_of_forces(R, h[:, :3]), H_O, atol=1e-12)
    # Kumar-Waldron's no-interaction condition, eq. 2, for every pair
    np.testing.assert_allclose(bl.kw_interaction(R, h), 0.0, atol=1e-12)
    # ... and the printed eq. 98 digits satisfy it to rounding
    assert np.abs(bl.kw_interaction(R, F98)).max() < 4 * PRINTED


def test_moore_penrose_equals_numpy_pinv_rigid_and_batch():
    g = bl.grasp_matrix(R, RIGID)
    ref = np.linalg.pinv(g) @ H_O
    np.testing.assert_allclose(bl.moore_penrose(R, RIGID, H_O).ravel(), ref, atol=1e-12)
    batch = np.stack([H_O, 2 * H_O, -H_O])
    hb = bl.moore_penrose(R, RIGID, batch)
    assert hb.shape == (3, 4, 6)
    np.testing.assert_allclose(hb[1], 2 * hb[0], atol=1e-12)
    np.testing.assert_allclose(hb[2].ravel(), -ref, atol=1e-12)


# ---------------------------------------------------------------- Erhart & Hirche eq. 4 (eq. 97)


def test_eq4_reproduces_printed_wrong_forces_eq97():
    h = bl.erhart_hirche_eq4(R, POINT, H_O, M_STAR)
    np.testing.assert_array_equal(h[:, 3:], 0.0)
    # max deviation 5.6e-4 (0.43344 printed 0.434): one unit, not half, see ONE_UNIT
    np.testing.assert_allclose(h[:, :3], F97, atol=ONE_UNIT)


def test_eq4_misses_the_prescribed_resultant():
    h = bl.erhart_hirche_eq4(R, POINT, H_O, M_STAR)
    produced = resultant_of_forces(R, h[:, :3])
    np.testing.assert_allclose(produced, H_O_97_PRINTED, atol=PRINTED)
    assert np.abs(produced - H_O).max() > 0.5  # t_y: 2.690 vs 1.957
    # the printed eq. 97 digits give the printed wrong resultant too
    np.testing.assert_allclose(resultant_of_forces(R, F97), H_O_97_PRINTED, atol=4 * PRINTED)


def test_corrected_eq81_reproduces_eq95_and_resultant():
    h = bl.corrected_eq81(R, POINT, H_O, M_STAR)
    np.testing.assert_allclose(h[:, :3], F95, atol=PRINTED)
    np.testing.assert_allclose(resultant_of_forces(R, h[:, :3]), H_O, atol=1e-12)


def test_eq4_and_eq81_batch_shapes_and_torque_inertias():
    batch = np.stack([H_O, 0.5 * H_O])
    for fn in (bl.erhart_hirche_eq4, bl.corrected_eq81):
        hb = fn(R, POINT, batch, M_STAR)
        assert hb.shape == (2, 4, 6)
        np.testing.assert_allclose(hb[1], 0.5 * hb[0], atol=1e-12)
    # rigid contacts with J_i* = j I3 (scalars): eq. 81 still reproduces h_o, eq. 4 does not
    j = np.full(4, 0.7)
    g = bl.grasp_matrix(R, RIGID)
    good = bl.corrected_eq81(R, RIGID, H_O, M_STAR, j)
    bad = bl.erhart_hirche_eq4(R, RIGID, H_O, M_STAR, j)
    np.testing.assert_allclose(g @ good.ravel(), H_O, atol=1e-12)
    assert np.abs(g @ bad.ravel() - H_O).max() > 1e-2


def test_eq4_rejects_torque_inertia_on_point_contact():
    with pytest.raises(ValueError):
        bl.erhart_hirche_eq4(R, POINT, H_O, M_STAR, np.ones(4))


# ---------------------------------------------------------------- helicoidal fields (VIII-B, IX-C)


def test_eq95_forces_over_virtual_masses_lie_on_the_virtual_acceleration_field():
    # f_m,i / m_i* = p_o* + w_o* x r_i (eq. 49): exact helicoidal field with the printed x_o*.
    h = bl.corrected_eq81(R, POINT, H_O, M_STAR)
    a, alpha, res = bl.helicoidal_fit(R, h[:, :3] / M_STAR[:, None])
    assert res < 1e-12
    np.testing.assert_allclose(np.concatenate([a, alpha]), XDD_O_PRINTED, atol=PRINTED)
    # the printed eq. 95 digits, divided by the printed m*, fit it to rounding
    _, _, res_printed = bl.helicoidal_fit(R, F95 / M_STAR_PRINTED[:, None])
    assert res_printed < 4 * PRINTED


def test_eq95_forces_themselves_are_not_helicoidal():
    # the manipulating forces weighted by unequal m_i* leave the field (section VIII-B)
    _, _, res = bl.helicoidal_fit(R, F95)
    assert res > 0.1


def test_eq98_pinv_forces_do_lie_on_a_helicoidal_field():
    """Documents an inconsistency in the paper.

    IX-C says the G^+ forces of eq. 98 "do not lie on a helicoidal field". But for point
    contacts G^+ h_o = G^T y and every block of G^T is [I3, S(r_i)^T], so
    f_i = y_f + y_t x r_i: always a helicoidal field (footnote 1's definition). Both the exact
    forces and the printed digits fit one. What differs from the paper's virtual acceleration
    field is the field's parameters: the fitted (a, alpha) are not x_o* = (p_o*, w_o*).
    """
    h = bl.moore_penrose(R, POINT, H_O)
    a, alpha, res = bl.helicoidal_fit(R, h)
    assert res < 1e-12
    _, _, res_printed = bl.helicoidal_fit(R, F98)
    assert res_printed < 4 * PRINTED
    assert np.abs(np.concatenate([a, alpha]) - XDD_O_PRINTED).max() > 0.05


def test_eq99_printed_forces_are_helicoidal_with_a_equal_fo_over_n():
    # Kumar and Waldron's field (eq. 99): helicoidal, translation part f_o / n, and the printed
    # (wrong) resultant after eq. 99 is what the printed forces produce.
    a, _, res = bl.helicoidal_fit(R, F99)
    assert res < 4 * PRINTED
    np.testing.assert_allclose(a, H_O[:3] / 4, atol=PRINTED)
    # sums of 4 rounded numbers: allow 4 half-units
    np.testing.assert_allclose(resultant_of_forces(R, F99), H_O_99_PRINTED, atol=4 * PRINTED)
    assert np.abs(bl.kw_interaction(R, F99)).max() < 4 * PRINTED  # eq. 2


def test_kumar_waldron_helicoidal_matches_eq99_and_its_wrong_resultant():
    f = bl.kumar_waldron_helicoidal(R, H_O)
    assert f.shape == (4, 3)
    np.testing.assert_allclose(f, F99, atol=ONE_UNIT)  # max deviation 6.4e-4
    np.testing.assert_allclose(resultant_of_forces(R, f), H_O_99_PRINTED, atol=ONE_UNIT)
    assert np.abs(resultant_of_forces(R, f) - H_O).max() > 0.05  # misses h_o, as the paper says
    np.testing.assert_allclose(bl.kw_interaction(R, f), 0.0, atol=1e-12)  # satisfies eq. 2
    assert bl.helicoidal_fit(R, f)[2] < 1e-12
    fb = bl.kumar_waldron_helicoidal(R, np.stack([H_O, 3 * H_O]))
    assert fb.shape == (2, 4, 3)
    np.testing.assert_allclose(fb[1], 3 * f, atol=1e-12)


def test_helicoidal_fit_batch_shapes():
    fb = np.stack([F95, F98, F99])
    a, alpha, res = bl.helicoidal_fit(R, fb)
    assert a.shape == (3, 3) and alpha.shape == (3, 3) and res.shape == (3,)
    for k in range(3):
        a1, al1, r1 = bl.helicoidal_fit(R, fb[k])
        np.testing.assert_allclose(a[k], a1, atol=1e-12)
        np.testing.assert_allclose(alpha[k], al1, atol=1e-12)
        np.testing.assert_allclose(res[k], r1, atol=1e-12)


# ---------------------------------------------------------------- Donner-style QP


def _check_qp(types, h, dec, tol=1e-6):
    g = bl.grasp_matrix(R, types)
    hm = dec.manipulating
    assert hm.shape == (4, 6) and dec.constraint.shape == (4, 6)
    assert dec.status in ('Solved', 'ClosedForm')
    np.testing.assert_allclose(g @ bl.stack_expanded(hm, types), dec.resultant, atol=tol)
    hp = h.copy()
    for i, t in enumerate(types):
        if t == 'point':
            hp[i, 3:] = 0.0
            assert np.all(hm[i, 3:] == 0.0)
    np.testing.assert_allclose(dec.resultant, g @ bl.stack_expanded(hp, types), atol=1e-12)
    # sign convention of eq. 8: h = h_m + h_c
    np.testing.assert_allclose(dec.constraint, hp - hm, atol=1e-12)
    scale = np.abs(hp).max() ** 2
    for i in range(4):
        for s in (slice(0, 3), slice(3, 6)):
            x, a = hm[i, s], hp[i, s]
            assert x @ x <= a @ x + tol * scale  # physical plausibility (IX-A)
            c = a - x
            assert c @ c <= a @ c + tol * scale  # the constraint part too (same inequality)
    # no worse than the always-feasible h_m = h
    assert dec.objective <= float(np.sum(hp[:, :3] ** 2) + np.sum(hp[:, 3:] ** 2)) + 1e-9


@pytest.mark.parametrize('types', [RIGID, POINT, ['rigid', 'point', 'rigid', 'point']])
def test_donner_qp_on_section_ix_c(types):
    dec = bl.donner_qp_decomposition(R, types, H)
    _check_qp(types, H, dec)
    if types == RIGID:
        np.testing.assert_allclose(dec.resultant, H_O_PRINTED, atol=PRINTED)
        assert dec.status == 'Solved'


def test_donner_qp_closed_form_fast_path():
    # equal parallel forces at contacts centred on the CoM: the minimum-norm solution is h itself
    r = np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, 1.0, 0], [0, -1.0, 0]])
    h = np.tile([0.0, 0.0, 2.0, 0.0, 0.0, 0.0], (4, 1))
    dec = bl.donner_qp_decomposition(r, RIGID, h)
    assert dec.status == 'ClosedForm' and dec.iterations == 0
    np.testing.assert_allclose(dec.manipulating, h, atol=1e-12)
    np.testing.assert_allclose(dec.constraint, 0.0, atol=1e-12)


def test_donner_qp_squeeze_only_gives_zero_manipulation():
    # two opposing squeeze forces: resultant zero, everything is constraint wrench
    r = np.array([[0.5, 0, 0], [-0.5, 0, 0]])
    h = np.array([[-3.0, 0, 0, 0, 0, 0], [3.0, 0, 0, 0, 0, 0]])
    dec = bl.donner_qp_decomposition(r, ['point', 'point'], h)
    assert dec.status in ('Solved', 'ClosedForm')
    np.testing.assert_allclose(dec.manipulating, 0.0, atol=1e-6)
    np.testing.assert_allclose(dec.constraint, h, atol=1e-6)


def test_input_validation():
    with pytest.raises(ValueError):
        bl.grasp_matrix(R, ['rigid', 'point', 'soft', 'rigid'])
    with pytest.raises(ValueError):
        bl.grasp_matrix(R, ['rigid'] * 3)
    with pytest.raises(ValueError):
        bl.moore_penrose(R, RIGID, np.array([np.nan, 0, 0, 0, 0, 0]))
    with pytest.raises(ValueError):
        bl.donner_qp_decomposition(R, RIGID, H[:3])
    with pytest.raises(ValueError):
        bl.erhart_hirche_eq4(R, POINT, H_O, M_STAR[:3])


# ---------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=3, max_value=8), st.integers(min_value=0, max_value=2 ** 31 - 1))
def test_property_pinv_point_forces_reproduce_resultant_and_are_helicoidal(n, seed):
    rng = np.random.default_rng(seed)
    r = rng.normal(size=(n, 3))
    h_o = rng.normal(size=6)
    h = bl.moore_penrose(r, ['point'] * n, h_o)
    np.testing.assert_allclose(resultant_of_forces(r, h[:, :3]), h_o, atol=1e-8)
    np.testing.assert_allclose(bl.kw_interaction(r, h), 0.0, atol=1e-8)
    assert bl.helicoidal_fit(r, h)[2] < 1e-8


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=4, max_value=8), st.integers(min_value=0, max_value=2 ** 31 - 1))
def test_property_eq81_reproduces_resultant_eq4_generally_not(n, seed):
    rng = np.random.default_rng(seed)
    r = rng.normal(size=(n, 3))
    r -= r.mean(axis=0)  # CoM at the centroid: m_i* = 1 solves eqs. 51 and 53
    h_o = rng.normal(size=6)
    m = np.ones(n)
    good = bl.corrected_eq81(r, ['point'] * n, h_o, m)
    np.testing.assert_allclose(resultant_of_forces(r, good[:, :3]), h_o, atol=1e-8)
    # Corollary 1b: with m_i* = 1 the forces-only eq. 81 equals G^+ for point contacts
    np.testing.assert_allclose(good, bl.moore_penrose(r, ['point'] * n, h_o), atol=1e-8)


# ---------------------------------------------------------------- cross-check with the core


def test_core_reduced_forces_only_matches_eq81_reference():
    contacts = [core.Contact(name=f'c{i}', type='point', position=tuple(p))
                for i, p in enumerate(R)]
    dist = core.LoadDistributor(contacts, core.ObjectModel(com=(0.0, 0.0, 0.0)),
                                core.DistributionOptions(virtual_masses='reduced'))
    syn = dist.synthesize(H_O)
    np.testing.assert_allclose(syn.wrench_object[:, :3], F95, atol=PRINTED)
    ref = bl.corrected_eq81(R, POINT, H_O, M_STAR)
    np.testing.assert_allclose(syn.wrench_object, ref, atol=1e-9)


# ---------------------------------------------------------------- benchmark smoke run


def test_bench_core_smoke(capsys):
    """benchmarks/bench_core.py runs end to end (tiny budgets; no timing asserted)."""
    import importlib.util
    from pathlib import Path

    from ros_harness import REPO
    path = Path(REPO) / 'benchmarks' / 'bench_core.py'
    spec = importlib.util.spec_from_file_location('bench_core_smoke', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.run([2, 4], batch=300, reps=1, budget=1e-3, qp_budget=1e-3,
                         batch_budget=1e-3)
    assert set(results) == {(kind, n) for kind in ('rigid', 'point') for n in (2, 4)}
    for row in results.values():
        for key in ('cached', 'uncached', 'pinv', 'pinv_cached', 'qp', 'synth_rate',
                    'analyze_rate'):
            assert row[key] > 0
    module.summary(results, [2, 4])
    assert 'Ratios and targets' in capsys.readouterr().out
