"""Grasp identification from held rests (core/grasp_identification.py), against a forward model written here.

The cell is built here: true contacts (the configured ones turned by ``exp(phi)`` and moved by
``dp``), the grasp matrix by hand (a contact-frame wrench ``[f, t]`` at ``(p, R)`` acts on the
object origin as ``f' = R f``, ``t' = R t + p x (R f)``; point contacts pass forces only), its
null space (scipy), rests that hold the object's weight plus random internal loads from that
null space, and the sensors' readings by the statics of :mod:`calibration_fixtures`. The
estimate is judged on what the rests can tell: the contacts' poses relative to the first one
(a common rigid motion of all contacts is invisible while gravity keeps one direction), within
three of its own standard deviations: jointly, the error's Mahalanobis distance under the
estimate's own covariance within the 3-sigma quantile (99.73 %) of its chi-square law (per
component, with up to 30 components per cell, 3-sigma excursions are expected); the
directions the rests leave undetermined are named.
"""
from hypothesis import assume, given, HealthCheck, settings, strategies as st
import numpy as np
import pytest
from scipy.linalg import null_space
from scipy.spatial.transform import Rotation
from scipy.stats import chi2

import calibration_fixtures as C

from wrench_distribution.core.calibration import CalibrationRefused
from wrench_distribution.core.grasp_identification import identify_grasps
from wrench_distribution.core.sensor_model import SensorModel

SIGMAS = 3.0
#: The probability inside +-3 sigma of a normal law: the joint bound's quantile.
INSIDE_3_SIGMA = 0.9973
LAYOUTS = ('random', 'collinear', 'coplanar', 'close')


def positions_of(layout: str, n: int, rng) -> np.ndarray:
    """Contact positions (m) of a layout: spread in a box, on a line, in a plane, or a pair 1 cm apart.

    Contacts are 10 cm apart or more (the pair of ``close`` apart): how well a contact's
    position is known is judged against the contacts' spread.
    """
    while True:
        if layout == 'collinear':
            direction = rng.normal(size=3)
            points = np.outer(rng.uniform(-0.4, 0.4, n), direction / np.linalg.norm(direction)) + rng.normal(0, 0.05, 3)
        else:
            points = rng.uniform(-0.3, 0.3, (n, 3))
        if layout == 'coplanar':
            points[:, 2] = 0.0
        gaps = [np.linalg.norm(a - b) for j, a in enumerate(points) for b in points[:j]]
        if min(gaps) >= 0.1:
            break
    if layout == 'close':  # a pair a centimetre apart, among contacts up to 0.5 m apart
        step = rng.normal(size=3)
        points[1] = points[0] + 1e-2 * step / np.linalg.norm(step)
    return points


def grasp_matrix(positions: np.ndarray, rotations: list, rigid: list) -> np.ndarray:
    """``G``: contact-frame wrenches (6 per rigid contact, 3 forces per point contact) to the origin."""
    blocks = []
    for p, r, is_rigid in zip(positions, rotations, rigid):
        m = r.as_matrix()
        lever = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
        block = np.block([[m, np.zeros((3, 3))], [lever @ m, m]])
        blocks.append(block if is_rigid else block[:, :3])
    return np.hstack(blocks)


class Quiet:
    """A random generator whose normal draws are ``factor`` times smaller: quieter sensors."""

    def __init__(self, rng, factor: float) -> None:
        self.rng, self.factor = rng, factor

    def normal(self, size=None):
        return self.factor * self.rng.normal(size=size)


