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
  ``a``'s contact frame, its part orthogonal to the elements before it at the projection's
  size, used only where the named elements above do not span it well.

Candidates come in a fixed order (docs/theory.md, section 6) and are kept when their part
independent of the ones already kept is at least ``BASIS_TOLERANCE`` of their size in the
metric ``diag(I, I / l^2)``, until the null space of ``G`` is spanned. The threshold is what
keeps the basis well conditioned: the coordinates of a physical load stay of its size.
Pairs are generated between near neighbours, so that large contact sets need about ``12 n``
candidates; each family of candidates is built at once as the columns of one matrix, and
the selection works on blocks of columns (docs/benchmarks.md has the cost by contact count).
"""
from dataclasses import dataclass
from functools import cached_property, lru_cache
import re
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import scipy.linalg
import scipy.linalg.lapack

from .options import BASIS_TOLERANCE
from .spatial import cross
from .validation import did_you_mean

COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
#: Elements whose sign flips when the two contacts in the name are swapped.
ORDER_ODD = ('bend_v', 'shear_v')
PAIR_KINDS = ('squeeze', 'twist', 'bend_u', 'bend_v', 'shear_u', 'shear_v')
TORQUE_KINDS = ('twist', 'bend_u', 'bend_v')
SHEAR_KINDS = ('shear_u', 'shear_v')
#: Candidates projected off the kept elements together (one matrix product per block).
BLOCK = 32
#: Relative margin within which completion candidates count as equally independent.
TIE = 1e-9
_HANDLE = re.compile(r'^\s*([a-z_]+)\s*\(([^()]*)\)\s*$')


@dataclass(frozen=True)
class InternalBasis:
    """Basis matrix (6n, m) in object-frame axes about each contact point, with names and units.

    ``plan`` is how the selection went (:class:`SelectionPlan`), or None when it needed the
    ``balanced_*`` fallbacks.
    """

    matrix: np.ndarray
    names: Tuple[str, ...]
    units: Tuple[str, ...]
    plan: Optional['SelectionPlan'] = None


@dataclass(frozen=True)
class SelectionPlan:
    """The named candidates the greedy selection looked at, in order, and which it kept.

    :param examined: per family, the names of the candidates looked at (every one up to the
        last kept).
    :param kept: per family, which of them were kept.
    """

    examined: Tuple[Tuple[str, ...], ...]
    kept: Tuple[np.ndarray, ...]

    @cached_property
    def order(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return, over the candidates looked at: which were kept, their indices, and the count kept before each."""
        kept = np.concatenate(self.kept) if self.kept else np.zeros(0, bool)
        return kept, np.flatnonzero(kept), np.cumsum(kept) - kept

    @cached_property
    def names(self) -> Tuple[str, ...]:
        """Return the names of the kept candidates, in order."""
        looked = [name for family in self.examined for name in family]
        return tuple(looked[i] for i in self.order[1])


@dataclass(frozen=True)
class Candidates:
    """Candidates in selection order: names, units and their stacked wrenches as columns (6n, k)."""

    names: Tuple[str, ...]
    units: Tuple[str, ...]
    vectors: np.ndarray


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


def _norms(v: np.ndarray) -> np.ndarray:
    """Euclidean norms of the rows of ``v`` (k, 3)."""
    return np.sqrt(np.einsum('ij,ij->i', v, v))


