"""A named, deterministic basis of the null space of ``G``: the internal loads a user can read.

Every element is a self-equilibrated set of applied wrenches (zero resultant) with a
physical meaning and a unit, built from the contact geometry alone:

- ``squeeze(a,b)`` [N]: forces ``+e`` at ``a`` and ``-e`` at ``b``, ``e`` the unit vector from
  ``a`` to ``b``: the two effectors push towards each other (negative values pull apart).
  For coincident contacts ``e`` is the x axis of ``a``'s frame.
- ``twist(a,b)``, ``bend_u(a,b)``, ``bend_v(a,b)`` [N*m] (two rigid contacts): opposite
  torques about ``e``, ``u = normalise(axis x e)`` and ``v = e x u``, ``axis`` being
  ``DistributionOptions.basis_reference_axis``.
- ``shear_u(a,b)``, ``shear_v(a,b)`` [N] (a rigid contact, or coincident ones): opposite forces
  along ``u`` or ``v`` plus the contact torques that cancel their couple (split equally
  between rigid contacts).
- ``warp(a,b,c,d)`` [N]: forces along the contacts' best-fit plane normal with the unique
  weights on four contacts that cancel force and moment (the mode a set of feet on a
  plane has and pair squeezes cannot express).
- ``balanced_<component>(a)``: the projection on the null space of a unit component,
  used only where the named elements above do not span it (coincident contacts).

Candidates are taken in that order and kept when independent of the ones already kept
(relative residual above ``BASIS_TOLERANCE`` in a unit-consistent metric), until the
null space of ``G`` is spanned.
"""
from dataclasses import dataclass
from itertools import combinations
from typing import List, Tuple

import numpy as np

from .options import BASIS_TOLERANCE

COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
#: Elements whose sign flips when the two contacts in the name are swapped.
ORDER_ODD = ('bend_v', 'shear_v')


@dataclass(frozen=True)
class InternalBasis:
    """Basis matrix (6n, m) in object-frame axes about each contact point, with names and units."""

    matrix: np.ndarray
    names: Tuple[str, ...]
    units: Tuple[str, ...]


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of two 3-vectors (``numpy.cross`` costs microseconds per call)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _norm(v: np.ndarray) -> float:
    return float(np.sqrt(v @ v))