class Cell:
    """A held object's truth, its belief, and rests read by the sensors (metres, newtons)."""

    def __init__(self, rng, n: int, layout: str, rigid: list, degrees: float = 2.0, mm: float = 3.0) -> None:
        self.n, self.rigid = n, list(rigid)
        self.believed_p = positions_of(layout, n, rng)
        self.believed_r = [Rotation.random(random_state=rng.integers(2 ** 31)) for _ in range(n)]
        # position errors a tenth of the closest contacts' distance at most (a grasp is placed
        # better than the contacts are apart: a pair 1 cm apart is not 3 mm off)
        closest = min(np.linalg.norm(a - b) for j, a in enumerate(self.believed_p) for b in self.believed_p[:j])
        self.dp = rng.normal(size=(n, 3)) * min(mm * 1e-3, 0.1 * closest) / np.sqrt(3)
        self.phi = rng.normal(size=(n, 3)) * np.radians(degrees) / np.sqrt(3)
        self.true_p = self.believed_p + self.dp
        self.true_r = [Rotation.from_rotvec(e) * r for e, r in zip(self.phi, self.believed_r)]
        self.mass, self.com = rng.uniform(0.5, 5.0), rng.normal(0, 0.05, 3)
        self.tools = [C.Tool(int(rng.choice([-1, 1])), rng.uniform(0.1, 1.0), rng.normal(0, 0.03, 3),
                             np.concatenate([rng.normal(0, 2.0, 3), rng.normal(0, 0.1, 3)]), rng.normal(0, 0.03, 3),
                             Rotation.random(random_state=rng.integers(2 ** 31)), Rotation.identity())
                      for _ in range(n)]

    def rests(self, loads: np.ndarray, samples: int, rng, push=None) -> tuple:
        """Read ``len(loads)`` rests: the weight held, plus ``N @ load`` (N: null space of the true G).

        :param rng: the sensors' noise (:class:`Quiet`: less).
        :param push: (rest index, external wrench at the origin) acting on the object, or None.
        :return: ``(readings (k, n, 6), gravity (k, 3), labels (k,))``
        """
        g = grasp_matrix(self.true_p, self.true_r, self.rigid)
        null = null_space(g)
        readings, labels = [], []
        for j, load in enumerate(loads):
            need = -np.concatenate([self.mass * C.G, np.cross(self.mass * self.com, C.G)])
            if push is not None and push[0] == j:
                need = need - push[1]
            wrenches = np.linalg.lstsq(g, need, rcond=None)[0] + null @ load[:null.shape[1]]
            per_sensor = np.zeros((samples, self.n, 6))
            column = 0
            for i, (tool, rotation) in enumerate(zip(self.tools, self.true_r)):
                width = 6 if self.rigid[i] else 3
                applied = np.zeros(6)
                applied[:width] = wrenches[column:column + width]
                column += width
                g_contact = np.tile(rotation.inv().apply(C.G), (samples, 1))
                per_sensor[:, i] = C.read(tool, np.tile(applied, (samples, 1)), g_contact, rng)
            readings.append(per_sensor)
            labels.append(np.full(samples, j))
        k = samples * len(loads)
        return np.concatenate(readings), np.tile(C.G, (k, 1)), np.concatenate(labels)

    def holds(self) -> bool:
        """Whether the true contacts can hold the object's weight at rest (``G w = need`` solvable)."""
        g = grasp_matrix(self.true_p, self.true_r, self.rigid)
        need = -np.concatenate([self.mass * C.G, np.cross(self.mass * self.com, C.G)])
        return bool(np.linalg.norm(g @ np.linalg.lstsq(g, need, rcond=None)[0] - need) < 1e-9 * np.linalg.norm(need))

    def sensors(self, scale: float = 1.0) -> list:
        """Return the configured sensor models (tools known, biases not), lengths times ``scale``."""
        return [SensorModel(position=t.position * scale, orientation=t.configured.as_quat(), sign=t.sign,
                            tool_mass=t.mass, tool_com=t.com * scale) for t in self.tools]

    def poses(self, scale: float = 1.0) -> np.ndarray:
        """Return the configured contact poses, lengths times ``scale``."""
        return np.array([[*(p * scale), *r.as_quat()] for p, r in zip(self.believed_p, self.believed_r)])

    def estimate(self, data: tuple, scale: float = 1.0, **options):
        """Run the estimator on ``data`` converted to a unit of length ``1 / scale`` m."""
        readings, gravity, labels = data
        unit = np.array([1.0] * 3 + [scale] * 3)  # torques in N times the unit of length
        return identify_grasps(readings * unit, gravity, labels, self.poses(scale), self.sensors(scale), None,
                               self.mass, self.com * scale, rigid=self.rigid, **options)


def relative(positions: np.ndarray, rotations: list) -> tuple:
    """Each contact's pose in the first contact's frame: ``(positions (n-1, 3), rotations)``."""
    first = rotations[0].inv()
    return (np.array([first.apply(p - positions[0]) for p in positions[1:]]),
            [first * r for r in rotations[1:]])


