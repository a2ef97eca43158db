"""The core's guarantees at their limits: any unit of length, continuity everywhere.

Units. The same physical grasp described with lengths multiplied by a factor drawn
log-uniformly in [1e-6, 1e6], in a rotated object frame and with another origin, must give
the same named basis, the same regime and the same outputs to 1e-9 relative (times the
command gain of a grasp reported ill-conditioned, which amplifies the rounding of the new
description itself). References are
the invariants themselves: forces are unchanged, torques and N*m coordinates scale with the
factor, every vector turns with the frame; all comparisons run in the unit-consistent form of
docs/theory.md, section 3 (torques divided by the reference length).

Continuity. Between two nearby geometries the interval is bisected towards its larger change
(a discontinuity stays in the half that holds it, with its full size); the change over the last
interval must have shrunk with the step. Outputs: the commands for a fixed resultant, the
virtual masses and the named basis (where the basis jumps, its names must say so).
"""
from hypothesis import example, given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from wrench_distribution.core import (
    Contact, DistributionOptions, InvalidInputError, LoadDistributor, matrix_to_quaternion, ObjectModel,
    quaternion_to_matrix, skew, UnrealisableWrenchError,
)

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Agreement required between descriptions of the same grasp (relative, unit-consistent).
SAME = 1e-9


def point_mass_inertia(masses, positions, com):
    """``sum m_i S(r_i - c) S(r_i - c)^T``, written out in the test."""
    out = np.zeros((3, 3))
    for m, p in zip(masses, positions):
        s = skew(np.asarray(p) - com)
        out += m * s @ s.T
    return out


def fibonacci_sphere(n, radius=1.0):
    """``n`` points spread on a sphere (all at the same distance from its centre)."""
    k = np.arange(n) + 0.5
    z = 1 - 2 * k / n
    rho = np.sqrt(1 - z * z)
    angle = np.pi * (3 - np.sqrt(5)) * k
    return radius * np.c_[rho * np.cos(angle), rho * np.sin(angle), z]


def layout_positions(layout, n, rng):
    """Contact positions (about 1 in size) and a centre of mass for one layout."""
    positions = rng.normal(size=(n, 3))
    com = positions.mean(axis=0) + 0.2 * rng.normal(size=3)
    if layout == 'collinear':
        positions = np.outer(rng.normal(size=n), rng.normal(size=3)) + rng.normal(size=3)
    elif layout == 'coplanar':
        positions[:, 2] = 0.0
        com = np.r_[positions[:, :2].mean(axis=0), 0.6]
    elif layout == 'outside_hull':
        com = positions.mean(axis=0) + 3.0 * rng.normal(size=3)
    elif layout in ('sphere', 'circle'):
        positions = fibonacci_sphere(n, 0.7)
        if layout == 'circle':
            angle = 2 * np.pi * np.arange(n) / n
            positions = 0.7 * np.c_[np.cos(angle), np.sin(angle), np.zeros(n)]
        com = np.zeros(3)
    return positions, com


