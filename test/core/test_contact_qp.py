"""TSID's way as a baseline (core/contact_qp.py) and the stepping benchmark's smoke run.

References: where no cone or bound is active, the least-norm forces are the Moore-Penrose
solution ``pinv(G) h_o`` (computed here with numpy); the resultant by hand; the cones by hand.
"""
import importlib.util
from pathlib import Path

import numpy as np

from ros_harness import REPO
from wrench_distribution.core.contact_qp import least_norm_contact_forces

FEET = np.array([[0.3, 0.2, -0.4], [0.3, -0.2, -0.4], [-0.3, 0.2, -0.4], [-0.3, -0.2, -0.4]])
UP = np.tile([0.0, 0.0, 1.0], (4, 1))


def grasp(r):
    return np.vstack([np.tile(np.eye(3), len(r)), np.hstack([[[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]]
                                                             for p in r])])


def test_without_active_constraints_it_is_the_least_norm_solution():
    wrench = np.array([2.0, -1.0, 196.2, 0.5, 0.2, 0.1])
    result = least_norm_contact_forces(FEET, UP, np.full(4, 0.6), wrench)
    assert result.status == 'Solved'
    expected = (np.linalg.pinv(grasp(FEET)) @ wrench).reshape(4, 3)
    np.testing.assert_allclose(result.forces, expected, atol=1e-6)


def test_the_bounds_and_cones_hold_and_the_resultant_is_exact():
    wrench = np.array([30.0, 10.0, 196.2, 2.0, -1.0, 0.5])
    limits = np.array([5.0, np.inf, np.inf, np.inf])
    result = least_norm_contact_forces(FEET, UP, np.full(4, 0.6), wrench, limits)
    forces = result.forces
    total = np.r_[forces.sum(axis=0), np.cross(FEET, forces).sum(axis=0)]
    np.testing.assert_allclose(total, wrench, atol=1e-6)
    assert forces[0, 2] <= 5.0 + 1e-6 and np.all(forces[:, 2] >= -1e-7)
    assert np.all(np.hypot(forces[:, 0], forces[:, 1]) <= 0.6 * forces[:, 2] + 1e-6)


def test_the_stepping_benchmark_runs_and_tsid_jumps_where_ours_ramps():
    path = Path(REPO) / 'benchmarks' / 'bench_transitions.py'
    spec = importlib.util.spec_from_file_location('bench_transitions_smoke', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    steps = module.schedule(10)
    ours, _ = module.run_ours(steps)
    tsid, _ = module.run_tsid(steps)
    swing = [k for k, s in enumerate(steps) if s['phase'] == 'swing']
    feet = [steps[k]['foot'] for k in swing]
    assert np.all(ours[swing, feet] == 0.0)                         # the released foot: the number 0
    assert module.resultant_error(steps, ours, list(range(len(steps)))) < 1e-9
    reload = [k for k, s in enumerate(steps) if s['phase'] == 'reload' and s['tick'] == 1]
    ours_step = max(np.linalg.norm(ours[k] - ours[k - 1], axis=1).max() for k in reload)
    tsid_step = max(np.linalg.norm(tsid[k] - tsid[k - 1], axis=1).max() for k in reload)
    # adding a contact in one step: TSID's reloaded foot takes its share at once (a jump of tens of
    # newtons on a 196 N trunk); ours takes a tenth of it per tick of a ten-tick ramp
    assert tsid_step > 5.0 * ours_step
