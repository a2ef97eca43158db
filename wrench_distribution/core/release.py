"""Refused before it starts: whether the contacts carry the load through a change of weights.

docs/theory.md, section 16.6. While weights move from their current values to their targets,
the distribution (16.1) mixes the contact subsets that may be present on the way; every subset
that lacks a contact whose weight falls must still carry the resultant: realise it, with every
unilateral contact pushing, and inside the friction cones. :func:`check_transition` says which
subset cannot and why, before anything moves.
"""
from dataclasses import dataclass
from itertools import product
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from .contact_weights import check_weights, MAX_TRANSITIONS
from .contacts import Contact, ContactArrays, ObjectModel
from .errors import InvalidInputError
from .load_distributor import LoadDistributor
from .options import DistributionOptions, RESIDUAL_TOLERANCE
from .validation import finite_array

#: Why a change of weights is refused (docs/theory.md, 16.6), in the order they are checked.
REASONS = {
    'no_contact_left': 'no contact would remain to carry the object',
    'options': 'the options cannot be met by the remaining contacts',
    'unrealisable': 'the remaining contacts cannot produce the wrench',
    'not_pushing': 'the remaining contacts cannot carry the wrench pushing only',
    'friction': 'the remaining contacts cannot carry the wrench inside their friction cones',
}
#: Relative size (of the resultant, in newtons) below which a pull or a cone excess is rounding.
SLACK = 1e-7


@dataclass(frozen=True)
class TransitionCheck:
    """Whether a change of weights may start.

    :ivar allowed: True when every contact subset on the way carries every resultant.
    :ivar reason: '' or a key of :data:`REASONS`.
    :ivar message: one readable sentence ('' when allowed).
    :ivar contacts: the contact subset at fault (empty when allowed).
    """

    allowed: bool
    reason: str = ''
    message: str = ''
    contacts: Tuple[str, ...] = ()


def transition_subsets(current: np.ndarray, target: np.ndarray) -> List[np.ndarray]:
    """Contact subsets a change of weights makes more likely: those lacking a contact whose weight falls.

    Every other subset on the way holds each contact whose weight falls, so it contains a
    subset present now (the contacts it adds only widen what it can carry).

    :param current: (n,) weights now.
    :param target: (n,) weights requested.
    :return: (n,) masks: the end state's first (when it is one of them), then the largest first.
    :raises InvalidInputError: when more than :data:`MAX_TRANSITIONS` contacts would move.
    """
    always = np.minimum(current, target) == 1.0
    moving = np.flatnonzero((np.maximum(current, target) > 0.0) & ~always)
    if moving.size > MAX_TRANSITIONS:
        raise InvalidInputError(f'at most {MAX_TRANSITIONS} contacts may be in transition at once; '
                                f'this change moves {moving.size}')
    masks = []
    for bits in product((True, False), repeat=moving.size):
        mask = always.copy()
        mask[moving] = bits
        if np.any((target < current) & ~mask):
            masks.append(mask)
    end = target > 0.0
    return sorted(masks, key=lambda m: (not np.array_equal(m, end), -int(m.sum())))


def check_transition(contacts: Union[Sequence[Contact], ContactArrays], object_model: Optional[ObjectModel],
                     options: Optional[DistributionOptions], current, target, wrenches,
                     margin: float = 0.0) -> TransitionCheck:
    """Check a change of contact weights before it starts (docs/theory.md, 16.6).

    :param contacts: every contact (or their :class:`.ContactArrays`).
    :param object_model: the object.
    :param options: distribution options.
    :param current: (n,) weights now; None: all 1.
    :param target: (n,) weights requested.
    :param wrenches: (6,) or (k, 6) resultants the contacts must carry, object frame about the
        centre of mass (the desired wrench now, and whatever else the caller wants held).
    :param margin: friction margin: the cones are checked at ``(1 - margin) mu``.
    :return: the verdict; ``allowed`` is False with the first failing subset and its reason.
    :raises InvalidInputError: on bad contacts, weights or wrenches.
    """
    arrays = contacts if isinstance(contacts, ContactArrays) else ContactArrays.of(tuple(contacts))
    names = list(arrays.names)
    current = check_weights(current, len(names), names)
    target = check_weights(target, len(names), names)
    wrenches = finite_array(np.atleast_2d(np.asarray(wrenches, dtype=float)), (-1, 6), 'wrenches')
    margin = float(finite_array(margin, (), 'friction margin'))
    options = options if options is not None else DistributionOptions()
    for mask in transition_subsets(current, target):
        kept = tuple(name for name, keep in zip(names, mask) if keep)
        lost = [name for name, keep, now in zip(names, mask, current) if now > 0 and not keep]
        verdict = _check_subset(arrays.select(mask), object_model, options.restricted(mask), wrenches, margin)
        if verdict is not None:
            reason, detail = verdict
            carrying = f'with only {", ".join(kept)} carrying' if kept else 'with no contact'
            return TransitionCheck(False, reason, f'refused: {REASONS[reason]} ({carrying}, without '
                                   f'{", ".join(lost)}): {detail}', kept)
    return TransitionCheck(True)