@st.composite
def grasps(draw):
    """Draw a grasp in base units: contacts, object model, options, a resultant and a generator."""
    kind = draw(st.sampled_from(['rigid', 'point', 'mixed']))
    layout = draw(st.sampled_from(['general', 'two', 'collinear', 'coplanar', 'outside_hull', 'sphere']))
    masses = draw(st.sampled_from(['reduced', 'auto', 'full']))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    n = 2 if layout == 'two' else 12 if (layout == 'sphere' or masses == 'full') else int(rng.integers(3, 8))
    positions, com = layout_positions(layout, n, rng)
    types = [kind if kind != 'mixed' else ('rigid' if k % 2 == 0 else 'point') for k in range(n)]
    contacts = [Contact(f'c{k}', t, p, q) for k, (t, p, q) in
                enumerate(zip(types, positions, rng.normal(size=(n, 4))))]
    model = ObjectModel(com=com)
    if masses != 'reduced':
        if draw(st.booleans()):  # the inertia of point masses at the contacts (eq. 59 consistent)
            weights = rng.uniform(0.5, 1.5, n)
            com = weights @ positions / weights.sum() if layout != 'outside_hull' else com
            inertia = point_mass_inertia(weights, positions, com) * 3.0 / weights.sum()
            if layout in ('two', 'collinear'):  # point masses on a line have no inertia about it
                inertia += 0.1 * np.trace(inertia) * np.eye(3)
        else:
            root = rng.normal(size=(3, 3))
            inertia = 3.0 * (root @ root.T + 0.1 * np.eye(3))
        model = ObjectModel(com=com, mass=3.0, inertia=inertia)
    options = DistributionOptions(torque_share=draw(st.sampled_from([0.0, 0.4, 1.0])), virtual_masses=masses)
    wrench = np.r_[rng.normal(size=3), rng.normal(size=3)] * 10.0
    return contacts, model, options, wrench, rng


def described(contacts, model, options, rotation, origin, scale):
    """Describe the same grasp in a frame turned by ``rotation``, with origin moved, lengths x scale."""
    moved = [Contact(c.name, c.type, scale * (rotation @ np.array(c.position)) + origin,
                     matrix_to_quaternion(rotation @ c.rotation)) for c in contacts]
    inertia = None if model.inertia is None else scale ** 2 * rotation @ model.inertia_matrix @ rotation.T
    new_model = ObjectModel(com=scale * (rotation @ np.array(model.com)) + origin, mass=model.mass, inertia=inertia)
    new_options = DistributionOptions(torque_share=options.torque_share, virtual_masses=options.virtual_masses,
                                      basis_reference_axis=rotation @ np.array(options.basis_reference_axis))
    return moved, new_model, new_options


def consistent(stacked, length):
    """Unit-consistent form of wrenches (..., 6): torques divided by ``length``."""
    return np.asarray(stacked) * np.r_[np.ones(3), np.full(3, 1.0 / length)]


def relative(a, b, size=0.0):
    """Largest difference relative to the largest magnitude of the reference ``b`` (or ``size``)."""
    return float(np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), size, 1e-300))


def turn_back(stacked, rotation, scale):
    """Object-axes wrenches (..., 6) of the moved description, turned back and in base units."""
    stacked = np.asarray(stacked)
    return np.concatenate([stacked[..., :3] @ rotation, stacked[..., 3:] @ rotation / scale], axis=-1)


def build(contacts, model, options):
    try:
        return LoadDistributor(contacts, model, options)
    except InvalidInputError as error:
        return error


