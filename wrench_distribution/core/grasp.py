"""Geometry of one contact configuration: grasp matrix, virtual inertia, ``G_M+`` and ``N_m``.

Pure functions of the contact set and the options, used once per configuration by
:class:`~wrench_distribution.core.load_distributor.LoadDistributor`. Equation numbers refer
to the paper; section numbers to docs/theory.md.
"""
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Optional, Tuple

import numpy as np

from .compiled import kernel, weighted_centres
from .options import COLLINEAR_RATIO, RANK_TOLERANCE, TORQUE_REGULARISATION
from .spatial import skew

#: Relative eigenvalue below which a direction of an inertia counts as absent (the square of
#: the unit-consistent rank tolerance of the grasp matrix, so both agree).
EIGEN_CUTOFF = RANK_TOLERANCE ** 2
_EYE3 = np.eye(3)
#: Largest ``|c~|^2 / (k / M)`` (the virtual centre's distance over the RMS lever, squared) where
#: ``J_f^-1`` may come from cofactors instead of the eigendecomposition.
_NEAR = 100.0


def grasp_matrix(r: np.ndarray, rigid: np.ndarray) -> np.ndarray:
    """``G`` (eqs. 13, 14): stacked contact wrenches -> resultant about the reference point.

    :param r: (..., n, 3) contact positions relative to the reference point (the CoM).
    :param rigid: (..., n) rigid-contact mask (point contacts transmit no torque).
    :return: (..., 6, 6n) matrix, object axes.
    """
    blocks = np.zeros(r.shape[:-1] + (6, 6))                         # (..., n, 6 rows, 6 columns)
    blocks[..., :3, :3] = np.eye(3)
    blocks[..., 3:, :3] = skew(r)
    blocks[..., 3:, 3:] = np.asarray(rigid, float)[..., None, None] * np.eye(3)
    return np.swapaxes(blocks, -3, -2).reshape(r.shape[:-2] + (6, 6 * r.shape[-2]))


@dataclass(frozen=True)
class GraspLayout:
    """What the contact types fix: the rigid mask, the active components and ``G`` without its levers.

    Build with :func:`grasp_layout` (one per tuple of types, kept: the per-tick path reads it).

    :param rigid: (n,) rigid-contact mask.
    :param active: (6n,) mask of the wrench components the contacts can apply.
    :param template: ``G`` (6, 6n) with zero lever arms.
    :param any_rigid: whether some contact is rigid.
    :param active_count: the number of active components.
    """

    rigid: np.ndarray
    active: np.ndarray
    template: np.ndarray
    any_rigid: bool
    active_count: int

    def matrix(self, r: np.ndarray) -> np.ndarray:
        """``G`` (6, 6n) of contacts at ``r`` (n, 3), relative to the centre of mass: the template and ``S(r_i)``."""
        return _with_levers(self.template, r)


