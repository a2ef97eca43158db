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
- ``balanced_<component>(a)``: the projection on the null space of a unit component in
  ``a``'s contact frame, used only where the named elements above do not span it well.

Candidates come in a fixed order (docs/theory.md, section 6) and are kept when their part
independent of the ones already kept is at least ``BASIS_TOLERANCE`` of their size in the
metric ``diag(I, I / l^2)``, until the null space of ``G`` is spanned. The threshold is what
keeps the basis well conditioned: the coordinates of a physical load stay of its size.
Pairs are generated lazily between near neighbours, so that large contact sets need about
``12 n`` candidates.
"""
from dataclasses import dataclass
from itertools import chain, islice
import re
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .options import BASIS_TOLERANCE
from .spatial import cross

COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
#: Elements whose sign flips when the two contacts in the name are swapped.
ORDER_ODD = ('bend_v', 'shear_v')
PAIR_KINDS = ('squeeze', 'twist', 'bend_u', 'bend_v', 'shear_u', 'shear_v')
_HANDLE = re.compile(r'^\s*([a-z_]+)\s*\(([^()]*)\)\s*$')
Candidate = Tuple[str, str, np.ndarray]


@dataclass(frozen=True)
class InternalBasis:
    """Basis matrix (6n, m) in object-frame axes about each contact point, with names and units."""

    matrix: np.ndarray
    names: Tuple[str, ...]
    units: Tuple[str, ...]


@dataclass(frozen=True)
class Geometry:
    """What the candidates are built from.

    :param positions: contact positions (n, 3), object frame.
    :param rigid: (n,) rigid-contact mask.
    :param names: contact names.
    :param axis: unit reference axis (3,).
    :param length: characteristic length of the contact set.
    :param rotations: contact frame rotations (n, 3, 3).
    """

    positions: np.ndarray
    rigid: np.ndarray
    names: Sequence[str]
    axis: np.ndarray
    length: float
    rotations: np.ndarray

    @property
    def n(self) -> int:
        """Return the number of contacts."""
        return len(self.names)


def _norm(v: np.ndarray) -> float:
    return float(np.sqrt(v @ v))


def _perpendicular(e: np.ndarray, axis: np.ndarray, frame: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Return ``u = normalise(axis x e)`` and ``v = e x u``.

    When ``e`` is parallel to ``axis`` the first contact's frame axes stand in for ``axis``
    (so that everything turns with the object).
    """
    u = cross(axis, e)
    for fallback in (frame[:, 0], frame[:, 1]):
        if _norm(u) >= 1e-6:
            break
        u = cross(fallback, e)
    u /= _norm(u)
    return u, cross(e, u)


def _pair_line(geometry: Geometry, i: int, j: int) -> Tuple[np.ndarray, np.ndarray]:
    """Return the unit direction of pair ``(i, j)`` and the vector joining it; coincident: a frame axis."""
    delta = geometry.positions[j] - geometry.positions[i]
    distance = _norm(delta)
    if distance > 1e-9 * geometry.length:
        return delta / distance, delta
    frame = geometry.rotations[i]
    axis = frame[:, 0] if _norm(cross(frame[:, 0], geometry.axis)) > 1e-6 else frame[:, 1]
    return axis, delta


def pair_vector(geometry: Geometry, kind: str, i: int, j: int) -> Optional[np.ndarray]:
    """Return the stacked (6n,) wrench of one pair element, or None if the pair cannot have it.

    :param geometry: the contact set.
    :param kind: one of :data:`PAIR_KINDS`.
    :param i: first contact index.
    :param j: second contact index.
    :return: the wrench applied by the effectors, object axes about each contact.
    """
    rigid = geometry.rigid
    e, delta = _pair_line(geometry, i, j)
    v = np.zeros(6 * geometry.n)
    if kind == 'squeeze':
        v[6 * i:6 * i + 3], v[6 * j:6 * j + 3] = e, -e
        return v
    u, w = _perpendicular(e, geometry.axis, geometry.rotations[i])
    if kind in ('twist', 'bend_u', 'bend_v'):
        if not (rigid[i] and rigid[j]):
            return None
        direction = {'twist': e, 'bend_u': u, 'bend_v': w}[kind]
        v[6 * i + 3:6 * i + 6], v[6 * j + 3:6 * j + 6] = direction, -direction
        return v
    coincident = _norm(delta) <= 1e-9 * geometry.length
    if not (rigid[i] or rigid[j] or coincident):
        return None
    direction = u if kind == 'shear_u' else w
    v[6 * i:6 * i + 3], v[6 * j:6 * j + 3] = direction, -direction
    holders = [k for k in (i, j) if rigid[k]]
    for k in holders:
        v[6 * k + 3:6 * k + 6] = cross(delta, direction) / len(holders)  # cancels the couple
    return v


