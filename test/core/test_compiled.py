"""The compiled kernels of the core (numba) against their definitions, written here with numpy.

Each kernel replaces a few numpy calls on small arrays; the references below are the textbook
forms (cross products, eigenvalues, inverses, singular values), not the package's code. The
geometries are those of the contact-weight properties (two contacts, collinear, coplanar, centre
of mass outside the hull, nearly coincident), in m, km or mm.
"""
import math
import os
import subprocess
import sys

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numba
import numpy as np
import pytest
from test_contact_weights import weighted_grasps

from wrench_distribution.core import compiled
from wrench_distribution.core.contacts import ContactArrays
from wrench_distribution.core.grasp import _eigen_inverses, _force_inertias, EIGEN_CUTOFF, grasp_layout
from wrench_distribution.core.options import RANK_TOLERANCE
from wrench_distribution.core.virtual_masses import SubsetGeometry

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)


def test_a_kernel_compiles_without_a_cache_where_numba_has_nowhere_to_keep_one():
    """Source without a file (here, ``exec``): numba refuses to cache it, and the kernel still runs."""
    namespace = {}
    exec('def total_of_squares(values):\n'
         '    total = 0.0\n'
         '    for value in values:\n'
         '        total += value * value\n'
         '    return total\n', namespace)
    function = namespace['total_of_squares']
    with pytest.raises(RuntimeError, match='cannot cache'):
        numba.njit(cache=True)(function)
    compiled_function = compiled.kernel(function)
    assert compiled_function(np.array([1.0, 2.0, 3.0])) == 14.0
    # numpy's semantics: a division by zero is an infinity, not an exception
    assert compiled.kernel(lambda x: x / 0.0)(1.0) == math.inf


def _placed(grasp) -> tuple:
    """Return a drawn grasp's contacts, their arrays and their positions relative to the centre of mass."""
    contacts, model, _, _, _, _ = grasp
    arrays = ContactArrays.of(contacts)
    return contacts, arrays, arrays.positions - model.com_array


def _subset_masks(n: int, rng: np.random.Generator) -> np.ndarray:
    """Return the whole set and up to three random non-empty subsets of ``n`` contacts."""
    masks = [np.ones(n, bool)] + [rng.random(n) < 0.6 for _ in range(3)]
    return np.array([mask for mask in masks if mask.any()])


@SETTINGS
@given(weighted_grasps(), st.integers(0, 2 ** 32 - 1))
def test_the_grasp_matrix_moves_each_contact_wrench_to_the_centre_of_mass(grasp, seed):
    """``G h`` is the sum of the forces and of ``r x f`` plus the rigid contacts' torques."""
    contacts, arrays, relative = _placed(grasp)
    layout = grasp_layout(arrays.types)
    wrenches = np.random.default_rng(seed).normal(size=(len(contacts), 6))
    expected = np.zeros(6)
    for position, (force, torque), rigid in zip(relative, wrenches.reshape(-1, 2, 3), layout.rigid):
        expected += np.r_[force, np.cross(position, force) + (torque if rigid else 0.0)]
    scale = max(float(np.abs(relative).max()), 1.0) * np.abs(wrenches).max() * len(contacts)
    assert np.allclose(layout.matrix(relative) @ wrenches.ravel(), expected, rtol=0.0, atol=1e-13 * scale)


@SETTINGS
@given(weighted_grasps(), st.integers(0, 2 ** 32 - 1))
def test_subset_geometry_is_the_subsets_centroid_extents_length_and_rank(grasp, seed):
    """Centroids, squared extents (eigenvalues of the scatter), reference lengths and ranks of ``G``."""
    contacts, arrays, relative = _placed(grasp)
    rigid = np.array([kind == 'rigid' for kind in arrays.types])
    masks = _subset_masks(len(contacts), np.random.default_rng(seed))
    geometry = SubsetGeometry.of(relative, masks, rigid if rigid.any() else None)
    for k, mask in enumerate(masks):
        members = relative[mask]
        centroid = members.mean(axis=0)
        spread = members - centroid
        extents = np.linalg.eigvalsh(spread.T @ spread)
        size = float(np.abs(relative).max())
        assert np.allclose(geometry.centroid[k], centroid, rtol=0.0, atol=1e-12 * size)
        assert np.allclose(geometry.extents[k], np.maximum(extents, 0.0), rtol=0.0,
                           atol=1e-12 * max(extents.max(), size * size * 1e-12))
        length = math.sqrt(float(np.sum(spread * spread)) / mask.sum() + 1e-6 * float(centroid @ centroid)) or 1.0
        assert geometry.lengths[k] == pytest.approx(length, rel=1e-9)
        if (rigid & mask).any():
            assert geometry.ranks[k] == 6
            continue
        # point contacts: singular values of G about the centroid, positions over the length
        grasp_matrix = np.vstack([np.hstack([np.eye(3)] * int(mask.sum())),
                                  np.hstack([np.cross(np.eye(3), p / length) for p in spread])])
        singular = np.linalg.svd(grasp_matrix, compute_uv=False)
        # ranks within a hair of the tolerance can go either way with rounding: not drawn here
        margin = np.abs(singular / (RANK_TOLERANCE * singular.max()) - 1.0).min()
        if margin > 1e-6:
            assert geometry.ranks[k] == int(np.sum(singular > RANK_TOLERANCE * singular.max()))