def _perpendiculars(e: np.ndarray, axis: np.ndarray, frames: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Return ``u = normalise(axis x e)`` and ``v = e x u`` for each row of ``e`` (k, 3).

    When ``e`` is parallel to ``axis`` the first contact's frame axes (``frames``, (k, 3, 3))
    stand in for ``axis`` (so that everything turns with the object).
    """
    u = cross(axis, e)
    for column in (0, 1):
        small = _norms(u) < 1e-6
        if not small.any():
            break
        u = np.where(small[:, None], cross(frames[:, :, column], e), u)
    u = u / _norms(u)[:, None]
    return u, cross(e, u)


@dataclass(frozen=True)
class _PairLines:
    """The lines of pairs ``(i, j)``: what the pair elements of every kind are made of.

    :param e: (k, 3) unit directions from ``i`` to ``j`` (a coincident pair: the x axis of its
        first contact's frame, y if x is along the reference axis).
    :param delta: (k, 3) the vectors joining the pairs.
    :param coincident: (k,) which pairs coincide.
    :param u: (k, 3) ``normalise(axis x e)``, or None when not asked for.
    :param v: (k, 3) ``e x u``, or None.
    """

    e: np.ndarray
    delta: np.ndarray
    coincident: np.ndarray
    u: Optional[np.ndarray] = None
    v: Optional[np.ndarray] = None

    @staticmethod
    def of(geometry: Geometry, i: np.ndarray, j: np.ndarray, perpendiculars: bool = True) -> '_PairLines':
        """Measure the pairs ``(i, j)`` of ``geometry`` (with ``u`` and ``v`` when ``perpendiculars``)."""
        delta = geometry.positions[j] - geometry.positions[i]
        distance = _norms(delta)
        coincident = ~(distance > 1e-9 * geometry.length)
        if coincident.any():
            frames = geometry.rotations[i]
            x_free = _norms(cross(frames[:, :, 0], geometry.axis)) > 1e-6
            frame_axis = np.where(x_free[:, None], frames[:, :, 0], frames[:, :, 1])
            e = np.where(coincident[:, None], frame_axis, delta / np.where(coincident, 1.0, distance)[:, None])
        else:
            e = delta / distance[:, None]
        if not perpendiculars:
            return _PairLines(e, delta, coincident)
        return _PairLines(e, delta, coincident, *_perpendiculars(e, geometry.axis, geometry.rotations[i]))


@lru_cache(maxsize=256)
def _pair_layout(n: int, i: Tuple[int, ...], j: Tuple[int, ...], kinds: Tuple[str, ...]) -> np.ndarray:
    """Return where the blocks of :func:`_pair_elements` go in its (6n, k, len(kinds)) array, flattened.

    Per kind, in order: the rows of ``i``, the rows of ``j`` (forces, or torques for the torque
    kinds), then for the shears the torque rows of ``i`` and of ``j``; each block (k, 3).
    """
    first, second, count = np.array(i, dtype=int), np.array(j, dtype=int), len(kinds)
    columns = np.arange(first.size)[:, None] * count
    index = []
    for column, kind in enumerate(kinds):
        offset = 3 if kind in TORQUE_KINDS else 0
        couples = [6 * first + 3, 6 * second + 3] if kind in SHEAR_KINDS else []
        bases = [6 * first + offset, 6 * second + offset] + couples
        index += [(base[:, None] + np.arange(3)) * (first.size * count) + columns + column for base in bases]
    flat = np.concatenate(index).ravel()
    flat.setflags(write=False)
    return flat


@lru_cache(maxsize=256)
def _pair_names(names: Tuple[str, ...], i: Tuple[int, ...], j: Tuple[int, ...], kinds: Tuple[str, ...],
                valid: bytes) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """Return the names and units of the valid pair elements, pair by pair, kinds in order."""
    flags = iter(valid)
    labels = [(f'{kind}({names[a]},{names[b]})', 'N*m' if kind in TORQUE_KINDS else 'N')
              for a, b in zip(i, j) for kind in kinds if next(flags)]
    return tuple(label for label, _ in labels), tuple(unit for _, unit in labels)


def _pair_elements(geometry: Geometry, kinds: Sequence[str], i: np.ndarray,
                   j: np.ndarray, lines: Optional[_PairLines] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Return the stacked wrenches (6n, k, len(kinds)) of pair elements and which pairs can have them.

    :param geometry: the contact set.
    :param kinds: names from :data:`PAIR_KINDS`.
    :param i: (k,) first contact indices.
    :param j: (k,) second contact indices.
    :param lines: the pairs' lines (:meth:`_PairLines.of`), or None to measure them here.
    :return: the wrenches applied by the effectors, object axes about each contact, and a
        (k, len(kinds)) mask.
    """
    kinds = tuple(kinds)
    if lines is None:
        lines = _PairLines.of(geometry, i, j, kinds != ('squeeze',))
    rigid_i, rigid_j = geometry.rigid[i], geometry.rigid[j]
    holders = rigid_i.astype(float) + rigid_j
    directions = {'squeeze': lines.e, 'twist': lines.e, 'bend_u': lines.u, 'bend_v': lines.v,
                  'shear_u': lines.u, 'shear_v': lines.v}
    blocks, valid = [], np.empty((i.size, len(kinds)), bool)
    for column, kind in enumerate(kinds):
        direction = directions[kind]
        blocks += [direction, -direction]
        if kind == 'squeeze':
            valid[:, column] = True
        elif kind in TORQUE_KINDS:
            valid[:, column] = rigid_i & rigid_j
        else:
            valid[:, column] = (holders > 0) | lines.coincident
            couple = cross(lines.delta, direction) / np.maximum(holders, 1.0)[:, None]  # cancels the couple
            blocks += [couple * rigid_i[:, None], couple * rigid_j[:, None]]
    vectors = np.zeros((6 * geometry.n, i.size, len(kinds)))
    vectors.ravel()[_pair_layout(geometry.n, tuple(i.tolist()), tuple(j.tolist()), kinds)] = \
        np.concatenate(blocks).ravel()
    return vectors, valid


def pair_vector(geometry: Geometry, kind: str, i: int, j: int) -> Optional[np.ndarray]:
    """Return the stacked (6n,) wrench of one pair element, or None if the pair cannot have it.

    :param geometry: the contact set.
    :param kind: one of :data:`PAIR_KINDS`.
    :param i: first contact index.
    :param j: second contact index.
    :return: the wrench applied by the effectors, object axes about each contact.
    """
    vectors, valid = _pair_elements(geometry, (kind,), np.array([i]), np.array([j]))
    return vectors[:, 0, 0] if valid[0, 0] else None


@lru_cache(maxsize=64)
def _all_pairs(n: int) -> Tuple[np.ndarray, np.ndarray]:
    """Return every pair ``(i, j)``, ``i < j < n``, in lexicographic order of ``(j, i)`` (read-only arrays)."""
    pairs = [(i, j) for j in range(1, n) for i in range(j)]
    first, second = np.array([i for i, _ in pairs], dtype=int), np.array([j for _, j in pairs], dtype=int)
    first.setflags(write=False)
    second.setflags(write=False)
    return first, second


def _near_pairs(positions: np.ndarray, neighbours: int) -> Tuple[np.ndarray, np.ndarray]:
    """Pairs ``(i, j)``, ``i < j``, for each ``j`` with its ``neighbours`` nearest earlier contacts.

    Up to ``neighbours + 1`` contacts these are all pairs, in lexicographic order of ``(j, i)``;
    distances equal within a relative :data:`TIE` go to the lower index.

    :return: the arrays of ``i`` and of ``j``.
    """
    n = positions.shape[0]
    first, second = _all_pairs(min(n, neighbours + 1))
    if n <= neighbours + 1:
        return first, second
    later = np.arange(neighbours + 1, n)
    distance = np.sum((positions[None, :, :] - positions[later, None, :]) ** 2, axis=2)
    distance[np.arange(n)[None, :] >= later[:, None]] = np.inf
    chosen = np.zeros((later.size, neighbours), dtype=int)
    rows = np.arange(later.size)
    for k in range(neighbours):
        # the first of equally near ones (squared distances within 2 TIE, distances within TIE):
        # symmetric layouts tie exactly, and round-off (or the unit of length) must not choose
        closest = distance.min(axis=1, keepdims=True)
        chosen[:, k] = np.argmax(distance <= closest * (1.0 + 2.0 * TIE), axis=1)
        distance[rows, chosen[:, k]] = np.inf
    nearest = np.sort(chosen, axis=1)
    return np.concatenate((first, nearest.ravel())), np.concatenate((second, np.repeat(later, neighbours)))


def _family(geometry: Geometry, kinds: Tuple[str, ...], pairs: Tuple[np.ndarray, np.ndarray],
            lines: Optional[_PairLines] = None) -> Candidates:
    """Return the pair elements of ``kinds`` on ``pairs`` (``(i, j)``), pair by pair, kinds in order."""
    i, j = pairs
    vectors, valid = _pair_elements(geometry, kinds, i, j, lines)
    names, units = _pair_names(tuple(geometry.names), tuple(i.tolist()), tuple(j.tolist()), kinds,
                               valid.tobytes())
    vectors = vectors.reshape(6 * geometry.n, -1)
    return Candidates(names, units, vectors if valid.all() else vectors[:, valid.ravel()])


def named_candidates(geometry: Geometry) -> Iterator[Candidates]:
    """Yield every named element of the families above, family by family, in the selection order.

    Squeezes of each contact with its six nearest earlier contacts (all pairs up to seven
    contacts; beyond, a framework braced to its near neighbours spans the force null space
    of contacts in general position, with short, well-spread bars), torque modes and shears
    of each contact with its nearest earlier contact (the pair modes of a tree span every
    wrench at the other contact), then warps. About ``12 n`` candidates in all; a family is
    built only when the ones before it do not span the null space.
    """
    yield _family(geometry, ('squeeze',), _near_pairs(geometry.positions, 6))
    nearest = _near_pairs(geometry.positions, 1)
    lines = _PairLines.of(geometry, *nearest)
    yield _family(geometry, TORQUE_KINDS, nearest, lines)
    yield _family(geometry, SHEAR_KINDS, nearest, lines)
    yield _warp_candidates(geometry)


def _warp_weights(in_plane: np.ndarray, subsets: np.ndarray, length: float) -> Tuple[np.ndarray, np.ndarray]:
    """Return the weights (k, 4) on each subset (k, 4) of contacts and which subsets have them.

    The weights cancel force and in-plane moment; the largest is 1 in size, the last positive.
    """
    unit_plane = in_plane / length  # dimensionless rows: the degeneracy test does not depend on the unit
    systems = np.concatenate([np.ones(subsets.shape)[:, None, :], np.swapaxes(unit_plane[subsets], 1, 2)], axis=1)
    _, singular, vt4 = np.linalg.svd(systems)
    valid = ~(singular[:, -1] < 1e-9)
    weights = vt4[:, -1] * np.where(vt4[:, -1, -1] > 0, 1.0, -1.0)[:, None]
    return weights / np.abs(weights).max(axis=1)[:, None], valid


def _plane(geometry: Geometry) -> Tuple[np.ndarray, np.ndarray]:
    centred = geometry.positions - geometry.positions.mean(axis=0)
    _, _, vt = np.linalg.svd(centred)
    # the normal's sign: towards the reference axis; where the plane contains it (a tie that
    # round-off would decide), towards the first of the first contact's frame axes off the plane
    for reference in (geometry.axis, *geometry.rotations[0].T):
        side = float(np.dot(vt[2], reference))
        if abs(side) >= 1e-6:
            break
    normal = vt[2] if side >= 0 else -vt[2]
    return normal, centred @ vt[:2].T


def warp_vector(geometry: Geometry, subset: Sequence[int]) -> Optional[np.ndarray]:
    """Return the stacked wrench of ``warp`` on four contacts, or None when they are degenerate.

    :param geometry: the contact set.
    :param subset: four contact indices.
    :return: (6n,) wrench or None.
    """
    normal, in_plane = _plane(geometry)
    subsets = np.array([subset], dtype=int)
    weights, valid = _warp_weights(in_plane, subsets, geometry.length)
    return _warp_stack(geometry.n, subsets, weights, normal)[:, 0] if valid[0] else None


def _warp_stack(n: int, subsets: np.ndarray, weights: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """Return the wrenches (6n, k): forces ``weight * normal`` on each subset's contacts."""
    vectors = np.zeros((6 * n, subsets.shape[0]))
    rows = 6 * subsets[:, :, None] + np.arange(3)
    vectors[rows, np.arange(subsets.shape[0])[:, None, None]] = weights[:, :, None] * normal
    return vectors


def _warp_candidates(geometry: Geometry) -> Candidates:
    names = geometry.names
    if geometry.n < 4:
        return Candidates((), (), np.zeros((6 * geometry.n, 0)))
    normal, in_plane = _plane(geometry)
    subsets = np.c_[np.tile([0, 1, 2], (geometry.n - 3, 1)), np.arange(3, geometry.n)]
    weights, valid = _warp_weights(in_plane, subsets, geometry.length)
    subsets = subsets[valid]
    labels = tuple(f'warp({",".join(names[i] for i in subset)})' for subset in subsets.tolist())
    return Candidates(labels, ('N',) * len(labels), _warp_stack(geometry.n, subsets, weights[valid], normal))


def rotate_blocks(matrix: np.ndarray, rotations: np.ndarray) -> np.ndarray:
    """Return ``matrix @ R`` for the block-diagonal ``R`` of :func:`.grasp.rotation_blocks`, block by block.

    :param matrix: (k, 6n) array.
    :param rotations: (n, 3, 3) contact frames.
    :return: (k, 6n) array.
    """
    rows, n = matrix.shape[0], rotations.shape[0]
    return (matrix.reshape(rows, n, 2, 3) @ rotations).reshape(rows, 6 * n)


def _fallback(null_projector: np.ndarray, active: np.ndarray, rotations: np.ndarray) -> Candidates:
    """Return unit components in the contact frames (so they turn with the object), projected on N(G)."""
    indices = np.flatnonzero(active)
    projected = rotate_blocks(null_projector, rotations)[:, indices]
    contacts, components = np.divmod(indices, 6)
    names = tuple(f'balanced_{COMPONENTS[c]}({k})' for k, c in zip(contacts.tolist(), components.tolist()))
    return Candidates(names, tuple('N' if c < 3 else 'N*m' for c in components.tolist()), projected)


def handle_members(key: str) -> Optional[Tuple[str, List[str]]]:
    """Split a handle name such as ``squeeze(left,right)`` into its kind and contact names.

    :param key: the handle name.
    :return: ``(kind, [contact names])``, or None when it is not of that form.
    """
    match = _HANDLE.match(key)
    if not match:
        return None
    return match.group(1), [m.strip() for m in match.group(2).split(',')]


def handle_vector(geometry: Geometry, key: str) -> Optional[np.ndarray]:
    """Return the stacked wrench of a named handle such as ``squeeze(left,right)``, in either order.

    :param geometry: the contact set.
    :param key: the handle name.
    :return: (6n,) wrench, or None for an unknown name.
    """
    parsed = handle_members(key)
    if parsed is None:
        return None
    kind, members = parsed
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


def handle_problem(key: str, names: Sequence[str], types: Sequence[str] = ()) -> Optional[str]:
    """Tell why a handle name can name no element of any grasp of these contacts.

    The grammar of :func:`handle_vector` and of the basis names: ``kind(a,b)`` for a pair
    kind, ``warp(a,b,c,d)``, ``balanced_<component>(k)``; the torque kinds need two rigid
    contacts. What depends on the geometry (coincident or degenerate contacts) is not judged.

    :param key: the handle name, e.g. ``squeeze(left,right)``.
    :param names: the effector names.
    :param types: ``rigid`` / ``point`` per effector (empty: not judged).
    :return: the reason with the accepted forms, or None.
    """
    example = f'squeeze({names[0]},{names[-1]})' if len(names) else 'squeeze(left,right)'
    parsed = handle_members(str(key))
    if parsed is None:
        return f'{key!r} is not of the form kind(effector,effector), e.g. {example}'
    kind, members = parsed
    kinds = PAIR_KINDS + ('warp',) + tuple(f'balanced_{c}' for c in COMPONENTS)
    if kind not in kinds:
        hint = did_you_mean(kind, kinds)
        hint = f' ({hint})' if hint else ''
        return f"unknown kind '{kind}'{hint}; kinds: {', '.join(PAIR_KINDS)}, warp, e.g. {example}"
    if kind.startswith('balanced_'):
        ok = len(members) == 1 and members[0].isdigit() and int(members[0]) < len(names)
        return None if ok else f'{key!r}: balanced elements name one contact index below {len(names)}'
    count = 4 if kind == 'warp' else 2
    unknown = [m for m in members if m not in names]
    if unknown:
        hint = did_you_mean(unknown[0], names)
        hint = f' ({hint})' if hint else ''
        return f"{key!r}: unknown effector '{unknown[0]}'{hint}; effectors: {', '.join(names)}"
    if len(members) != count or len(set(members)) != count:
        return f'{key!r}: {kind} names {count} different effectors'
    rigid = dict(zip(names, types))
    if kind in TORQUE_KINDS and types and not all(rigid[m] == 'rigid' for m in members):
        return f'{key!r}: {kind} is a torque between two rigid contacts; point contacts apply none'
    return None


class _Selection:
    """The elements kept so far, in order, and a basis of their span orthonormal in the metric."""

    def __init__(self, size: int, dimension: int, metric: np.ndarray) -> None:
        self.metric = metric
        self.dimension = dimension
        self.directions = np.zeros((dimension, size))
        self.names: List[str] = []
        self.units: List[str] = []
        self.columns: List[np.ndarray] = []
        self.examined: List[Tuple[str, ...]] = []        # per family: the candidates looked at
        self.completed = False                           # the fallbacks were needed

    @property
    def missing(self) -> int:
        """Return how many elements are still to be found."""
        return self.dimension - len(self.names)

    @property
    def kept(self) -> np.ndarray:
        """Return the directions kept so far, one a row."""
        return self.directions[:len(self.names)]

    def residuals(self, vectors: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        """Return ``vectors`` (6n, k) less their parts along the kept directions, given as ``coefficients``."""
        return vectors - self.kept.T @ coefficients

    def keep(self, name: str, unit: str, vector: np.ndarray, direction: np.ndarray) -> None:
        """Append one element and its unit direction, orthogonal to the directions before it."""
        self.directions[len(self.names)] = direction
        self.names.append(name)
        self.units.append(unit)
        self.columns.append(vector)

    def basis(self) -> InternalBasis:
        """Return the kept elements as a basis, with the plan of the selection."""
        size = self.directions.shape[1]
        matrix = np.column_stack(self.columns) if self.columns else np.zeros((size, 0))
        plan = None
        if not self.completed:
            kept = set(self.names)
            plan = SelectionPlan(tuple(self.examined),
                                 tuple(np.array([name in kept for name in family], bool) for family in self.examined))
        return InternalBasis(matrix, tuple(self.names), tuple(self.units), plan)


def build_internal_basis(
    candidates: Iterable[Candidates],
    null_projector: Callable[[], np.ndarray],
    active: np.ndarray,
    metric: np.ndarray,
    dimension: int,
    rotations: np.ndarray,
) -> InternalBasis:
    """Select the named basis of the null space of ``G`` from ordered candidates.

    Greedy in the candidates' order, in blocks: each block is projected off the kept vectors
    with matrix products, then scanned in order. What the named candidates leave unspanned
    is completed from the projected unit components (``balanced_*``).

    :param candidates: families of candidates in selection order (may be lazy).
    :param null_projector: ``() ->`` the projector (6n, 6n) on the null space of ``G``, orthogonal
        in the metric (built only when the named candidates do not span it).
    :param active: (6n,) mask of the components contacts can apply.
    :param metric: (6n,) diagonal metric ``diag(I, I / l^2)`` on the active components.
    :param dimension: dimension of the null space of ``G``.
    :param rotations: (n, 3, 3) contact frames (axes of the ``balanced_*`` fallbacks).
    :return: the basis.
    """
    selection = _Selection(active.size, dimension, metric)
    families = iter(candidates)
    while selection.missing:
        family = next(families, None)
        if family is None:
            selection.completed = True
            _complete(selection, null_projector(), active, rotations)
            break
        looked = len(family.names)
        for start in range(0, len(family.names), BLOCK):
            looked = _scan(selection, family, start, start + BLOCK)
            if not selection.missing:
                break
        selection.examined.append(family.names[:looked])
    return selection.basis()


def reselect(plan: SelectionPlan, candidates: Iterable[Candidates], metric: np.ndarray) -> Optional[InternalBasis]:
    """Make the selection of ``plan`` on new candidates when the greedy selection would make it again.

    The candidates must have the same names up to the last one looked at (the same pairs, the
    same degenerate ones left out): every name of the families looked at in full, the first ones
    of the family where the selection ended. The part of each candidate independent of the ones kept
    before it is read off one Cholesky factor of the Gram matrix of the kept ones: a kept one
    must keep more than ``BASIS_TOLERANCE`` of its size, a skipped one less, each by a margin
    beyond rounding (``1e-6`` of its squared size); then the basis is the one
    :func:`build_internal_basis` builds (the same columns: the candidates themselves).

    :param plan: the selection on other poses of the same contacts.
    :param candidates: the families of named candidates on the new poses, in selection order.
    :param metric: (6n,) the metric of the sizes.
    :return: the basis, or None when the selection could come out otherwise (build it afresh).
    """
    families, columns, units = iter(candidates), [], []
    for index, examined in enumerate(plan.examined):
        family = next(families, None)
        # the families before the last were looked at in full: they must not have grown
        last = index == len(plan.examined) - 1
        if family is None or (family.names[:len(examined)] if last else family.names) != examined:
            return None
        columns.append(family.vectors[:, :len(examined)])
        units += family.units[:len(examined)]
    kept, index, before = plan.order
    vectors = np.hstack(columns) if columns else np.zeros((metric.size, 0))
    gram = vectors.T @ (metric[:, None] * vectors)
    norms2 = gram.diagonal()
    # LAPACK directly (scipy.linalg.lapack): the checked wrappers cost more than the factorisation here
    factor, info = scipy.linalg.lapack.dpotrf(gram[np.ix_(index, index)], lower=1, clean=1)
    if info != 0:
        return None
    along, info = scipy.linalg.lapack.dtrtrs(factor, gram[index], lower=1)                   # (m, K)
    if info != 0:
        return None
    explained = np.cumsum(along * along, axis=0)[np.maximum(before - 1, 0), np.arange(kept.size)]
    independent = norms2 - np.where(before > 0, explained, 0.0)
    excess = independent - BASIS_TOLERANCE ** 2 * norms2
    margin = 1e-6 * norms2
    if not (np.all(excess[kept] > margin[kept]) and np.all((norms2[~kept] == 0.0) | (excess[~kept] < -margin[~kept]))):
        return None
    return InternalBasis(vectors[:, index], plan.names, tuple(units[i] for i in index), plan)


def _scan(selection: _Selection, family: Candidates, start: int, stop: int) -> int:
    """Keep, in order, the candidates ``start:stop`` of a family whose independent part is large enough.

    The in-order choice runs on the block's Gram matrix less the parts along the kept
    directions (named candidates touch few contacts: the products run on those rows only).
    Its Schur complement after the candidates kept so far holds the squared sizes of what
    remains independent, so a rejection costs nothing and a keep one small rank-1 update.
    The kept ones are orthonormalised together (Cholesky of their Gram).

    :return: how many candidates of the family have been looked at (up to the last kept when
        the null space is then spanned).
    """
    vectors = family.vectors[:, start:stop]
    touched = np.flatnonzero(vectors.any(axis=1))
    local = vectors[touched]
    weighted = selection.metric[touched, None] * local
    norms2 = np.einsum('ij,ij->j', local, weighted)
    coefficients = selection.kept[:, touched] @ weighted
    schur = local.T @ weighted - coefficients.T @ coefficients
    picked: List[int] = []
    looked = start + vectors.shape[1]
    for j in range(vectors.shape[1]):
        if len(picked) == selection.missing:
            looked = start + j
            break
        pivot = schur[j, j]
        if norms2[j] == 0.0 or pivot <= BASIS_TOLERANCE ** 2 * norms2[j]:
            continue
        picked.append(j)
        schur[j + 1:, j + 1:] -= np.outer(schur[j + 1:, j] / pivot, schur[j, j + 1:])
    if not picked:
        return looked
    residuals = selection.residuals(vectors[:, picked], coefficients[:, picked])
    gram = residuals.T @ (selection.metric[:, None] * residuals)
    factor = scipy.linalg.cholesky(gram, lower=True, check_finite=False)
    directions = scipy.linalg.solve_triangular(factor, residuals.T, lower=True, check_finite=False)
    for row, j in enumerate(picked):
        selection.keep(family.names[start + j], family.units[start + j], vectors[:, j], directions[row])
    return looked


def _complete(selection: _Selection, null_projector: np.ndarray, active: np.ndarray, rotations: np.ndarray) -> None:
    """Span what is left with the projected unit components: in order first, then pivoted.

    Each is kept as its part orthogonal to the elements before it, at the size of the projected
    component, so that a fallback never nearly repeats them (the basis stays well conditioned).
    In order, a component is kept when its independent part is large enough, as a named
    candidate; then, one at a time, the most independent one; of equally independent ones
    (within :data:`TIE`), the first. Kept in order or pivoted, a component is the same vector:
    one whose independent part crosses ``BASIS_TOLERANCE`` keeps its name and does not jump.
    """
    pool = _fallback(null_projector, active, rotations)
    metric, vectors = selection.metric, pool.vectors
    norms2 = metric @ (vectors * vectors)
    coefficients = (selection.kept * metric) @ vectors
    sizes2 = norms2 - np.einsum('ij,ij->j', coefficients, coefficients)
    del coefficients

    def add(j: int, scale: float) -> bool:
        vector = vectors[:, j]
        current = selection.residuals(vector, selection.kept @ (metric * vector))
        size = np.sqrt(max(float(metric @ (current * current)), 0.0))
        if size <= 1e-12 * scale:
            return False
        direction = current / size
        # orthogonal to the kept directions: its part in each residual is its part in each vector
        sizes2[:] -= ((metric * direction) @ vectors) ** 2
        sizes2[j] = 0.0
        selection.keep(pool.names[j], pool.units[j], direction * np.sqrt(norms2[j]), direction)
        return True

    for j in range(norms2.size):
        if not selection.missing:
            return
        if norms2[j] != 0.0 and sizes2[j] > BASIS_TOLERANCE ** 2 * norms2[j]:
            add(j, np.sqrt(norms2[j]))
    norms = np.sqrt(norms2)
    while selection.missing:
        sizes = np.sqrt(np.maximum(sizes2, 0.0))
        ratio = np.where(norms > 0, sizes / np.where(norms > 0, norms, 1.0), 0.0)
        # the first of equals: symmetric contact sets tie exactly, and round-off must not choose
        if not add(int(np.flatnonzero(ratio >= (1.0 - TIE) * ratio.max())[0]), norms.max()):
            return