def compare_descriptions(base, moved, rotation, scale, wrench, rng):
    """Every output of the two descriptions, as relative errors (unit-consistent)."""
    length = base.reference_length
    errors = {'masses': relative(moved.virtual_masses, base.virtual_masses),
              'length': relative(moved.reference_length / scale, length),
              'gain': relative(moved.gain, base.gain),
              'condition': relative(moved.basis_condition, base.basis_condition)}
    # an N*m coordinate is `scale` times larger in the moved description; over the length it is in N
    lam_unit = np.array([scale if u == 'N*m' else 1.0 for u in base.basis_units])
    to_newtons = np.where(lam_unit == 1.0, 1.0, 1.0 / length)
    columns = base.basis_matrix.T.reshape(-1, base.n, 6)
    back = turn_back(moved.basis_matrix.T.reshape(-1, base.n, 6), rotation, scale) * lam_unit[:, None, None]
    errors['basis'] = relative(consistent(back, length) * to_newtons[:, None, None],
                               consistent(columns, length) * to_newtons[:, None, None]) if columns.size else 0.0
    lam = 5.0 * rng.normal(size=base.internal_dimension) / to_newtons
    moved_wrench = np.r_[rotation @ wrench[:3], scale * (rotation @ wrench[3:])]
    try:
        first = base.synthesize(wrench, lam)
    except UnrealisableWrenchError:
        with pytest.raises(UnrealisableWrenchError):
            moved.synthesize(moved_wrench, lam * lam_unit)
        return errors
    second = moved.synthesize(moved_wrench, lam * lam_unit)
    unit = np.r_[np.ones(3), np.full(3, scale)]
    errors['commands'] = relative(consistent(second.wrench_contact / unit, length),
                                  consistent(first.wrench_contact, length))
    errors['manipulating'] = relative(consistent(turn_back(second.manipulating_object, rotation, scale), length),
                                      consistent(first.manipulating_object, length))
    noise = rng.normal(size=first.wrench_contact.shape) * np.r_[np.ones(3), np.full(3, length)]
    measured = first.wrench_contact + noise
    a, b = base.analyze(measured), moved.analyze(measured * unit)
    # the analysis is linear in the measurement: its rounding scales with the measurement's size
    size = np.abs(consistent(measured, length)).max()
    if a.internal_load.size:
        errors['internal_load'] = relative(b.internal_load / lam_unit * to_newtons, a.internal_load * to_newtons,
                                           size)
    errors['internal_wrench'] = relative(consistent(b.internal_contact / unit, length),
                                         consistent(a.internal_contact, length), size)
    errors['load_norm'] = relative(b.internal_load_norm, a.internal_load_norm, size)
    errors['invariant'] = relative(consistent(b.invariant_contact / unit, length),
                                   consistent(a.invariant_contact, length), size)
    return errors


@SETTINGS
@given(grasps(), st.floats(-6.0, 6.0))
def test_same_answer_in_any_unit_frame_and_origin(grasp, exponent):
    contacts, model, options, wrench, rng = grasp
    scale = 10.0 ** exponent
    rotation = quaternion_to_matrix(rng.normal(size=4))
    origin = scale * rng.normal(size=3)
    base = build(contacts, model, options)
    moved = build(*described(contacts, model, options, rotation, origin, scale))
    if isinstance(base, InvalidInputError):  # virtual_masses=full without a positive eq. 59
        assert isinstance(moved, InvalidInputError) and str(moved) == str(base)
        return
    assert (moved.regime.name, moved.regime.reasons) == (base.regime.name, base.regime.reasons)
    assert moved.regime.message == base.regime.message
    assert moved.rank == base.rank and moved.internal_dimension == base.internal_dimension
    assert moved.basis_names == base.basis_names
    assert moved.basis_units == base.basis_units
    errors = compare_descriptions(base, moved, rotation, scale, wrench, rng)
    # describing the grasp anew rounds its inputs; a grasp reported ill-conditioned amplifies that
    # rounding by its gain (nearly collinear point contacts), a unit-dependent decision would not
    assert max(errors.values()) < SAME * max(1.0, base.gain), (errors, base.gain)


def test_micrometre_grasps_keep_their_names():
    """The issue's reproduction: rigid contacts, centre of mass outside the hull, in micrometres."""
    rng = np.random.default_rng(22)
    for _ in range(60):
        n = int(rng.integers(4, 7))
        positions = rng.normal(size=(n, 3))
        com = positions.mean(axis=0) + 3.0 * rng.normal(size=3)
        contacts = [Contact(f'c{k}', 'rigid', p, q) for k, (p, q) in enumerate(zip(positions, rng.normal(size=(n, 4))))]
        base = LoadDistributor(contacts, ObjectModel(com=com))
        micro = LoadDistributor(*described(contacts, ObjectModel(com=com), DistributionOptions(), np.eye(3),
                                           np.zeros(3), 1e6))
        assert micro.basis_names == base.basis_names
        errors = compare_descriptions(base, micro, np.eye(3), 1e6, rng.normal(size=6), rng)
        assert max(errors.values()) < SAME, errors


# -- continuity ----------------------------------------------------------------------------------