def _check_subset(arrays: ContactArrays, object_model, options, wrenches: np.ndarray,
                  margin: float) -> Optional[Tuple[str, str]]:
    """``(reason, detail)`` of the first check a contact subset fails, or None."""
    if not arrays.names:
        return 'no_contact_left', 'a standing robot or a held object would drop'
    try:
        distributor = LoadDistributor(arrays, object_model, options)
    except InvalidInputError as error:
        return 'options', str(error)
    for wrench in wrenches:
        if distributor.maps.unreproduced(wrench[None])[0] > RESIDUAL_TOLERANCE:
            return 'unrealisable', distributor.maps.unrealisable_message(wrench, arrays, distributor.reference_length)
        programs = LoadPrograms(distributor, arrays, wrench)
        for check in (programs.pushing, lambda: programs.friction(margin)):
            found = check()
            if found is not None:
                return found
    return None


class LoadPrograms:
    """The two conic programs of a contact subset and one resultant (docs/theory.md, 16.6).

    Variables: the applied wrenches on the active components (object axes; torques over the
    reference length ``l0``), in units of the resultant's size (``|f_o| + |t_o| / l0``), and one
    number ``t``. The equality is ``G h = h_o``, its torque rows over ``l0``: every number is
    dimensionless.

    :param distributor: the subset's distributor (its grasp matrix and reference length).
    :param arrays: its contacts (normals, friction, frames).
    :param wrench: the resultant (6,).
    """

    def __init__(self, distributor: LoadDistributor, arrays: ContactArrays, wrench: np.ndarray) -> None:
        length = distributor.reference_length
        self.size = float(np.linalg.norm(wrench[:3]) + np.linalg.norm(wrench[3:]) / length) or 1.0
        self.names = arrays.names
        active = distributor.active_components
        # dimensionless: torque rows over l0, torque variables times l0 (docs/theory.md, section 11)
        per_unit = np.tile(np.r_[np.ones(3), np.full(3, length)], len(arrays.names))[active]
        self.grasp = distributor.grasp_matrix[:, active] * per_unit / np.r_[np.ones(3), np.full(3, length)][:, None]
        self.target = wrench / np.r_[np.ones(3), np.full(3, length)] / self.size
        self.columns = np.flatnonzero(active)
        normals = np.einsum('jab,jb->ja', arrays.rotations, arrays.normals)        # object axes
        self.normal_rows = self._force_rows(normals)                                # (n, k)
        self.mu = arrays.friction
        self.unilateral = ~np.isnan(arrays.friction) | ~arrays.rigid
        tangents = np.array([_tangents(n) for n in normals])                        # (n, 2, 3)
        self.tangent_rows = [self._force_rows(tangents[:, k]) for k in range(2)]

    def _force_rows(self, directions: np.ndarray) -> np.ndarray:
        """Rows (n, k) giving ``direction_j . f_j`` from the variables."""
        rows = np.zeros((directions.shape[0], self.columns.size))
        for j, direction in enumerate(directions):
            rows[j, np.searchsorted(self.columns, 6 * j + np.arange(3))] = direction
        return rows

    def pushing(self) -> Optional[Tuple[str, str]]:
        """Item 4: ``max t`` with every unilateral normal force at least ``t``.

        :return: ``('not_pushing', detail)`` when ``t* < 0``, else None.
        """
        index = np.flatnonzero(self.unilateral)
        if index.size == 0:
            return None
        k = self.columns.size
        rows = np.hstack([-self.normal_rows[index], np.ones((index.size, 1))])   # t - n.f <= 0
        solution = _solve(k, self.grasp, self.target, rows, np.zeros(index.size), [], cap=1.0, sign=-1.0)
        normal = self.normal_rows[index] @ solution[:k]
        if solution[k] >= -SLACK:
            return None
        pulling = [f'{self.names[j]} by {-value * self.size:.4g} N' for j, value in zip(index, normal)
                   if value < -SLACK]
        return 'not_pushing', (f'the best distribution still pulls on {", ".join(pulling)} (the centre of '
                               'mass, or the line of the load, is outside their support)')

    def friction(self, margin: float) -> Optional[Tuple[str, str]]:
        """Item 5: ``min t`` with ``|f_t,j| <= (1 - margin) mu_j n_j . f_j + t`` at every cone.

        :param margin: friction margin in ``[0, 1)``.
        :return: ``('friction', detail)`` when ``t* > 0``, else None.
        """
        cones = np.flatnonzero(~np.isnan(self.mu))
        if cones.size == 0:
            return None
        k = self.columns.size
        blocks = []
        for j in cones:
            top = np.r_[-(1.0 - margin) * self.mu[j] * self.normal_rows[j], -1.0]
            blocks.append(np.vstack([top, np.r_[-self.tangent_rows[0][j], 0.0], np.r_[-self.tangent_rows[1][j], 0.0]]))
        points = np.flatnonzero(np.isnan(self.mu) & self.unilateral)
        rows = np.hstack([-self.normal_rows[points], np.zeros((points.size, 1))])   # n.f >= 0
        solution = _solve(k, self.grasp, self.target, rows, np.zeros(points.size), blocks, cap=1.0, sign=1.0)
        if solution[k] <= SLACK:
            return None
        forces = solution[:k]
        excess = (np.hypot(self.tangent_rows[0] @ forces, self.tangent_rows[1] @ forces)
                  - (1.0 - margin) * np.nan_to_num(self.mu) * (self.normal_rows @ forces))
        tight = [self.names[j] for j in cones if excess[j] > solution[k] * (1.0 - 1e-3)]
        return 'friction', (f'no distribution keeps {", ".join(tight)} inside the friction cone at margin '
                            f'{margin:g}: the best still needs {solution[k] * self.size:.4g} N more tangential '
                            'force than friction allows there')