def relative_error(estimate, cell: Cell, scale: float) -> tuple:
    """Return the estimate's relative poses minus the truth's, and their covariance (propagated here).

    :return: ``(error (6 (n-1),), covariance)``; positions in the unit, rotations in rad.
    """
    true_p, true_r = relative(cell.true_p * scale, cell.true_r)

    def of(correction: np.ndarray) -> np.ndarray:
        c = correction.reshape(-1, 6)
        rotations = [Rotation.from_rotvec(e) * r for e, r in zip(c[:, 3:], cell.believed_r)]
        p, r = relative(cell.believed_p * scale + c[:, :3], rotations)
        turns = [(t.inv() * e).as_rotvec() for t, e in zip(true_r, r)]
        return np.concatenate([np.concatenate([a - b, turn]) for a, b, turn in zip(p, true_p, turns)])

    x = estimate.correction.ravel()
    step = np.where(np.arange(len(x)) % 6 < 3, 1e-7 * estimate.length, 1e-7)
    jacobian = np.stack([(of(x + e) - of(x - e)) / (2 * s) for e, s in zip(np.diag(step), step)], axis=1)
    return of(x), jacobian @ estimate.covariance @ jacobian.T


def check_within_sigma(estimate, cell: Cell, scale: float) -> None:
    """Check the relative poses' error: within 3 sigma jointly (Mahalanobis), smaller than the belief's."""
    error, covariance = relative_error(estimate, cell, scale)
    floor = np.tile([1e-9 * scale] * 3 + [1e-9] * 3, cell.n - 1)  # rounding, noise-free data
    distance = error @ np.linalg.solve(covariance + np.diag(floor ** 2), error)
    assert distance <= chi2.ppf(INSIDE_3_SIGMA, len(error)), (distance, error, np.sqrt(np.diag(covariance)))
    # the estimate moved the belief towards the truth: the relative error shrank
    believed, _ = relative_error(type(estimate)(**{**estimate.__dict__, 'correction': 0 * estimate.correction}),
                                 cell, scale)
    assert np.linalg.norm(error) < 0.5 * np.linalg.norm(believed)


def check_turns_within_sigma(estimate, cell: Cell, scale: float) -> None:
    """Check the second contact's turn relative to the first: within 3 sigma jointly."""
    error, covariance = relative_error(estimate, cell, scale)
    distance = error[3:] @ np.linalg.solve(covariance[3:, 3:] + 1e-18 * np.eye(3), error[3:])
    assert distance <= chi2.ppf(INSIDE_3_SIGMA, 3), (distance, error[3:], np.sqrt(np.diag(covariance)[3:]))


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 6), layout=st.sampled_from(LAYOUTS), scale=st.sampled_from([1e-3, 1.0, 1e3]),
       seed=st.integers(0, 2 ** 16))
def test_rigid_grasps_are_identified_relative_to_each_other_within_their_sigma(n, layout, scale, seed):
    """Rigid contacts, rests exciting every internal load: all but a common rigid motion determined.

    Any layout (collinear, coplanar, a pair a millimetre apart) and any unit of length (km, m,
    mm): the relative poses are within three of their own standard deviations of the truth.
    """
    rng = np.random.default_rng(seed)
    cell = Cell(rng, n, layout, [True] * n)
    loads = rng.normal(0.0, 20.0, (3 * n + 3, 6 * n))
    estimate = cell.estimate(cell.rests(loads, 40, rng), scale)
    assert '6 of 6' in estimate.undetermined[0]
    if layout == 'close' and n == 2:  # the pair's positions, 1 cm apart, known to 1 % of that or not
        assert estimate.rank >= 3, estimate.undetermined
        return check_turns_within_sigma(estimate, cell, scale)
    assert estimate.rank == 6 * (n - 1) and len(estimate.undetermined) == 1, estimate.undetermined
    check_within_sigma(estimate, cell, scale)


def test_lengths_in_any_unit_give_the_same_grasps_scaled():
    """The same rests in km, m and mm: positions scale with the unit, rotations and rank do not."""
    rng = np.random.default_rng(11)
    cell = Cell(rng, 3, 'random', [True, False, True])
    data = cell.rests(rng.normal(0.0, 10.0, (10, 18)), 20, rng)
    metres = cell.estimate(data, 1.0)
    for scale in (1e-3, 1e3):
        other = cell.estimate(data, scale)
        assert other.rank == metres.rank and other.undetermined == metres.undetermined
        # to the solver's stopping tolerance (1e-7 of a grasp error)
        np.testing.assert_allclose(other.positions, metres.positions * scale, rtol=1e-6, atol=1e-9 * scale)
        np.testing.assert_allclose(other.correction[:, 3:], metres.correction[:, 3:], atol=1e-6)
        np.testing.assert_allclose(other.sigma[:, :3], metres.sigma[:, :3] * scale, rtol=1e-3, atol=1e-12 * scale)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 5), layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2 ** 16))
