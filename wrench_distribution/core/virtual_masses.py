"""Virtual masses of the lumped elements (paper section VI-D, eqs. 59 and 64).

Masses are returned normalised to mean 1 (``sum m_i = n``); the paper's scale
invariance (section V-B) makes the choice of ``m_o*`` immaterial, and with ``n = 4`` this
is the paper's ``m_o* = 4`` of example IX-C.
"""
from dataclasses import dataclass
import math
from typing import NamedTuple, Optional, Tuple

import numpy as np

from .compiled import kernel, weighted_centres
from .options import FULL_INERTIA_RESIDUAL, HULL_REGULARISATION, HULL_TOLERANCE, MASS_FLOOR, RANK_TOLERANCE


@dataclass(frozen=True)
class VirtualMasses:
    """Virtual masses and how they were obtained.

    :param masses: the masses used, mean 1, all positive.
    :param method: ``'eq64'``, ``'eq59'`` or ``'explicit'``.
    :param reasons: regime reasons (empty when the paper's conditions hold).
    """

    masses: np.ndarray
    method: str
    reasons: Tuple[str, ...]


def reduced_masses(positions: np.ndarray, com: np.ndarray) -> Tuple[np.ndarray, bool, bool]:
    """Virtual masses from eq. 64 (``sum m_i = n``, ``sum m_i r_i = n c``), kept admissible.

    About the contacts' centroid ``r_bar``, with ``P = [r_i - r_bar]`` (3 x n), its SVD
    ``P = U diag(sigma) V^T`` and the offset ``o = U^T (c - r_bar)``::

        m = 1 + n V q,   q_k = o_k sigma_k / max(sigma_k^2, o_k^2, mu_0)

    ``P 1 = 0`` keeps ``sum m_i = n``. Where the centre of mass is inside the contacts'
    convex hull, ``|o_k| <= sigma_k`` in every direction (``sigma_k^2 = sum_i p_ik^2`` bounds
    every convex combination), ``q = diag(sigma)^-1 o`` and ``m`` is the minimum-norm
    solution of eq. 64, as in the paper. Otherwise:

    - a direction the contacts do not span (two or three contacts, feet on a plane) gets
      ``q_k = 0``: the masses are those of the centre of mass projected on the contacts'
      affine hull;
    - a direction where the offset exceeds the extent gets ``q_k = sigma_k / o_k``, which
      is continuous at ``|o_k| = sigma_k`` and vanishes as the extent goes to zero (a
      quadruped on slightly uneven ground keeps the weighting of flat ground);
    - if a mass is still below ``MASS_FLOOR``, all masses are shrunk towards 1 just enough.

    Every step is continuous in the positions. ``mu_0 = (HULL_REGULARISATION sigma_max)^2``
    treats a direction thinner than that fraction of the largest extent as absent, smoothly:
    without it the barycentric coordinates of a centre of mass near the plane of nearly
    coplanar contacts would swing by O(1) for sub-micrometre changes.

    :param positions: contact positions (n, 3).
    :param com: centre of mass (3,).
    :return: masses (n,), whether the centre of mass is off the affine hull, and whether it
        is outside the convex hull (masses were damped or shrunk).
    """
    geometry = SubsetGeometry.of(positions - com, np.ones((1, positions.shape[0]), bool))
    masses = subset_reduced_masses(geometry)
    off_affine, outside = reduced_mass_flags(geometry, masses)
    return masses[0], bool(off_affine[0]), bool(outside[0])


class MaskTerms(NamedTuple):
    """What V subsets (V, n) give every computation on them: their sizes and the masks as floats."""

    counts: np.ndarray
    members: np.ndarray


_MASK_TERMS: dict = {}


def mask_terms(masks: np.ndarray) -> MaskTerms:
    """Return the :class:`MaskTerms` of subsets, kept for read-only masks (the shared ones of a weight pattern).

    :param masks: (V, n) booleans.
    :return: the sizes (V,) and the masks as floats (V, n).
    """
    entry = _MASK_TERMS.get(id(masks))
    if entry is not None and entry[0] is masks:
        return entry[1]
    counts = masks.sum(axis=1, dtype=float)
    members = masks.astype(float)
    terms = MaskTerms(counts, members)
    for array in terms:
        array.setflags(write=False)
    if not masks.flags.writeable:
        if len(_MASK_TERMS) >= 512:
            _MASK_TERMS.clear()
        _MASK_TERMS[id(masks)] = (masks, terms)
    return terms