class Family:
    """A one-parameter family of problems ``x0 + t d`` over positions, CoM, mass, inertia, share."""

    def __init__(self, types, positions, com, mass=None, inertia=None, share=0.0, masses='auto'):
        self.types, self.masses, self.n = types, masses, len(types)
        self.has_mass = mass is not None
        inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, float)
        self.x0 = np.r_[np.ravel(positions), com, mass or 0.0, inertia[np.triu_indices(3)], share]
        self.length = LoadDistributor([Contact(f'c{k}', t, p) for k, (t, p) in enumerate(zip(types, positions))],
                                      ObjectModel(com=com)).reference_length

    def distributor(self, x):
        n = self.n
        positions, com, mass = x[:3 * n].reshape(n, 3), x[3 * n:3 * n + 3], x[3 * n + 3]
        inertia = np.zeros((3, 3))
        inertia[np.triu_indices(3)] = x[3 * n + 4:3 * n + 10]
        inertia = inertia + np.triu(inertia, 1).T
        model = ObjectModel(com=com, mass=mass, inertia=inertia) if self.has_mass else ObjectModel(com=com)
        share = float(np.clip(x[-1], 0.0, 1.0))
        contacts = [Contact(f'c{k}', t, p) for k, (t, p) in enumerate(zip(self.types, positions))]
        return LoadDistributor(contacts, model, DistributionOptions(torque_share=share, virtual_masses=self.masses))

    def outputs(self, x, wrench):
        """Commands (unit-consistent) and virtual masses: what a change of geometry must move continuously."""
        d = self.distributor(x)
        commands = consistent(d.wrench_commands(wrench, object_frame=True), self.length) / np.abs(wrench).max()
        return np.r_[commands.ravel(), d.virtual_masses], d


def zoom(evaluate, x0, direction, step, levels):
    """Bisect ``[x0, x0 + step d]`` towards its larger change; return (step, change) per level."""
    a, b = x0, x0 + step * direction
    fa, fb = evaluate(a), evaluate(b)
    figures = [(step, float(np.abs(fb - fa).max()))]
    for _ in range(levels):
        middle = 0.5 * (a + b)
        fm = evaluate(middle)
        if np.abs(fm - fa).max() >= np.abs(fb - fm).max():
            b, fb = middle, fm
        else:
            a, fa = middle, fm
        step *= 0.5
        figures.append((step, float(np.abs(fb - fa).max())))
    return figures


def assert_shrinks(figures, what):
    """Check that the change over the last, tiny interval is negligible and far below the first one's."""
    first, last = figures[0][1], figures[-1][1]
    assert last < 1e-8 + 1e-4 * first, f'{what}: change {last:.3g} over a step {figures[-1][0]:.3g} ({figures})'


def twelve_on_a_sphere(kind='rigid'):
    """Hold a ball by twelve contacts on its surface, thin-shell inertia: eq. 59's rows lose rank."""
    positions = fibonacci_sphere(12, 0.05)
    return Family([kind] * 12, positions, np.zeros(3), 5.0, np.eye(3) * 2.0 / 3.0 * 5.0 * 0.05 ** 2)


def continuity_family(layout, with_mass, rng):
    """One of the layouts the issue names, with or without mass and inertia."""
    n = {'sphere': 12, 'circle': 12, 'two': 2, 'collinear': 3, 'coplanar': 4, 'point_masses': 12}.get(layout, 6)
    positions, com = layout_positions(layout if layout != 'point_masses' else 'general', n, rng)
    types = ['rigid' if layout in ('sphere', 'two', 'collinear') or k % 2 == 0 else 'point' for k in range(n)]
    mass = inertia = None
    if with_mass:
        mass = 2.0
        weights = rng.uniform(0.5, 1.5, n)
        if layout in ('sphere', 'circle', 'point_masses'):  # eq. 59 exactly consistent at x0
            com = weights @ positions / weights.sum() if layout == 'point_masses' else com
            weights = weights if layout == 'point_masses' else np.ones(n)
            inertia = point_mass_inertia(weights, positions, com) * mass / weights.sum()
        else:
            root = rng.normal(size=(3, 3))
            inertia = mass * (root @ root.T + 0.1 * np.eye(3))
    return Family(types, positions, com, mass, inertia, share=float(rng.choice([0.0, 0.5])))