def test_point_contacts_determine_what_their_forces_can_tell(n, layout, seed):
    """Point and mixed contacts: the fitted geometry holds every rest's internal load in balance.

    With forces only some directions are invisible (a point's roll about its force, its place
    along it); whatever is left undetermined, the identified contacts make the true internal
    loads of every rest resultant-free (moved here by hand), where the configured ones do not.
    Sensors a thousand times quieter than the others here: what is left is the estimator's.
    """
    rng = np.random.default_rng(seed)
    rigid = [bool(x) for x in rng.integers(0, 2, n)]
    rigid[0] = False
    cell = Cell(rng, n, layout, rigid)
    assume(cell.holds())  # point contacts on a line cannot hold a weight off it
    width = sum(6 if r else 3 for r in rigid)
    loads = rng.normal(0.0, 10.0, (3 * n + 3, width))
    estimate = cell.estimate(cell.rests(loads, 20, Quiet(rng, 1e-3)))
    assert 0 < estimate.rank <= 6 * (n - 1)
    g = grasp_matrix(cell.true_p, cell.true_r, rigid)
    null = null_space(g)
    identified = [Rotation.from_quat(q) for q in estimate.quaternions]
    configured = grasp_matrix(cell.believed_p, cell.believed_r, rigid)
    found = grasp_matrix(estimate.positions, identified, rigid)
    internal = null @ loads[:, :null.shape[1]].T  # the rests' internal loads, contact frames
    left = np.abs(found @ internal).max()
    before = np.abs(configured @ internal).max()
    assert left < 1e-2 * before, (left, before)


def test_squeeze_alone_leaves_the_line_and_the_roll_undetermined():
    """Two rigid grasps squeezed harder and harder: the line and the roll about it stay undetermined.

    The distance along the line and the roll about it are not excited (and are named); the
    rest is determined within its sigma.
    """
    rng = np.random.default_rng(5)
    cell = Cell(rng, 2, 'random', [True, True])
    line = cell.true_p[1] - cell.true_p[0]
    line /= np.linalg.norm(line)
    squeeze = null_space(grasp_matrix(cell.true_p, cell.true_r, [True, True])).T @ np.concatenate(
        [cell.true_r[0].inv().apply(line), [0, 0, 0], cell.true_r[1].inv().apply(-line), [0, 0, 0]])
    loads = np.outer([5.0, 15.0, 25.0, 35.0], squeeze)
    estimate = cell.estimate(cell.rests(loads, 30, rng))
    assert estimate.rank == 4, estimate.undetermined
    words = ' '.join(estimate.undetermined)
    assert 'common rigid motion' in words and 'position along' in words and 'rotation about' in words
    error, covariance = relative_error(estimate, cell, 1.0)
    # split along the line and across it: the position in the first contact's frame, the relative
    # turn in the second's (the error is log(R_rel,true^T R_rel,estimated))
    across_p = null_space(cell.true_r[0].inv().apply(line)[None])  # (3, 2)
    across_t = null_space(cell.true_r[1].inv().apply(line)[None])
    position, turn = across_p.T @ error[:3], across_t.T @ error[3:]
    sigma_p = np.sqrt(np.diag(across_p.T @ covariance[:3, :3] @ across_p))
    sigma_t = np.sqrt(np.diag(across_t.T @ covariance[3:, 3:] @ across_t))
    assert np.all(np.abs(position) <= SIGMAS * sigma_p), (position, sigma_p)
    assert np.all(np.abs(turn) <= SIGMAS * sigma_t), (turn, sigma_t)


def test_rests_at_one_internal_load_are_refused_naming_the_steps():
    rng = np.random.default_rng(2)
    cell = Cell(rng, 2, 'random', [True, True])
    loads = np.tile(rng.normal(0.0, 10.0, 6), (4, 1))
    with pytest.raises(CalibrationRefused, match='share one internal load.*step the squeeze'):
        cell.estimate(cell.rests(loads, 30, rng))
    with pytest.raises(CalibrationRefused, match='1 rest captured'):
        cell.estimate(cell.rests(loads[:1], 30, rng))


def test_a_bumped_rest_is_dropped():
    """Someone leans on the object during one rest: that rest is an outlier, the rest still fits."""
    rng = np.random.default_rng(8)
    cell = Cell(rng, 2, 'random', [True, True])
    loads = rng.normal(0.0, 10.0, (8, 6))
    data = cell.rests(loads, 30, rng, push=(3, np.array([4.0, -3.0, 5.0, 0.3, 0.2, -0.4])))
    estimate = cell.estimate(data)
    assert estimate.outliers == 1 and estimate.rests == 7
    check_within_sigma(estimate, cell, 1.0)