class SubsetGeometry:
    """Centroids, spreads and principal extents of V subsets of one contact set.

    What eq. 64's masses, the rank of ``G`` and the reference length of each subset are decided
    on (one eigendecomposition per subset serves all three). Build with :meth:`of`.

    :param masks: (V, n) the subsets.
    :param counts: (V,) their sizes.
    :param centroid: (V, 3) their centroids, relative to the centre of mass.
    :param spread: (V, n, 3) positions relative to the centroid (zero outside the subset).
    :param extents: (V, 3) squared extents ``sigma_k^2`` (eigenvalues of ``P P^T``), ascending.
    :param axes: (V, 3, 3) the principal directions ``u_k`` (columns).
    :param terms: the :func:`mask_terms` of ``masks``.
    :param lengths: (V,) their reference lengths (:attr:`lengths`).
    :param ranks: (V,) the ranks of their ``G`` (:attr:`ranks`).
    """

    def __init__(self, masks: np.ndarray, counts: np.ndarray, centroid: np.ndarray, spread: np.ndarray,
                 extents: np.ndarray, axes: np.ndarray, terms: MaskTerms, lengths: np.ndarray,
                 ranks: np.ndarray) -> None:
        self.masks, self.counts, self.centroid, self.spread, self.extents, self.axes = \
            masks, counts, centroid, spread, extents, axes
        self.terms, self._lengths, self._ranks = terms, lengths, ranks

    @staticmethod
    def of(r: np.ndarray, masks: np.ndarray, rigid: Optional[np.ndarray] = None) -> 'SubsetGeometry':
        """Measure the subsets.

        :param r: (n, 3) contact positions relative to the centre of mass.
        :param masks: (V, n) the subsets.
        :param rigid: (n,) rigid-contact mask, or None when no contact is rigid.
        :return: their geometry.
        """
        terms = mask_terms(masks)
        centroid, spread, extents, axes, lengths, ranks = _principal_extents(
            np.asarray(r, dtype=float), terms.members, terms.counts, _NO_RIGID if rigid is None else rigid)
        return SubsetGeometry(masks, terms.counts, centroid, spread, extents, axes, terms, lengths, ranks)

    @property
    def scale2(self) -> np.ndarray:
        """Return the (V,) mean squared distances of the contacts from their centroid."""
        return self.extents.sum(axis=1) / self.counts

    @property
    def lengths(self) -> np.ndarray:
        """Return the (V,) reference lengths of the subsets, which do not depend on virtual masses.

        ``hypot(s, 1e-3 d)`` with ``s`` the RMS distance of the contacts from their centroid and
        ``d`` the centroid's distance from the centre of mass: the contacts' own spread, kept
        continuous and non-zero as the contacts come together; 1 (in the user's unit) when there
        is no length at all.
        """
        return self._lengths

    @property
    def ranks(self) -> np.ndarray:
        """Return the (V,) ranks of ``G``, decided on the contacts' own geometry (docs/theory.md, 6.1).

        6 with a rigid contact (two rigid grasps a micrometre apart produce any wrench; the rigid
        contacts are those given to :meth:`of`); with point contacts only, the unit-consistent rank
        about the centroid, from the extents. About the centroid, ``G G^T = diag(n I, tr(C) I - C)``
        with ``C = sum p_i p_i^T`` (the cross terms are ``S(sum p_i) = 0``): the singular values of
        ``G`` (positions over the reference length) are ``sqrt(n)`` three times and
        ``sqrt(sum sigma^2 - sigma_k^2)``.
        """
        return self._ranks


_NO_RIGID = np.zeros(0, bool)
_NO_RIGID.setflags(write=False)


def subset_reduced_masses(geometry: SubsetGeometry) -> np.ndarray:
    """:func:`reduced_masses` of V contact subsets at once.

    With the principal directions ``u_k`` and squared extents ``sigma_k^2`` of the spread,
    ``(V q)_i = sum_k (p_i . u_k) o_k / max(sigma_k^2, o_k^2, mu_0)``: the form of
    :func:`reduced_masses` without a division by ``sigma_k``.

    :param geometry: the subsets (positions relative to the centre of mass).
    :return: masses (V, n), zero outside each subset, summing to its size.
    """
    return _reduced_masses(geometry.extents, geometry.axes, geometry.centroid, geometry.spread, geometry.terms.members,
                           geometry.counts)