LAYOUTS = ['general', 'sphere', 'circle', 'coplanar', 'collinear', 'two', 'point_masses']


@SETTINGS
@given(st.sampled_from(LAYOUTS), st.booleans(), st.integers(0, 2 ** 32 - 1),
       st.sampled_from(['geometry', 'com', 'mass_inertia', 'share']), st.sampled_from([1e-1, 1e-7]))
def test_commands_and_masses_change_continuously(layout, with_mass, seed, what, first_step):
    rng = np.random.default_rng(seed)
    family = continuity_family(layout, with_mass, rng)
    direction = np.zeros_like(family.x0)
    n = family.n
    part = {'geometry': slice(0, 3 * n), 'com': slice(3 * n, 3 * n + 3),
            'mass_inertia': slice(3 * n + 3, 3 * n + 10), 'share': slice(-1, None)}[what]
    direction[part] = rng.normal(size=direction[part].size)
    direction[:3 * n + 3] *= family.length  # lengths move with the grasp's own size
    direction[3 * n + 3:3 * n + 10] *= max(family.x0[3 * n + 3], 1.0) * family.length ** 2
    wrench = np.r_[rng.normal(size=3) * 20.0, rng.normal(size=3) * 20.0 * family.length]

    def evaluate(x):
        try:
            return family.outputs(x, wrench)[0]
        except UnrealisableWrenchError:  # collinear point contacts: the same refusal on both sides
            return np.zeros(7 * n)

    assert_shrinks(zoom(evaluate, family.x0, direction / np.abs(direction).max(), first_step, 36), layout)


@pytest.mark.parametrize('kind', ['rigid', 'point', 'mixed'])
def test_twelve_contacts_on_a_sphere_with_mass_and_inertia(kind):
    """The issue's chattering grasp: moving one contact off the sphere moves the commands by O(step)."""
    family = twelve_on_a_sphere()
    if kind != 'rigid':
        family.types = [kind if kind != 'mixed' else ('rigid', 'point')[k % 2] for k in range(12)]
    wrench = np.array([0.0, 0.0, 49.0, 0.3, -0.2, 0.1])
    base, distributor = family.outputs(family.x0, wrench)
    assert distributor.regime.name == 'paper' and 'eq. 59' in distributor.regime.message
    direction = np.zeros_like(family.x0)
    direction[:3] = [0.3, -0.5, 0.8]
    figures = []
    for step in 10.0 ** -np.arange(3, 15, 1.0):
        changed = family.outputs(family.x0 + step * direction / np.linalg.norm(direction[:3]), wrench)[0]
        figures.append((step, float(np.abs(changed - base).max())))
    ratios = [change / step for step, change in figures]
    # Lipschitz: the change per metre stays bounded as the step goes to 1e-14 m
    assert max(ratios[3:]) < 2.0 * ratios[2] + 1e-3, figures
    assert_shrinks(zoom(lambda x: family.outputs(x, wrench)[0], family.x0, direction / 0.8, 1e-3, 36), 'sphere')