def _perpendicular(e: np.ndarray, axis: np.ndarray, frame: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``u = normalise(axis x e)``, ``v = e x u``; when ``e`` is parallel to ``axis`` the first
    contact's frame axes stand in for ``axis`` (so that everything turns with the object)."""
    u = _cross(axis, e)
    for fallback in (frame[:, 0], frame[:, 1]):
        if _norm(u) >= 1e-6:
            break
        u = _cross(fallback, e)
    u /= _norm(u)
    return u, _cross(e, u)


def _line(e, axis: np.ndarray, frame: np.ndarray) -> np.ndarray:
    """Direction of a pair: the line joining it, or for coincident contacts a frame axis."""
    if e is not None:
        return e
    return frame[:, 0] if _norm(_cross(frame[:, 0], axis)) > 1e-6 else frame[:, 1]


def named_candidates(positions, rigid, names, axis, length, rotations) -> List[Tuple[str, str, np.ndarray]]:
    """Every named element of the families above, in the selection order."""
    n = len(names)
    out = []
    lines = {}
    for i, j in combinations(range(n), 2):
        delta = positions[j] - positions[i]
        distance = _norm(delta)
        lines[i, j] = (delta / distance if distance > 1e-9 * length else None, delta)
    for (i, j), (e, _) in lines.items():
        e = _line(e, axis, rotations[i])
        v = np.zeros(6 * n)
        v[6 * i:6 * i + 3], v[6 * j:6 * j + 3] = e, -e
        out.append((f'squeeze({names[i]},{names[j]})', 'N', v))
    torque_pairs = [(i, j) for (i, j) in lines if rigid[i] and rigid[j]]
    for (i, j) in torque_pairs:
        e = _line(lines[i, j][0], axis, rotations[i])
        u, w = _perpendicular(e, axis, rotations[i])
        for kind, direction in (('twist', e), ('bend_u', u), ('bend_v', w)):
            v = np.zeros(6 * n)
            v[6 * i + 3:6 * i + 6], v[6 * j + 3:6 * j + 6] = direction, -direction
            out.append((f'{kind}({names[i]},{names[j]})', 'N*m', v))
    for (i, j), (e, delta) in lines.items():
        if not (rigid[i] or rigid[j] or e is None):
            continue
        e = _line(e, axis, rotations[i])
        u, w = _perpendicular(e, axis, rotations[i])
        for kind, direction in (('shear_u', u), ('shear_v', w)):
            v = np.zeros(6 * n)
            v[6 * i:6 * i + 3], v[6 * j:6 * j + 3] = direction, -direction
            couple = _cross(delta, direction)  # torque the contacts must add
            holders = [k for k in (i, j) if rigid[k]]
            for k in holders:
                v[6 * k + 3:6 * k + 6] = couple / len(holders)
            out.append((f'{kind}({names[i]},{names[j]})', 'N', v))
    out.extend(_warp_candidates(positions, names, axis, length))
    return out


def _warp_candidates(positions, names, axis, length):
    n = len(names)
    if n < 4:
        return []
    centred = positions - positions.mean(axis=0)
    _, _, vt = np.linalg.svd(centred)
    normal = vt[2] if np.dot(vt[2], axis) >= 0 else -vt[2]
    in_plane = centred @ vt[:2].T
    out = []
    for k in range(3, n):
        subset = [0, 1, 2, k]
        system = np.vstack([np.ones(4), in_plane[subset].T])
        _, singular, vt4 = np.linalg.svd(system)
        if singular[-1] < 1e-9 * max(length, 1e-300):
            continue
        weights = vt4[-1] if vt4[-1][-1] > 0 else -vt4[-1]
        weights = weights / np.abs(weights).max()
        v = np.zeros(6 * n)
        for weight, index in zip(weights, subset):
            v[6 * index:6 * index + 3] = weight * normal
        label = ','.join(names[i] for i in subset)
        out.append((f'warp({label})', 'N', v))
    return out


def build_internal_basis(
    candidates: List[Tuple[str, str, np.ndarray]],
    null_projector: np.ndarray,
    active: np.ndarray,
    length: float,
    dimension: int,
) -> InternalBasis:
    """Select the named basis of the null space of ``G`` from ordered candidates.

    Greedy in the candidates' order, in blocks: each block is projected off the kept
    vectors with one matrix product, then scanned in order.

    :param candidates: ``(name, unit, vector)`` from :func:`named_candidates`.
    :param null_projector: projector (6n, 6n) on the null space of ``G``.
    :param active: (6n,) mask of the components contacts can apply.
    :param length: characteristic length of the contact set (unit-consistent metric).
    :param dimension: dimension of the null space of ``G``.
    :return: the basis.
    """
    size = active.size
    metric = np.tile(np.r_[np.ones(3), np.full(3, 1.0 / length ** 2)], size // 6) * active
    fallback = []
    for index in np.flatnonzero(active):
        unit = np.zeros(size)
        unit[index] = 1.0
        name = f'balanced_{COMPONENTS[index % 6]}({index // 6})'
        fallback.append((name, 'N' if index % 6 < 3 else 'N*m', null_projector @ unit))
    ordered = list(candidates) + fallback
    orthonormal = np.zeros((size, dimension))
    kept = []
    count = 0
    block = 256
    for start in range(0, len(ordered), block):
        if count == dimension:
            break
        chunk = ordered[start:start + block]
        vectors = np.column_stack([vector for _, _, vector in chunk])
        norms = np.sqrt(np.einsum('ij,i,ij->j', vectors, metric, vectors))
        first = count
        residuals = vectors - orthonormal[:, :count] @ (orthonormal[:, :count].T @ (metric[:, None] * vectors))
        for j, (name, unit, vector) in enumerate(chunk):
            if count == dimension:
                break
            if norms[j] == 0.0:
                continue
            residual = residuals[:, j]
            if count > first:
                added = orthonormal[:, first:count]
                residual = residual - added @ (added.T @ (metric * residual))
            residual_norm = np.sqrt(residual @ (metric * residual))
            if residual_norm <= BASIS_TOLERANCE * norms[j]:
                continue
            orthonormal[:, count] = residual / residual_norm
            count += 1
            kept.append((name, unit, vector))
    matrix = np.column_stack([v for _, _, v in kept]) if kept else np.zeros((size, 0))
    return InternalBasis(matrix, tuple(n for n, _, _ in kept), tuple(u for _, u, _ in kept))