@kernel
def _principal_extents(r: np.ndarray, members: np.ndarray, counts: np.ndarray,
                       rigid: np.ndarray) -> Tuple[np.ndarray, ...]:
    """Return the centroids (V, 3), spreads (V, n, 3), squared extents (V, 3), axes (V, 3, 3), lengths and ranks.

    Compiled. The extents are the eigenvalues of ``P P^T`` (clipped at 0, ascending), the axes its
    eigenvectors; the lengths and the ranks (V,) are those of :attr:`SubsetGeometry.lengths` and
    :attr:`SubsetGeometry.ranks` (``rigid``: (n,) rigid-contact mask, empty for none).
    """
    count, n = members.shape
    centroid, spread = weighted_centres(members, r, counts), np.empty((count, n, 3))
    extents, axes = np.empty((count, 3)), np.empty((count, 3, 3))
    lengths, ranks = np.empty(count), np.empty(count, dtype=np.int64)
    scatter = np.empty((3, 3))
    for v in range(count):
        for a in range(3):
            for i in range(n):
                spread[v, i, a] = (r[i, a] - centroid[v, a]) * members[v, i]
        for a in range(3):
            for b in range(3):
                total = 0.0
                for i in range(n):
                    total += spread[v, i, a] * spread[v, i, b]
                scatter[a, b] = total
        values, vectors = np.linalg.eigh(scatter)
        for a in range(3):
            extents[v, a] = max(values[a], 0.0)
            for b in range(3):
                axes[v, a, b] = vectors[a, b]
        e0, e1, e2 = extents[v, 0], extents[v, 1], extents[v, 2]
        c0, c1, c2 = centroid[v, 0], centroid[v, 1], centroid[v, 2]
        length = math.sqrt((e0 + e1 + e2) / counts[v] + 1e-6 * (c0 * c0 + c1 * c1 + c2 * c2))
        lengths[v] = length = length if length > 0.0 else 1.0
        square = length * length
        # singular values of G over the length, beyond the three sqrt(count), descending
        first = math.sqrt(max(e1 + e2, 0.0) / square)
        bound = RANK_TOLERANCE * max(math.sqrt(counts[v]), first)
        ranks[v] = 3 + int(first > bound) + int(math.sqrt(max(e0 + e2, 0.0) / square) > bound) \
            + int(math.sqrt(max(e0 + e1, 0.0) / square) > bound)
        for i in range(rigid.size):
            if rigid[i] and members[v, i] > 0.0:
                ranks[v] = 6
    return centroid, spread, extents, axes, lengths, ranks