@kernel
def _with_levers(template: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Return a copy of ``G``'s template (6, 6n) with ``S(r_i)`` in the torque rows of each contact's force columns."""
    grasp = template.copy()
    for i in range(r.shape[0]):
        x, y, z = r[i, 0], r[i, 1], r[i, 2]
        column = 6 * i
        grasp[3, column + 1], grasp[3, column + 2] = -z, y
        grasp[4, column], grasp[4, column + 2] = z, -x
        grasp[5, column], grasp[5, column + 1] = -y, x
    return grasp


@lru_cache(maxsize=64)
def grasp_layout(types: Tuple[str, ...]) -> GraspLayout:
    """Return the :class:`GraspLayout` of contacts of these types (``'rigid'`` or ``'point'``).

    :param types: the type of each contact.
    :return: the layout (its arrays read-only).
    """
    rigid = np.array([kind == 'rigid' for kind in types], dtype=bool)
    active = np.repeat(np.stack([np.ones(len(types), bool), rigid], axis=1), 3, axis=1).reshape(-1)
    template = grasp_matrix(np.zeros((len(types), 3)), rigid)
    for array in (rigid, active, template):
        array.setflags(write=False)
    return GraspLayout(rigid, active, template, bool(rigid.any()), int(active.sum()))


def rotation_blocks(rotations: np.ndarray) -> np.ndarray:
    """Block-diagonal (6n, 6n) matrix turning stacked contact-frame wrenches into object axes.

    :param rotations: (n, 3, 3) contact frame orientations in the object frame.
    :return: the matrix.
    """
    n = rotations.shape[0]
    blocks = np.zeros((6 * n, 6 * n))
    for i, rotation in enumerate(rotations):
        blocks[6 * i:6 * i + 3, 6 * i:6 * i + 3] = rotation
        blocks[6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] = rotation
    return blocks


def wrench_scale(n: int, length: float) -> np.ndarray:
    """Unit-consistent scale ``[1, 1, 1, 1/l, 1/l, 1/l]`` repeated for ``n`` wrenches.

    :param n: number of stacked wrenches.
    :param length: characteristic length ``l``.
    :return: (6n,) array.
    """
    inverse = 1.0 / length
    return np.array([1.0, 1.0, 1.0, inverse, inverse, inverse] * n)


def point_inertia(masses: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``sum m_i S(d_i) S(d_i)^T`` (eq. 62 summed).

    :param masses: (n,) masses (or mass increments).
    :param offsets: (n, 3) positions relative to the reference point.
    :return: (3, 3) inertia.
    """
    squared = np.einsum('i,ij,ij->', masses, offsets, offsets)
    return squared * np.eye(3) - np.einsum('i,ij,ik->jk', masses, offsets, offsets)


@dataclass(frozen=True)
class VirtualInertia:
    """Virtual centre of mass, force inertia ``J_f`` (eq. 54) and its regularised inverses.

    Build with :func:`virtual_inertia`, or with :func:`virtual_inertias` for several mass vectors
    at once (then every field has a leading axis, one entry per vector). ``total`` is the sum of
    the masses: ``n``, or the sum of the contact weights (docs/theory.md, 16.2); ``moments`` are
    the ``m_i d_i``.
    """

    masses: np.ndarray
    com: np.ndarray
    offsets: np.ndarray
    j_force: np.ndarray
    length: float
    regulariser: np.ndarray
    collinear: bool
    a_pinv: np.ndarray
    force_pinv: np.ndarray
    total: float
    moments: Optional[np.ndarray] = None

    def entry(self, index: int) -> 'VirtualInertia':
        """Return entry ``index`` of a batch built by :func:`virtual_inertias`."""
        values = [getattr(self, f.name)[index] for f in fields(self)]
        return VirtualInertia(*values[:4], float(values[4]), values[5], bool(values[6]), *values[7:9],
                              float(values[9]), values[10])


def weighted_spread(r: np.ndarray, weights: Optional[np.ndarray]) -> float:
    """``sum omega_i |r_i - r_w|^2`` about the weighted centroid ``r_w`` (unweighted: all 1).

    :param r: (n, 3) positions.
    :param weights: (n,) contact weights, or None.
    :return: the spread (length squared).
    """
    if weights is None:
        return float(np.sum((r - r.mean(axis=0)) ** 2))
    centred = r - weights @ r / weights.sum()
    return float(weights @ np.einsum('ij,ij->i', centred, centred))


def virtual_inertia(masses: np.ndarray, r: np.ndarray, rigid: np.ndarray,
                    weights: Optional[np.ndarray] = None, presence: float = 1.0) -> VirtualInertia:
    """Build the virtual inertia of a contact set (docs/theory.md, sections 2, 4.2 and 16.2).

    :param masses: (n,) virtual masses, summing to ``n`` (or to the sum of ``weights``).
    :param r: (n, 3) contact positions relative to the CoM.
    :param rigid: (n,) rigid-contact mask.
    :param weights: (n,) contact weights, or None (all 1).
    :param presence: the factor of the collinear regulariser (``P`` of section 16.2).
    :return: the inertia record.
    """
    total = float(masses.size) if weights is None else float(weights.sum())
    return virtual_inertias(masses[None], r, rigid[None], np.array([total]),
                            np.array([weighted_spread(r, weights)]), np.array([presence])).entry(0)


def virtual_inertias(masses: np.ndarray, r: np.ndarray, rigid: Optional[np.ndarray], totals: np.ndarray,
                     spreads2: np.ndarray, presence) -> VirtualInertia:
    """Virtual inertias of V mass vectors over one contact set (each a contact subset's), at once.

    :param masses: (V, n) masses (zero outside a subset, positive in it).
    :param r: (n, 3) contact positions relative to the CoM.
    :param rigid: (V, n) rigid contacts of each subset, or None when no contact is rigid.
    :param totals: (V,) sums of the masses.
    :param spreads2: (V,) ``sum |r_i - r_bar|^2`` of each subset: the reference of (4.2).
    :param presence: (V,) factors of the collinear regulariser, or one for all.
    :return: the inertias, every field with a leading axis of V.
    """
    count = len(totals)
    com, offsets, moments, j_force, k = _force_inertias(masses, r, totals)
    if min(k.tolist()) > 0:
        length = np.sqrt(k / totals)
        references = np.maximum(k, spreads2)
    else:
        # every mass at one point: the fallback length is the RMS distance from the centre of mass
        members = masses > 0
        spreads = np.sqrt(members @ np.einsum('ij,ij->i', r, r) / members.sum(axis=1))
        length = np.where(k > 0, np.sqrt(k / totals), np.where(spreads > 0, spreads, 1.0))
        k_ref = np.maximum(k, spreads2)
        references = np.where(k_ref > 0, k_ref, totals * length ** 2)
    regulariser, collinear = np.zeros((count, 3, 3)), np.zeros(count, bool)
    inverse, clear = _clear_inverses(com, j_force, k, totals, references)
    if clear:                                         # no regulariser, nothing to fade
        return VirtualInertia(masses, com, offsets, j_force, length, regulariser, collinear, inverse, inverse,
                              totals, moments)
    carriers = np.zeros(count, bool) if rigid is None else rigid.any(axis=1)
    regulariser, collinear, a_pinv, force_pinv = _eigen_inverses(
        j_force, references, carriers, presence * np.ones(count))
    return VirtualInertia(masses, com, offsets, j_force, length, regulariser, collinear, a_pinv, force_pinv, totals,
                          moments)


@kernel
def _eigen_inverses(j_force: np.ndarray, references: np.ndarray, carriers: np.ndarray,
                    presence: np.ndarray) -> Tuple[np.ndarray, ...]:
    """Return ``K``, the collinear flags, ``A^+`` and the faded ``A^+`` of V force inertias (compiled).

    One eigendecomposition of ``J_f`` serves ``K``, ``A = J_f + K`` and the fade: they share its
    eigenvectors. ``K = k g(J_f / k)``, a contact-torque inertia only where ``J_f`` is (nearly)
    singular, continuous as a matrix function of ``J_f`` (docs/theory.md, section 4.2); it is added
    only where some subset with a rigid contact (``carriers``) has its smallest eigenvalue under
    ``COLLINEAR_RATIO k_ref``, scaled by ``presence`` (``P`` of section 16.2). ``A^+`` is zero where
    ``A`` vanishes. Forces act on rotations through ``J_f`` only: the faded inverse fades out the
    directions where ``J_f`` vanishes (exactly collinear contacts) so that ``A^-1`` cannot amplify
    round-off there; a ramp from 0 to 1 over the eigenvalues ``[0, EIGEN_CUTOFF k_ref]``, not a
    cut, so the commands stay continuous where contacts leave their line (the resultant's change,
    below ``EIGEN_CUTOFF / TORQUE_REGULARISATION``, is taken back by the refinement of ``G_M+``).

    :param j_force: (V, 3, 3) the force inertias.
    :param references: (V,) ``k_ref``: the larger of ``k`` and the unweighted spread (so that a
        floored mass cannot make the ramp steep).
    :param carriers: (V,) whether each subset has a rigid contact.
    :param presence: (V,) the factors of the regulariser.
    :return: ``(regulariser, collinear, a_pinv, force_pinv)``, (V, 3, 3), (V,), (V, 3, 3), (V, 3, 3).
    """
    count = j_force.shape[0]
    values, vectors = np.empty((count, 3)), np.empty((count, 3, 3))
    steep, carried = False, False
    for v in range(count):
        eigenvalues, eigenvectors = np.linalg.eigh(j_force[v])          # ascending
        values[v], vectors[v] = eigenvalues, eigenvectors
        steep = steep or 1.0 - values[v, 0] / (references[v] * COLLINEAR_RATIO) > 0.0
        carried = carried or carriers[v]
    a_values, regulariser, collinear = values.copy(), np.zeros((count, 3, 3)), np.zeros(count, np.bool_)
    ramp = np.zeros((count, 3))
    if steep and carried:
        for v in range(count):
            for e in range(3):
                gap = max(1.0 - values[v, e] / (references[v] * COLLINEAR_RATIO), 0.0)
                ramp[v, e] = presence[v] * carriers[v] * TORQUE_REGULARISATION * gap ** 2
                collinear[v] = collinear[v] or ramp[v, e] > 0.0
    regularised = collinear.any()
    if regularised:
        for v in range(count):
            for e in range(3):
                a_values[v, e] = values[v, e] + references[v] * ramp[v, e]
        regulariser = _spectral(vectors, references[:, None] * ramp)
    regular, faded = True, False
    for v in range(count):
        regular = regular and a_values[v, 0] > EIGEN_CUTOFF * references[v]
        faded = faded or not values[v, 0] >= EIGEN_CUTOFF * references[v]
    if regular and not regularised:
        a_pinv = _spectral(vectors, 1.0 / values)
        return regulariser, collinear, a_pinv, a_pinv
    a_inverse, faded_inverse = np.zeros((count, 3)), np.zeros((count, 3))
    for v in range(count):
        cutoff = EIGEN_CUTOFF * references[v]
        for e in range(3):
            if regular or a_values[v, e] > cutoff:
                a_inverse[v, e] = 1.0 / a_values[v, e]
            faded_inverse[v, e] = min(max(values[v, e] / cutoff, 0.0), 1.0) ** 2 * a_inverse[v, e]
    a_pinv = _spectral(vectors, a_inverse)
    return regulariser, collinear, a_pinv, _spectral(vectors, faded_inverse) if faded else a_pinv


@kernel
def _spectral(vectors: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Return ``U diag(values) U^T`` (V, 3, 3) of eigenvectors ``U`` (V, 3, 3) and values (V, 3) (compiled)."""
    result = np.empty(vectors.shape)
    for v in range(vectors.shape[0]):
        for a in range(3):
            for b in range(3):
                total = 0.0
                for e in range(3):
                    total += vectors[v, a, e] * values[v, e] * vectors[v, b, e]
                result[v, a, b] = total
    return result


@kernel
def _clear_inverses(com: np.ndarray, j_force: np.ndarray, k: np.ndarray, totals: np.ndarray,
                    references: np.ndarray) -> Tuple[np.ndarray, bool]:
    """Return ``J_f^-1`` (V, 3, 3) by cofactors, and whether every ``J_f`` is clear of singular (compiled).

    With ``tr J_f = 2k``, the two larger eigenvalues multiply to at most ``k^2``, so ``det / k^2``
    bounds the smallest from below: at ``2 COLLINEAR_RATIO k_ref`` and above, section 4.2 adds no
    regulariser, ``J_f`` is regular and conditioned to about 100, and its inverse is the one of its
    eigendecomposition to rounding. The shift to the virtual centre multiplies the rounding of
    ``A^-1`` by ``|c~| / l``, so cofactors serve only where every ``c~`` is near the centre of mass
    (:data:`_NEAR`). ``J_f`` is read from its lower triangle, as ``eigh`` reads it.

    :param com: (V, 3) the virtual centres.
    :param j_force: (V, 3, 3) the force inertias.
    :param k: (V,) ``tr J_f / 2``.
    :param totals: (V,) the sums of the masses.
    :param references: (V,) ``k_ref``.
    :return: the inverses (unfinished where the second value is False) and whether all are clear.
    """
    inverses = np.empty((j_force.shape[0], 3, 3))
    for v in range(j_force.shape[0]):
        x, y, z = com[v, 0], com[v, 1], com[v, 2]
        if not x * x + y * y + z * z <= _NEAR * k[v] / totals[v]:
            return inverses, False
    for v in range(j_force.shape[0]):
        x0, x3, x4 = j_force[v, 0, 0], j_force[v, 1, 0], j_force[v, 1, 1]
        x6, x7, x8 = j_force[v, 2, 0], j_force[v, 2, 1], j_force[v, 2, 2]
        c00, c01, c02 = x4 * x8 - x7 * x7, x6 * x7 - x3 * x8, x3 * x7 - x4 * x6
        determinant = x0 * c00 + x3 * c01 + x6 * c02
        half_trace = k[v]
        # (NaN, an overflow or an underflow fail too)
        if not (determinant > 0.0 and half_trace > 0.0
                and determinant / half_trace / half_trace >= 2.0 * COLLINEAR_RATIO * references[v]):
            return inverses, False
        c11, c12, c22 = x0 * x8 - x6 * x6, x3 * x6 - x0 * x7, x0 * x4 - x3 * x3
        inverses[v, 0, 0], inverses[v, 0, 1], inverses[v, 0, 2] = c00 / determinant, c01 / determinant, \
            c02 / determinant
        inverses[v, 1, 0], inverses[v, 1, 1], inverses[v, 1, 2] = c01 / determinant, c11 / determinant, \
            c12 / determinant
        inverses[v, 2, 0], inverses[v, 2, 1], inverses[v, 2, 2] = c02 / determinant, c12 / determinant, \
            c22 / determinant
    return inverses, True


@kernel
def _force_inertias(masses: np.ndarray, r: np.ndarray, totals: np.ndarray) -> Tuple[np.ndarray, ...]:
    """Return the virtual centres (V, 3), offsets ``d`` and ``m d`` (V, n, 3), ``J_f`` (V, 3, 3) and ``sum m |d|^2``."""
    count, n = masses.shape
    com, k = weighted_centres(masses, r, totals), np.empty(count)
    offsets, moments, j_force = np.empty((count, n, 3)), np.empty((count, n, 3)), np.empty((count, 3, 3))
    for v in range(count):
        for a in range(3):
            for i in range(n):
                offsets[v, i, a] = r[i, a] - com[v, a]
            # sum m_i d_i = 0 to rounding of d, not of r (far CoM)
            residual = 0.0
            for i in range(n):
                residual += masses[v, i] * offsets[v, i, a]
            residual /= totals[v]
            for i in range(n):
                offsets[v, i, a] -= residual
                moments[v, i, a] = offsets[v, i, a] * masses[v, i]
        half_trace = 0.0                                               # sum m |d|^2 = tr(J_f) / 2
        for a in range(3):
            for b in range(3):
                outer = 0.0
                for i in range(n):
                    outer += moments[v, i, a] * offsets[v, i, b]
                j_force[v, a, b] = -outer
            half_trace -= j_force[v, a, a]
        k[v] = half_trace
        for a in range(3):
            j_force[v, a, a] += half_trace
    return com, offsets, moments, j_force, k


def to_virtual_com(com: np.ndarray) -> np.ndarray:
    """(6, 6) map of a resultant about the CoM to one about the virtual CoM ``c~``.

    :param com: ``c~`` relative to the CoM.
    :return: the matrix.
    """
    shift = np.eye(6)
    shift[3:, :3] = -skew(com)
    return shift


def pseudo_inverse(inertia: VirtualInertia, share: float, weights: np.ndarray, rigid: np.ndarray) -> np.ndarray:
    """``G_M+`` (eq. 81 generalised, eqs. 2.2-2.3 of docs/theory.md), (6n, 6).

    :param inertia: the virtual inertia.
    :param share: torque share ``s`` in [0, 1].
    :param weights: (n,) torque weights of the rigid contacts, summing to 1.
    :param rigid: (n,) rigid-contact mask.
    :return: object axes, about each contact.
    """
    batch = VirtualInertia(*(np.asarray(getattr(inertia, f.name))[None] for f in fields(inertia)))
    return pseudo_inverses(batch, np.array([share]), (weights * rigid)[None])[0]


def pseudo_inverses(inertia: VirtualInertia, shares: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``G_M+`` of V virtual inertias at once (:func:`virtual_inertias`), (V, 6n, 6).

    :param inertia: the batch of inertias.
    :param shares: (V,) torque shares.
    :param weights: (V, n) torque weights (zero but at rigid contacts; each row sums to 1 or 0), or
        None without a rigid contact.
    :return: object axes, about each contact.
    """
    with_torques = weights is not None and bool(weights.any())
    return _pseudo_inverses(inertia.masses, inertia.total, inertia.offsets, np.asarray(shares, dtype=float),
                            inertia.force_pinv, inertia.j_force, inertia.regulariser, inertia.a_pinv,
                            weights if with_torques else _NO_WEIGHTS, with_torques, inertia.com)


_NO_WEIGHTS = np.zeros((0, 0))


@kernel
def _pseudo_inverses(masses: np.ndarray, totals: np.ndarray, offsets: np.ndarray, shares: np.ndarray,
                     force_pinv: np.ndarray, j_force: np.ndarray, regulariser: np.ndarray, a_pinv: np.ndarray,
                     weights: np.ndarray, with_torques: bool, com: np.ndarray) -> np.ndarray:
    """Compute :func:`pseudo_inverses` (compiled): the blocks of each contact, about the virtual centre."""
    count, n = masses.shape
    core = np.zeros((count, 6 * n, 6))
    torque = np.zeros((3, 3))
    for v in range(count):
        if with_torques:                                              # (s J_f + K) A^+
            for a in range(3):
                for c in range(3):
                    total = 0.0
                    for b in range(3):
                        total += (shares[v] * j_force[v, a, b] + regulariser[v, a, b]) * a_pinv[v, b, c]
                    torque[a, c] = total
        cx, cy, cz = com[v, 0], com[v, 1], com[v, 2]
        for j in range(n):
            row = 6 * j
            mass = masses[v, j]
            for a in range(3):
                core[v, row + a, a] = mass / totals[v]                # (m_j / M) I
            # -(1 - s) m_j S(d_j) A^-1 (faded)
            scale = (shares[v] - 1.0) * mass
            x, y, z = offsets[v, j, 0] * scale, offsets[v, j, 1] * scale, offsets[v, j, 2] * scale
            for c in range(3):
                core[v, row, 3 + c] = -z * force_pinv[v, 1, c] + y * force_pinv[v, 2, c]
                core[v, row + 1, 3 + c] = z * force_pinv[v, 0, c] - x * force_pinv[v, 2, c]
                core[v, row + 2, 3 + c] = -y * force_pinv[v, 0, c] + x * force_pinv[v, 1, c]
                if with_torques:
                    for a in range(3):
                        core[v, row + 3 + a, 3 + c] = weights[v, j] * torque[a, c]
            # about the virtual CoM: the block times to_virtual_com(c~), i.e. forces -= torques S(c~)
            for a in range(6):
                t0, t1, t2 = core[v, row + a, 3], core[v, row + a, 4], core[v, row + a, 5]
                core[v, row + a, 0] -= t1 * cz - t2 * cy
                core[v, row + a, 1] -= t2 * cx - t0 * cz
                core[v, row + a, 2] -= t0 * cy - t1 * cx
    return core


def null_projector(grasp: np.ndarray, metric: np.ndarray, active: np.ndarray, length: float = 1.0,
                   rank: Optional[int] = None) -> np.ndarray:
    """Projector on the null space of ``G`` over the active components, orthogonal in ``metric``.

    Computed on the dimensionless matrix ``diag(I, I / l) G W^-1/2`` (forces in N, torques over
    ``l``), so that neither the unit of length nor the mixture of N and N*m limits its accuracy;
    its row space is that of its ``rank`` largest singular vectors.

    :param grasp: (6, 6n) grasp matrix.
    :param metric: (6n,) positive diagonal metric on the active components.
    :param active: (6n,) active-component mask.
    :param length: characteristic length ``l`` that makes the torque rows dimensionless.
    :param rank: rank of ``G`` (``SynthesisMaps.rank``); None: numerical rank.
    :return: (6n, 6n) projector, zero on inactive components.
    """
    root = np.sqrt(metric[active])
    scaled = grasp[:, active] / root
    scaled[3:] /= length
    _, singular, vt = np.linalg.svd(scaled, full_matrices=False)
    if rank is None:
        rank = int(np.sum(singular > max(scaled.shape) * np.finfo(float).eps * singular.max()))
    rows = vt[:rank]
    projector = np.eye(root.size) - (rows.T / root[:, None]) @ (rows * root[None, :])
    full = np.zeros((active.size, active.size))
    full[np.ix_(active, active)] = projector
    return full


def _force_arms(masses: np.ndarray, offsets: np.ndarray, a_pinv: np.ndarray) -> np.ndarray:
    """(n, 3, 3) blocks ``m_j S(d_j) A^-1``."""
    return np.einsum('j,jab,bc->jac', masses, np.array([skew(d) for d in offsets]), a_pinv)


def _torque_share_maps(inertia: VirtualInertia, weights: np.ndarray, rigid: np.ndarray) -> list:
    n = inertia.masses.size
    base = np.zeros((6 * n, 6))
    arms = _force_arms(inertia.masses, inertia.offsets, inertia.a_pinv)
    for j in range(n):
        base[6 * j:6 * j + 3, 3:] = arms[j]
        if rigid[j]:
            base[6 * j + 3:6 * j + 6, 3:] = -weights[j] * inertia.regulariser @ inertia.a_pinv
    share = (inertia.j_force + inertia.regulariser) @ inertia.a_pinv
    maps = []
    for i in np.flatnonzero(rigid):
        core = base.copy()
        core[6 * i + 3:6 * i + 6, 3:] += share
        maps.append(core)
    return maps


def _mass_maps(inertia: VirtualInertia, weights: np.ndarray, rigid: np.ndarray) -> list:
    n = inertia.masses.size
    masses, d, a_pinv, regulariser = inertia.masses, inertia.offsets, inertia.a_pinv, inertia.regulariser
    constraints = np.vstack([np.ones(n) / np.sqrt(n), d.T / inertia.length])
    _, singular, vt = np.linalg.svd(constraints)
    rank = int(np.sum(singular > 1e-9 * singular.max()))
    # a unit step along a mass direction moves the masses by at most min(m), so the ball of
    # radius 1 keeps every mass positive (to first order, section 5)
    deltas = vt[rank:] * masses.min()
    if deltas.shape[0] == 0:
        return []
    skews = np.array([skew(v) for v in d])                                   # (n, 3, 3)
    d_alpha = -np.einsum('ab,kbc,cd->kad', a_pinv, np.array([point_inertia(v, d) for v in deltas]), a_pinv)
    arms = np.einsum('j,jab->jab', masses, skews)                           # m_j S(d_j)
    maps = np.zeros((deltas.shape[0], n, 6, 6))
    maps[:, :, :3, :3] = np.einsum('kj,ab->kjab', deltas / inertia.total, np.eye(3))
    maps[:, :, :3, 3:] = (-np.einsum('kj,jab,bc->kjac', deltas, skews, a_pinv)
                          - np.einsum('jab,kbc->kjac', arms, d_alpha))
    torque = np.einsum('j,ab,kbc->kjac', weights * rigid, regulariser, d_alpha)
    maps[:, :, 3:, 3:] = torque
    return list(maps.reshape(deltas.shape[0], 6 * n, 6))


def manipulating_maps(inertia: VirtualInertia, weights: np.ndarray, rigid: np.ndarray,
                      projector: np.ndarray) -> np.ndarray:
    """Linear maps ``h_o -> k_a`` whose images span ``N_m`` (eqs. 65, 72-73), scaled to the ball.

    One torque-share direction per rigid contact (a full share of ``t~`` moved to that
    contact's torque: eq. 65 bounds the shares by 1), and one direction per virtual-mass
    redistribution keeping eqs. 51 and 53 (the null space of R in eq. 64), taken at the
    paper's particular solution ``h_m,p``.

    :param inertia: canonical virtual inertia.
    :param weights: torque weights.
    :param rigid: rigid-contact mask.
    :param projector: projector on ``N(G)``.
    :return: (d, 6n, 6) maps about the CoM.
    """
    maps = _torque_share_maps(inertia, weights, rigid) + _mass_maps(inertia, weights, rigid)
    n = inertia.masses.size
    if not maps:
        return np.zeros((0, 6 * n, 6))
    return projector @ np.array(maps) @ to_virtual_com(inertia.com)