@SETTINGS
@given(weighted_grasps(), st.integers(0, 2 ** 32 - 1))
def test_force_inertia_is_its_definition(grasp, seed):
    """``c = sum m r / M``, ``d = r - c``, ``J_f = sum m (|d|^2 I - d d^T)`` and ``k = tr J_f / 2``."""
    contacts, _, relative = _placed(grasp)
    rng = np.random.default_rng(seed)
    masses = rng.uniform(0.05, 2.0, size=(3, len(contacts))) * (rng.random((3, len(contacts))) < 0.8)
    masses[:, 0] += 0.1
    totals = masses.sum(axis=1)
    com, offsets, moments, j_force, k = _force_inertias(masses, relative, totals)
    size = float(np.abs(relative).max())
    for v in range(3):
        centre = masses[v] @ relative / totals[v]
        d = relative - centre
        inertia = sum(m * (float(x @ x) * np.eye(3) - np.outer(x, x)) for m, x in zip(masses[v], d))
        assert np.allclose(com[v], centre, rtol=0.0, atol=1e-12 * size)
        assert np.allclose(offsets[v], d, rtol=0.0, atol=1e-12 * size)
        assert np.allclose(moments[v], masses[v][:, None] * d, rtol=0.0, atol=1e-12 * size * masses.max())
        assert np.allclose(j_force[v], inertia, rtol=0.0, atol=1e-11 * size * size * totals[v])
        assert k[v] == pytest.approx(np.trace(inertia) / 2.0, rel=1e-11, abs=1e-11 * size * size * totals[v])


@pytest.mark.parametrize('unit', [1e-3, 1.0, 1e3])
def test_spectral_inverses_of_a_regular_and_of_a_collinear_inertia(unit):
    """Regular: ``A^+ = J_f^-1``, no regulariser. Collinear with a rigid contact: ``A = J_f + K`` regular, faded."""
    rng = np.random.default_rng(7)
    basis = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    regular = basis @ np.diag([0.5, 1.0, 2.0]) @ basis.T * unit ** 2
    line, across = np.array([0.0, 0.0, 1.0]), np.array([0.6, 0.8, 0.0])
    collinear = np.diag([1.0, 1.0, 0.0]) * unit ** 2               # J_f of masses on the z axis
    j_force = np.stack([regular, collinear])
    references = np.array([np.trace(regular), np.trace(collinear)]) / 2.0
    regulariser, flags, a_pinv, force_pinv = _eigen_inverses(j_force, references, np.array([True, True]),
                                                             np.ones(2))
    assert flags.tolist() == [False, True]
    assert np.allclose(regulariser[0], 0.0)
    assert np.allclose(a_pinv[0], np.linalg.inv(regular), rtol=1e-12, atol=0.0)
    assert np.allclose(force_pinv[0], a_pinv[0])
    # the regulariser acts along the line only: symmetric, positive there, zero across
    assert np.allclose(regulariser[1], regulariser[1].T)
    assert line @ regulariser[1] @ line > EIGEN_CUTOFF * references[1]
    assert np.allclose(regulariser[1] @ across, 0.0, atol=1e-12 * unit ** 2)
    assert np.allclose(a_pinv[1], np.linalg.inv(collinear + regulariser[1]), rtol=1e-9, atol=0.0)
    # forces cannot turn the object about the line: the faded inverse has nothing along it
    assert np.allclose(force_pinv[1] @ line, 0.0, atol=1e-12 / unit ** 2)
    assert np.allclose(force_pinv[1] @ across, a_pinv[1] @ across, rtol=1e-12, atol=0.0)
    # without a rigid contact there is no regulariser, and the line's direction is cut out of A^+
    regulariser, flags, a_pinv, _ = _eigen_inverses(j_force, references, np.array([False, False]), np.ones(2))
    assert not flags.any() and np.allclose(regulariser, 0.0)
    assert np.allclose(a_pinv[1] @ line, 0.0, atol=1e-12 / unit ** 2)
    assert np.allclose(a_pinv[1] @ collinear, np.diag([1.0, 1.0, 0.0]), atol=1e-12)


@pytest.mark.slow
def test_warm_compiles_the_kernels_into_numbas_cache(tmp_path):
    """``warm()`` leaves every kernel in the cache; the next process loads them and compiles none."""
    from wrench_distribution.core import grasp, synthesis_maps, virtual_masses
    kernels = sorted(name for module in (grasp, synthesis_maps, virtual_masses)
                     for name, value in vars(module).items() if isinstance(value, numba.core.dispatcher.Dispatcher))
    assert len(kernels) >= 9, kernels
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), NUMBA_DEBUG_CACHE='1')
    command = [sys.executable, '-c', 'from wrench_distribution.core.compiled import warm; warm()']
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    cached = {path.name.split('-')[0].split('.')[-1] for path in tmp_path.rglob('*.nbi')}
    assert set(kernels) <= cached, f'not in the cache: {set(kernels) - cached}'
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert 'data loaded from' in second.stdout + second.stderr
    assert 'data saved to' not in second.stdout + second.stderr, (second.stdout + second.stderr)[-3000:]