def test_inertia_near_that_of_point_masses_moves_the_masses_continuously():
    """Where the given inertia is exactly that of point masses at the contacts, and around it."""
    rng = np.random.default_rng(5)
    for n in (4, 6, 12):
        positions = rng.normal(size=(n, 3))
        weights = rng.uniform(0.5, 1.5, n)
        com = weights @ positions / weights.sum()
        inertia = point_mass_inertia(weights, positions, com) * 2.0 / weights.sum()
        family = Family(['rigid'] * n, positions, com, 2.0, inertia)
        exact = family.distributor(family.x0)
        # eq. 59 has an exact positive solution, so it is used: mass, centre of mass and inertia
        # of the virtual masses (mean 1) are those of the object, scaled by n / mass
        assert exact.regime.name == 'paper' and 'eq. 59' in exact.regime.message
        masses = exact.virtual_masses
        np.testing.assert_allclose(masses @ positions / n, com, atol=1e-12 * family.length)
        np.testing.assert_allclose(point_mass_inertia(masses, positions, com), inertia * n / 2.0,
                                   atol=1e-10 * np.abs(inertia * n).max())
        if n < 10:  # then the solution is unique: the point masses' own (normalised) values
            np.testing.assert_allclose(masses, weights * n / weights.sum(), rtol=1e-9)
        direction = np.zeros_like(family.x0)
        direction[3 * n + 4:3 * n + 10] = rng.normal(size=6) * np.abs(inertia).max()
        wrench = np.r_[rng.normal(size=3), rng.normal(size=3) * family.length] * 10.0
        assert_shrinks(zoom(lambda x: family.outputs(x, wrench)[0], family.x0, direction, 0.3, 36), f'n={n}')


def basis_outputs(family):
    def evaluate(x):
        d = family.distributor(x)
        return d.basis_names, consistent(d.basis_matrix.T.reshape(-1, family.n, 6), family.length).ravel()
    return evaluate


@SETTINGS
@given(st.sampled_from(LAYOUTS), st.booleans(), st.integers(0, 2 ** 32 - 1))
@example('general', False, 854)  # balanced_fy(c4) at BASIS_TOLERANCE: kept in order, then pivoted
def test_the_basis_jumps_only_where_its_names_change(layout, with_mass, seed):
    rng = np.random.default_rng(seed)
    family = continuity_family(layout, with_mass, rng)
    evaluate = basis_outputs(family)
    direction = np.zeros_like(family.x0)
    direction[:3 * family.n] = rng.normal(size=3 * family.n) * family.length
    a, b = family.x0, family.x0 + 0.05 * direction
    (names_a, fa), (names_b, fb) = evaluate(a), evaluate(b)
    for _ in range(36):
        middle = 0.5 * (a + b)
        names_m, fm = evaluate(middle)
        if names_a != names_m or (names_m == names_b and np.abs(fm - fa).max() >= np.abs(fb - fm).max()):
            b, names_b, fb = middle, names_m, fm
        else:
            a, names_a, fa = middle, names_m, fm
    # the last interval either holds a reported switch of names, or the elements barely moved
    assert names_a != names_b or np.abs(fb - fa).max() < 1e-8, (names_a, names_b, np.abs(fb - fa).max())


@pytest.mark.parametrize('layout', ['sphere', 'point_masses', 'general'])
def test_torque_share_up_to_one_with_mass_and_inertia(layout):
    """Eq. 59 carries ``(1 - s) J_o``: as ``s -> 1`` it must hand over to eq. 64 without a jump."""
    rng = np.random.default_rng(11)
    family = continuity_family(layout, True, rng)
    family.types = ['rigid'] * family.n
    x0 = family.x0.copy()
    x0[-1] = 0.9
    direction = np.zeros_like(x0)
    direction[-1] = 1.0
    wrench = np.r_[rng.normal(size=3), rng.normal(size=3) * family.length] * 10.0
    figures = zoom(lambda x: family.outputs(x, wrench)[0], x0, direction, 0.1, 36)
    assert_shrinks(figures, f'{layout}: torque share 0.9 -> 1')
    # at s = 1 no positive masses carry the zero inertia left to the forces: eq. 64's masses
    at_one = family.distributor(x0 + 0.1 * direction)
    assert 'full_inertia_unavailable' in at_one.regime.reasons
    family.has_mass = False
    np.testing.assert_allclose(at_one.virtual_masses, family.distributor(x0).virtual_masses, rtol=1e-12)