def _near_pairs(positions: np.ndarray, neighbours: int) -> Iterator[Tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, for each ``j`` with its ``neighbours`` nearest earlier contacts.

    Up to ``neighbours + 1`` contacts these are all pairs, in lexicographic order of ``(j, i)``.
    """
    for j in range(1, positions.shape[0]):
        if j <= neighbours:
            yield from ((i, j) for i in range(j))
            continue
        distance = np.sum((positions[:j] - positions[j]) ** 2, axis=1)
        yield from ((int(i), j) for i in sorted(np.argsort(distance, kind='stable')[:neighbours]))


def _family(geometry: Geometry, kinds: Sequence[str], neighbours: int) -> Iterator[Candidate]:
    names = geometry.names
    for i, j in _near_pairs(geometry.positions, neighbours):
        for kind in kinds:
            vector = pair_vector(geometry, kind, i, j)
            if vector is not None:
                unit = 'N*m' if kind in ('twist', 'bend_u', 'bend_v') else 'N'
                yield f'{kind}({names[i]},{names[j]})', unit, vector


def named_candidates(geometry: Geometry) -> Iterator[Candidate]:
    """Yield every named element of the families above, lazily, in the selection order.

    Squeezes of each contact with its six nearest earlier contacts (all pairs up to seven
    contacts; beyond, a framework braced to its near neighbours spans the force null space
    of contacts in general position, with short, well-spread bars), torque modes and shears
    of each contact with its nearest earlier contact (the pair modes of a tree span every
    wrench at the other contact), then warps. About ``12 n`` candidates in all.
    """
    return chain(
        _family(geometry, ('squeeze',), 6),
        _family(geometry, ('twist', 'bend_u', 'bend_v'), 1),
        _family(geometry, ('shear_u', 'shear_v'), 1),
        _warp_candidates(geometry),
    )


def _warp_weights(in_plane: np.ndarray, subset: Sequence[int], length: float) -> Optional[np.ndarray]:
    system = np.vstack([np.ones(4), in_plane[list(subset)].T])
    _, singular, vt4 = np.linalg.svd(system)
    if singular[-1] < 1e-9 * max(length, 1e-300):
        return None
    weights = vt4[-1] if vt4[-1][-1] > 0 else -vt4[-1]
    return weights / np.abs(weights).max()


def _plane(geometry: Geometry) -> Tuple[np.ndarray, np.ndarray]:
    centred = geometry.positions - geometry.positions.mean(axis=0)
    _, _, vt = np.linalg.svd(centred)
    normal = vt[2] if np.dot(vt[2], geometry.axis) >= 0 else -vt[2]
    return normal, centred @ vt[:2].T


def warp_vector(geometry: Geometry, subset: Sequence[int]) -> Optional[np.ndarray]:
    """Return the stacked wrench of ``warp`` on four contacts, or None when they are degenerate.

    :param geometry: the contact set.
    :param subset: four contact indices.
    :return: (6n,) wrench or None.
    """
    normal, in_plane = _plane(geometry)
    weights = _warp_weights(in_plane, subset, geometry.length)
    return None if weights is None else _warp_stack(geometry.n, subset, weights, normal)


def _warp_stack(n: int, subset: Sequence[int], weights: np.ndarray, normal: np.ndarray) -> np.ndarray:
    v = np.zeros(6 * n)
    for weight, index in zip(weights, subset):
        v[6 * index:6 * index + 3] = weight * normal
    return v


def _warp_candidates(geometry: Geometry) -> Iterator[Candidate]:
    names = geometry.names
    if geometry.n < 4:
        return
    normal, in_plane = _plane(geometry)
    for k in range(3, geometry.n):
        subset = (0, 1, 2, k)
        weights = _warp_weights(in_plane, subset, geometry.length)
        if weights is not None:
            yield f'warp({",".join(names[i] for i in subset)})', 'N', _warp_stack(geometry.n, subset, weights, normal)


def _fallback(null_projector: np.ndarray, active: np.ndarray, rotations: np.ndarray) -> List[Candidate]:
    """Return unit components in the contact frames (so they turn with the object), projected on N(G)."""
    blocks = np.zeros((active.size, active.size))
    for contact, rotation in enumerate(rotations):
        blocks[6 * contact:6 * contact + 3, 6 * contact:6 * contact + 3] = rotation
        blocks[6 * contact + 3:6 * contact + 6, 6 * contact + 3:6 * contact + 6] = rotation
    indices = np.flatnonzero(active)
    projected = null_projector @ blocks[:, indices]
    out = []
    for column, index in enumerate(indices):
        contact, component = divmod(int(index), 6)
        out.append((f'balanced_{COMPONENTS[component]}({contact})', 'N' if component < 3 else 'N*m',
                    projected[:, column]))
    return out


def handle_vector(geometry: Geometry, key: str) -> Optional[np.ndarray]:
    """Return the stacked wrench of a named handle such as ``squeeze(left,right)``, in either order.

    :param geometry: the contact set.
    :param key: the handle name.
    :return: (6n,) wrench, or None for an unknown name.
    """
    match = _HANDLE.match(key)
    if not match:
        return None
    kind = match.group(1)
    members = [m.strip() for m in match.group(2).split(',')]
    index = {name: k for k, name in enumerate(geometry.names)}
    if any(m not in index for m in members) or len(set(members)) != len(members):
        return None
    ids = [index[m] for m in members]
    if kind == 'warp' and len(ids) == 4:
        return warp_vector(geometry, ids)
    if kind not in PAIR_KINDS or len(ids) != 2:
        return None
    i, j = sorted(ids)
    vector = pair_vector(geometry, kind, i, j)
    if vector is not None and ids[0] > ids[1] and kind in ORDER_ODD:
        vector = -vector
    return vector


def build_internal_basis(
    candidates: Iterable[Candidate],
    null_projector: np.ndarray,
    active: np.ndarray,
    metric: np.ndarray,
    dimension: int,
    rotations: np.ndarray,
) -> InternalBasis:
    """Select the named basis of the null space of ``G`` from ordered candidates.

    Greedy in the candidates' order, in blocks: each block is projected off the kept vectors
    with matrix products, then scanned in order.

    :param candidates: ``(name, unit, vector)`` in selection order (may be lazy).
    :param null_projector: projector (6n, 6n) on the null space of ``G``.
    :param active: (6n,) mask of the components contacts can apply.
    :param metric: (6n,) diagonal metric ``diag(I, I / l^2)`` on the active components.
    :param dimension: dimension of the null space of ``G``.
    :param rotations: (n, 3, 3) contact frames (axes of the ``balanced_*`` fallbacks).
    :return: the basis.
    """
    size = active.size
    fallbacks = _fallback(null_projector, active, rotations)
    ordered = chain(candidates, fallbacks)
    orthonormal = np.zeros((size, dimension))
    kept: List[Candidate] = []
    while len(kept) < dimension:
        chunk = list(islice(ordered, 24))
        if not chunk:
            break
        _scan(chunk, orthonormal, kept, metric, dimension)
    if len(kept) < dimension:
        _complete(fallbacks, orthonormal, kept, metric, dimension)
    matrix = np.column_stack([v for _, _, v in kept]) if kept else np.zeros((size, 0))
    return InternalBasis(matrix, tuple(n for n, _, _ in kept), tuple(u for _, u, _ in kept))


def _scan(chunk: List[Candidate], orthonormal: np.ndarray, kept: List[Candidate], metric: np.ndarray,
          dimension: int) -> None:
    """Keep, in order, the candidates of one block whose independent part is large enough.

    The block is projected off the kept vectors once; each kept candidate then updates the
    rest of the block with one rank-1 product (Gram-Schmidt), so a rejection costs nothing.
    """
    # named elements are exact null vectors; the fallbacks are already projected
    vectors = np.column_stack([vector for _, _, vector in chunk])
    norms2 = np.einsum('ij,i,ij->j', vectors, metric, vectors)
    count = len(kept)
    residuals = vectors - orthonormal[:, :count] @ (orthonormal[:, :count].T @ (metric[:, None] * vectors))
    sizes2 = np.einsum('ij,i,ij->j', residuals, metric, residuals)
    for j, candidate in enumerate(chunk):
        if len(kept) == dimension:
            break
        if norms2[j] == 0.0 or sizes2[j] <= BASIS_TOLERANCE ** 2 * norms2[j]:
            continue
        direction = residuals[:, j] / np.sqrt(sizes2[j])
        orthonormal[:, len(kept)] = direction
        kept.append(candidate)
        projection = (metric * direction) @ residuals[:, j + 1:]
        residuals[:, j + 1:] -= direction[:, None] * projection
        sizes2[j + 1:] -= projection ** 2


def _complete(pool: List[Candidate], orthonormal: np.ndarray, kept: List[Candidate], metric: np.ndarray,
              dimension: int) -> None:
    """Span what is left with the most independent fallbacks, one at a time (pivoted).

    Each is kept as its part orthogonal to the elements before it, so that a fallback never
    nearly repeats them (the basis stays well conditioned).
    """
    vectors = np.column_stack([vector for _, _, vector in pool])
    norms = np.sqrt(np.einsum('ij,i,ij->j', vectors, metric, vectors))
    count = len(kept)
    residuals = vectors - orthonormal[:, :count] @ (orthonormal[:, :count].T @ (metric[:, None] * vectors))
    while len(kept) < dimension:
        sizes = np.sqrt(np.maximum(np.einsum('ij,i,ij->j', residuals, metric, residuals), 0.0))
        ratio = np.where(norms > 0, sizes / np.where(norms > 0, norms, 1.0), 0.0)
        best = int(np.argmax(ratio))
        if sizes[best] <= 1e-12 * norms.max():
            return
        direction = residuals[:, best] / sizes[best]
        orthonormal[:, len(kept)] = direction
        name, unit, _ = pool[best]
        # the part independent of the elements kept so far, at the size of the unit component
        kept.append((name, unit, direction * norms[best]))
        residuals -= np.outer(direction, direction @ (metric[:, None] * residuals))