@kernel
def _reduced_masses(extents: np.ndarray, axes: np.ndarray, centroid: np.ndarray, spread: np.ndarray,
                    members: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Compute :func:`subset_reduced_masses` (compiled)."""
    count, n = members.shape
    along, denominator = np.empty((count, 3)), np.empty((count, 3))
    # extents ascend: mu_0 from the largest; a floor against 0 / 0 where there is no extent at all
    # (a floor at most the smallest extent of each subset changes nothing)
    floored = False
    for v in range(count):
        if not (extents[v, 0] >= HULL_REGULARISATION ** 2 * extents[v, 2] and extents[v, 0] > 1e-300):
            floored = True
    for v in range(count):
        for k in range(3):
            projection = 0.0                                              # -o_k
            for a in range(3):
                projection += centroid[v, a] * axes[v, a, k]
            along[v, k] = projection
            denominator[v, k] = max(extents[v, k], projection * projection)
            if floored:
                denominator[v, k] = max(denominator[v, k], max(HULL_REGULARISATION ** 2 * extents[v, 2], 1e-300))
    masses = np.empty((count, n))
    lowest_all = np.inf
    for v in range(count):
        direction = np.zeros(3)
        for a in range(3):
            for k in range(3):
                direction[a] += axes[v, a, k] * (along[v, k] / denominator[v, k])
        for i in range(n):
            offset = 0.0
            for a in range(3):
                offset += spread[v, i, a] * direction[a]
            masses[v, i] = 1.0 - offset * counts[v]
            lowest_all = min(lowest_all, masses[v, i])
    if lowest_all < MASS_FLOOR:                   # the entries outside a subset are exactly 1
        for v in range(count):
            lowest = np.inf
            for i in range(n):
                lowest = min(lowest, masses[v, i])
            shrink = (1.0 - MASS_FLOOR) / (1.0 - lowest) if lowest < MASS_FLOOR else 1.0
            for i in range(n):
                masses[v, i] = 1.0 + shrink * (masses[v, i] - 1.0)
    for v in range(count):
        for i in range(n):
            masses[v, i] *= members[v, i]
    return masses


def reduced_mass_flags(geometry: SubsetGeometry, masses: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Whether each subset's centre of mass is off its affine hull, and outside its convex hull.

    :param geometry: the subsets.
    :param masses: their masses (:func:`subset_reduced_masses`).
    :return: two (V,) boolean arrays (the second: an offset damped or masses shrunk to the floor).
    """
    extents = geometry.extents
    projected = -np.einsum('vik,vi->vk', geometry.axes, geometry.centroid)
    squared = projected * projected
    present = (extents >= HULL_REGULARISATION ** 2 * extents[:, 2:]) & (extents > 0.0)
    distance2 = np.einsum('vi,vi->v', geometry.centroid, geometry.centroid)
    # the offset's part off the directions the contacts span, against a length of the set
    off_affine = np.sum(squared * ~present, axis=1) > HULL_TOLERANCE ** 2 * np.maximum(geometry.scale2, distance2)
    damped = np.any(present & (squared > extents * (1.0 + 2e-12)), axis=1)
    low = np.where(geometry.masks, masses, np.inf).min(axis=1) < MASS_FLOOR * (1.0 + 1e-12)
    return off_affine, damped | low


def _inertia_rows(unit_positions: np.ndarray) -> np.ndarray:
    """Rows of eq. 59 (10, n) for dimensionless positions: mass, inertia (eq. 63), first moment.

    The off-diagonal inertia rows carry ``sqrt(2)`` so that a rotation of the object frame acts
    on the six inertia rows as an orthogonal map (Frobenius norm of the tensor): singular
    values and residual norms of the system do not depend on the frame.
    """
    x, y, z = unit_positions.T
    root2 = np.sqrt(2.0)
    return np.vstack([
        np.ones(x.size),
        y * y + z * z, x * x + z * z, x * x + y * y, -root2 * x * y, -root2 * x * z, -root2 * y * z,
        x, y, z,
    ])


def filtered_solution(rows: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Minimum-norm solution of ``rows m = target`` with the thin directions filtered continuously.

    ``m = rows^T g(rows rows^T) target`` with ``g(x) = 1 / max(x, tau^2)`` and
    ``tau = HULL_REGULARISATION sigma_max``: the minimum-norm (least-squares) solution where
    every singular value is at least ``tau`` (eq. 59 as the paper solves it), and, as a
    continuous matrix function of the rows, no jump where a singular value goes to zero
    (contacts on a sphere, a circle, a plane, a line).

    :param rows: (k, n) dimensionless system.
    :param target: (k,) right-hand side.
    :return: (n,) solution.
    """
    u, sigma, vt = np.linalg.svd(rows, full_matrices=False)
    if sigma.size == 0 or sigma.max() == 0.0:
        return np.zeros(rows.shape[1])
    tau2 = (HULL_REGULARISATION * sigma.max()) ** 2
    return vt.T @ ((u.T @ target) * sigma / np.maximum(sigma ** 2, tau2))


def blended_masses(
    positions: np.ndarray, mass: float, inertia: np.ndarray, torque_share: float, reduced: np.ndarray
) -> Tuple[np.ndarray, float, float]:
    """Eq. 59 masses where they are admissible, blended continuously into eq. 64's.

    Eq. 59 matches mass, centre of mass and the share ``1 - torque_share`` of the inertia the
    forces must carry (``J_f = (1 - s) J_o``), so that ``M_o*`` is proportional to ``M_o``. It is
    written without units (positions over their RMS distance ``l`` from the centre of mass,
    inertia over ``mass l^2``) and solved by :func:`filtered_solution`. With ``rho`` its relative
    residual and ``m_min`` its smallest mass (mean 1), the weight of eq. 59 is

        w = clip((m_min - MASS_FLOOR) / MASS_FLOOR, 0, 1) * clip(2 - rho / FULL_INERTIA_RESIDUAL, 0, 1)

    and eq. 64's masses get ``1 - w`` (docs/theory.md, section 11.2): every factor is a
    continuous function of the positions, the centre of mass, the mass and the inertia.

    :param positions: contact positions relative to the centre of mass (n, 3).
    :param mass: object mass.
    :param inertia: inertia about the centre of mass (3, 3).
    :param torque_share: the torque share ``s`` in [0, 1].
    :param reduced: eq. 64 masses (mean 1).
    :return: masses (mean 1, all at least MASS_FLOOR), the weight ``w`` of eq. 59 and ``rho``.
    """
    n = positions.shape[0]
    length2 = float(np.mean(np.einsum('ij,ij->i', positions, positions)))
    if torque_share >= 1.0 or not length2 > 0.0:
        return reduced, 0.0, np.inf
    rows = _inertia_rows(positions / np.sqrt(length2))
    j = inertia * (1.0 - torque_share) / (mass * length2)
    root2 = np.sqrt(2.0)
    target = np.array([1.0, j[0, 0], j[1, 1], j[2, 2], root2 * j[0, 1], root2 * j[0, 2], root2 * j[1, 2], 0, 0, 0])
    solution = filtered_solution(rows, target)
    residual = float(np.linalg.norm(rows @ solution - target) / np.linalg.norm(target))
    total = solution.sum()
    if not total > 0.0:
        return reduced, 0.0, residual
    full = solution * n / total
    weight = float(np.clip((full.min() - MASS_FLOOR) / MASS_FLOOR, 0.0, 1.0)
                   * np.clip(2.0 - residual / FULL_INERTIA_RESIDUAL, 0.0, 1.0))
    return weight * full + (1.0 - weight) * reduced, weight, residual
