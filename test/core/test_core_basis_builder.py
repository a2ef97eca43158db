"""The named basis builder against a slow construction written from its definition.

The builder (``core/internal_basis.py``) works on blocks of candidates with a Schur
complement of their Gram matrix and never re-projects its fallback pool. The reference here
does the selection one candidate at a time with a least-squares projection on the elements
kept so far (docs/theory.md, section 6): a candidate is kept when its part independent of
them is at least ``BASIS_TOLERANCE`` of its size; what is left is completed from the
projected unit components, the most independent first (the first of equals). The pair
elements are rebuilt here from their definitions, one name at a time.
"""
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np

from wrench_distribution.core import Contact, LoadDistributor, ObjectModel
from wrench_distribution.core.grasp import null_projector, rotation_blocks
from wrench_distribution.core.internal_basis import Geometry, named_candidates
from wrench_distribution.core.options import BASIS_TOLERANCE

SETTINGS = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')


@st.composite
def grasps(draw, max_contacts=9):
    """Draw contacts in general position or on degenerate layouts, rigid, point or mixed."""
    n = draw(st.integers(2, max_contacts))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    layout = draw(st.sampled_from(['general', 'collinear', 'coplanar', 'duplicate', 'near_collinear',
                                   'grid', 'ring']))
    positions = rng.normal(size=(n, 3)) * draw(st.sampled_from([0.05, 0.5, 3.0]))
    if layout in ('collinear', 'near_collinear'):
        positions = np.outer(rng.normal(size=n), rng.normal(size=3)) + rng.normal(size=3)
        positions += rng.normal(size=(n, 3)) * (1e-7 if layout == 'near_collinear' else 0.0)
    elif layout == 'coplanar':
        positions[:, 2] = 0.0
    elif layout == 'duplicate':
        positions[-1] = positions[0]
    elif layout == 'grid':
        positions = np.array([[0.1 * (k % 3), 0.1 * (k // 3), 0.0] for k in range(n)])
    elif layout == 'ring':
        angles = 2 * np.pi * np.arange(n) / n
        positions = 0.3 * np.c_[np.cos(angles), np.sin(angles), np.zeros(n)]
    types = draw(st.sampled_from(['rigid', 'point', 'mixed']))
    kinds = [('rigid' if types == 'rigid' or (types == 'mixed' and k % 2) else 'point') for k in range(n)]
    aligned = layout in ('grid', 'ring')  # symmetric sets: the frames too
    quaternions = np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)) if aligned else rng.normal(size=(n, 4))
    return [Contact(f'c{k}', t, p, q) for k, (t, p, q) in enumerate(zip(kinds, positions, quaternions))]


def metric_of(grasp):
    """``diag(I, I / l^2)`` on the active components."""
    scale = np.tile(np.r_[np.ones(3), np.full(3, grasp.reference_length ** -2)], len(grasp.names))
    return scale * grasp.active_components


def size(vector, metric):
    return float(np.sqrt(vector @ (metric * vector)))


def residual(vector, kept, metric):
    """``vector`` less its metric-orthogonal projection on the span of ``kept`` (least squares)."""
    if not kept:
        return vector
    root = np.sqrt(metric)
    matrix = np.column_stack(kept)
    coefficients = np.linalg.lstsq(matrix * root[:, None], vector * root, rcond=None)[0]
    return vector - matrix @ coefficients


def reference_basis(grasp, contacts):
    """Names and matrix of the basis, one candidate at a time."""
    metric = metric_of(grasp)
    rotations = np.array([c.rotation for c in contacts])
    geometry = Geometry(np.array([c.position for c in contacts], float), grasp.rigid, grasp.names,
                        np.array(grasp.options.basis_reference_axis), grasp.reference_length, rotations)
    named = [(name, family.vectors[:, k]) for family in named_candidates(geometry)
             for k, name in enumerate(family.names)]
    projector = null_projector(grasp.grasp_matrix, np.where(metric > 0, metric, 1.0), grasp.active_components,
                               grasp.reference_length, grasp.rank)
    indices = np.flatnonzero(grasp.active_components)
    pool = [(f'balanced_{COMPONENTS[i % 6]}({grasp.names[i // 6]})', vector)
            for i, vector in zip(indices, (projector @ rotation_blocks(rotations))[:, indices].T)]
    names, kept = [], []
    for k, (name, vector) in enumerate(named + pool):
        if len(kept) == grasp.internal_dimension:
            break
        norm = size(vector, metric)
        part = residual(vector, kept, metric)
        if norm > 0 and size(part, metric) > BASIS_TOLERANCE * norm:
            names.append(name)
            # a named candidate as it is; a fallback as its part orthogonal to the kept ones, at its size
            kept.append(vector if k < len(named) else part / size(part, metric) * norm)
    while len(kept) < grasp.internal_dimension:
        parts = [residual(vector, kept, metric) for _, vector in pool]
        ratios = np.array([size(p, metric) / max(size(v, metric), 1e-300) for p, (_, v) in zip(parts, pool)])
        best = int(np.flatnonzero(ratios >= (1 - 1e-9) * ratios.max())[0])
        names.append(pool[best][0])
        kept.append(parts[best] / size(parts[best], metric) * size(pool[best][1], metric))
    return names, np.column_stack(kept) if kept else np.zeros((6 * len(contacts), 0))


def pair_definition(name, contacts, axis, length):
    """Return the stacked wrench of one named pair element, from the definitions of the module docstring."""
    kind, members = name[:-1].split('(')
    a, b = (int(m[1:]) for m in members.split(','))
    delta = np.asarray(contacts[b].position, float) - np.asarray(contacts[a].position, float)
    frame = contacts[a].rotation
    if np.linalg.norm(delta) > 1e-9 * length:
        e = delta / np.linalg.norm(delta)
    else:
        e = frame[:, 0] if np.linalg.norm(np.cross(frame[:, 0], axis)) > 1e-6 else frame[:, 1]
    u = np.cross(axis, e)
    for fallback in (frame[:, 0], frame[:, 1]):
        u = u if np.linalg.norm(u) >= 1e-6 else np.cross(fallback, e)
    u /= np.linalg.norm(u)
    direction = {'squeeze': e, 'twist': e, 'bend_u': u, 'bend_v': np.cross(e, u), 'shear_u': u,
                 'shear_v': np.cross(e, u)}[kind]
    out = np.zeros(6 * len(contacts))
    offset = 3 if kind in ('twist', 'bend_u', 'bend_v') else 0
    out[6 * a + offset:6 * a + offset + 3], out[6 * b + offset:6 * b + offset + 3] = direction, -direction
    if kind.startswith('shear'):
        holders = [k for k in (a, b) if contacts[k].type == 'rigid']
        for k in holders:
            out[6 * k + 3:6 * k + 6] = np.cross(delta, direction) / len(holders)
    return out


@SETTINGS
@given(grasps())
def test_the_builder_selects_what_the_one_by_one_construction_selects(contacts):
    grasp = LoadDistributor(contacts, ObjectModel(com=np.mean([c.position for c in contacts], axis=0)))
    names, matrix = reference_basis(grasp, contacts)
    assert grasp.basis_names == names
    scale = max(np.abs(matrix).max(), 1.0) if matrix.size else 1.0
    np.testing.assert_allclose(grasp.basis_matrix, matrix, rtol=0, atol=1e-8 * scale)


@SETTINGS
@given(grasps(max_contacts=12))
def test_named_elements_are_their_definitions_and_self_equilibrated(contacts):
    grasp = LoadDistributor(contacts, ObjectModel())
    axis = np.array(grasp.options.basis_reference_axis)
    matrix = grasp.basis_matrix
    for k, name in enumerate(grasp.basis_names):
        if name.split('(')[0] in ('squeeze', 'twist', 'bend_u', 'bend_v', 'shear_u', 'shear_v'):
            np.testing.assert_allclose(matrix[:, k], pair_definition(name, contacts, axis, grasp.reference_length),
                                       rtol=0, atol=1e-12)
    named = [k for k, name in enumerate(grasp.basis_names) if not name.startswith('balanced')]
    lever = 1.0 + max(np.abs(c.position).max() for c in contacts)
    assert np.abs(grasp.grasp_matrix @ matrix[:, named]).max(initial=0.0) <= 1e-12 * lever


def test_squeezes_pair_each_contact_with_its_six_nearest_earlier_contacts():
    rng = np.random.default_rng(7)
    positions = rng.normal(size=(20, 3))
    grasp = LoadDistributor([Contact(f'c{k}', 'point', p) for k, p in enumerate(positions)], ObjectModel())
    geometry = Geometry(positions, grasp.rigid, grasp.names, np.array([0.0, 0.0, 1.0]), grasp.reference_length,
                        np.tile(np.eye(3), (20, 1, 1)))
    squeezes = next(iter(named_candidates(geometry))).names
    expected = []
    for j in range(1, 20):
        earlier = np.argsort(np.linalg.norm(positions[:j] - positions[j], axis=1))[:6]
        expected += [f'squeeze(c{i},c{j})' for i in sorted(earlier)]
    assert list(squeezes) == expected


def test_two_rigid_grasps_have_the_six_pair_elements():
    contacts = [Contact('left', 'rigid', (0.0, 0.3, 0.0)), Contact('right', 'rigid', (0.0, -0.3, 0.0))]
    grasp = LoadDistributor(contacts, ObjectModel())
    assert grasp.basis_names == [f'{kind}(left,right)' for kind in
                                 ('squeeze', 'twist', 'bend_u', 'bend_v', 'shear_u', 'shear_v')]


def test_symmetric_sets_name_the_same_fallbacks_whatever_the_rounding():
    """A square grid of rigid grasps ties the fallbacks of its corners exactly: the first is named.

    The centre of mass changes only the reference length (the metric scales every contact
    alike), so the tie stays and only the rounding changes.
    """
    positions = np.array([[0.1 * i, 0.1 * j, 0.0] for i in range(3) for j in range(3)])
    contacts = [Contact(f'c{k}', 'rigid', p) for k, p in enumerate(positions)]
    seen = set()
    for com in ([0.0, 0.0, 0.0], [0.1, 0.1, 0.3], [0.05, 0.2, -0.1], [1.0, 2.0, 3.0], [0.3, 0.0, 0.0]):
        seen.add(tuple(LoadDistributor(contacts, ObjectModel(com=com)).basis_names))
    assert len(seen) == 1
    assert [name for name in seen.pop() if name.startswith('balanced')] == ['balanced_tz(c0)']