def _tangents(normal: np.ndarray) -> np.ndarray:
    """(2, 3) orthonormal directions across a unit normal."""
    helper = np.eye(3)[int(np.argmin(np.abs(normal)))]
    first = np.cross(normal, helper)
    first /= np.linalg.norm(first)
    return np.vstack([first, np.cross(normal, first)])


def _solve(k: int, grasp: np.ndarray, target: np.ndarray, rows: np.ndarray, bounds: np.ndarray,
           cones: list, cap: float, sign: float) -> np.ndarray:
    """Optimise ``sign * t`` over ``(h, t)``: ``G h = target``, ``rows x <= bounds``, the 3-cones.

    ``t`` is kept from running away in the direction it is optimised (at most ``cap`` from 0; the
    resultant's size is 1 and only its sign matters).

    :return: the solution ``(h, t)``.
    """
    import clarabel  # lazy, as in friction.py: only these checks and auto mode need it
    from scipy import sparse
    n = k + 1
    equality = np.hstack([grasp, np.zeros((6, 1))])
    box = np.zeros((1, n))
    box[0, k] = -sign                                       # -sign t <= cap
    matrix = np.vstack([equality, rows, box] + cones)
    vector = np.r_[target, bounds, cap, np.zeros(3 * len(cones))]
    kinds = [clarabel.ZeroConeT(6), clarabel.NonnegativeConeT(rows.shape[0] + 1)] + \
        [clarabel.SecondOrderConeT(3) for _ in cones]
    objective = np.zeros(n)
    objective[k] = sign
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    solver = clarabel.DefaultSolver(sparse.csc_matrix((n, n)), objective, sparse.csc_matrix(matrix), vector,
                                    kinds, settings)
    result = solver.solve()
    if str(result.status) not in ('Solved', 'AlmostSolved'):
        raise InvalidInputError(f'the load check could not be solved ({result.status})')
    return np.array(result.x)
