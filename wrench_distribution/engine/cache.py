"""Contact poses and weights -> cached solver: rebuilt only when the contacts move or the weights change (no ROS)."""
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.core import Contact
from wrench_distribution.core.codec import format_numbers
from wrench_distribution.core.contact_weights import check_weights, subset_mixture
from wrench_distribution.core.contacts import ContactLayout
from wrench_distribution.core.safe_load import MAX_ABS
from wrench_distribution.core.spatial import far_from_zero, normalize, same_poses, unusable_quaternions
from .solver import WeightedSolver
from .status import regime_word


def check_poses(positions, quaternions, names: Sequence[str], missing_ok: bool = False) -> tuple:
    """Check contact poses before a solver is built from them.

    :param positions: (n, 3) contact positions.
    :param quaternions: (n, 4) contact orientations ``[qx, qy, qz, qw]``, any scale.
    :param names: effector names (n).
    :param missing_ok: accept a pose with a NaN as *missing* (a released contact's: the
        whole row is kept NaN); Inf is refused all the same.
    :return: ``(positions, quaternions)`` as float arrays.
    :raises ValueError: wrong count, NaN (unless missing) or Inf, out of range, zero quaternion.
    """
    positions = np.asarray(positions, dtype=float).reshape(-1, 3)
    quaternions = np.asarray(quaternions, dtype=float).reshape(-1, 4)
    if positions.shape[0] != len(names) or quaternions.shape[0] != len(names):
        released = "; a released contact's may be NaN" if missing_ok else ''
        raise ValueError(f'expected {len(names)} contact poses (one per effector: '
                         f'{", ".join(names)}{released}), got {positions.shape[0]}')
    # the usual set in one reduction each: NaN and Inf fail the comparison (the checks below name them)
    if (float(np.abs(positions).max(initial=0.0)) <= MAX_ABS and float(np.abs(quaternions).max(initial=0.0)) <= MAX_ABS
            and far_from_zero(quaternions)):
        return positions, quaternions
    if np.isfinite(positions).all() and np.isfinite(quaternions).all():
        known_positions, known_quaternions = positions, quaternions          # every contact has a pose
    else:
        missing = missing_rows(positions, quaternions)
        if (missing.any() and not missing_ok) or np.isinf(positions).any() or np.isinf(quaternions).any():
            raise ValueError('contact poses contain NaN or Inf')
        positions, quaternions = positions.copy(), quaternions.copy()
        positions[missing], quaternions[missing] = np.nan, np.nan
        known_positions, known_quaternions = positions[~missing], quaternions[~missing]
    far = float(np.abs(known_positions).max(initial=0.0))
    if far > MAX_ABS or float(np.abs(known_quaternions).max(initial=0.0)) > MAX_ABS:
        raise ValueError(f'contact pose coordinate {far:.6g} is out of range (|x| <= '
                         f'{MAX_ABS:g})')
    if np.any(unusable_quaternions(known_quaternions)):
        raise ValueError('contact orientation quaternion is zero')
    return positions, quaternions


def missing_rows(positions: np.ndarray, quaternions: np.ndarray) -> np.ndarray:
    """Return the (n,) contacts whose pose holds a NaN (no pose: a released contact may have none)."""
    return np.isnan(positions).any(axis=1) | np.isnan(quaternions).any(axis=1)


class DistributorCache:
    """Keeps one solver (:class:`.solver.WeightedSolver`) per contact configuration and weights.

    A released contact (weight 0) is out of the solve: its pose may be missing (NaN), and its
    moves rebuild nothing; the latest pose it had is the one it returns with.

    :param names: effector names.
    :param types: contact types, one per effector.
    :param object_model: core ``ObjectModel``.
    :param options: core ``DistributionOptions``.
    :param tolerance: poses closer than this (m, and ``1 - |q1.q2|``) reuse the solver.
    :param contact_extras: extra ``Contact`` keyword arguments per effector, or None.
    """

    def __init__(self, names: Sequence[str], types: Sequence[str], object_model, options,
                 tolerance: float = 1e-6, contact_extras: Optional[list] = None) -> None:
        self.names = list(names)
        self.types = list(types)
        self.object_model = object_model
        self.options = options
        self.tolerance = float(tolerance)
        n = len(self.names)
        #: The poses and weights of the solver in force (None before the first).
        self.positions: Optional[np.ndarray] = None
        self.quaternions: Optional[np.ndarray] = None
        self.weights = np.ones(n)
        self.distributor: Optional[WeightedSolver] = None
        #: Extra ``Contact`` keyword arguments per effector (friction, normal), or None.
        self.contact_extras: Optional[list] = contact_extras
        extras = contact_extras or [{}] * n
        self.layout = ContactLayout([Contact(name=e, type=t, **x) for e, t, x in
                                     zip(self.names, self.types, extras)])
        #: The latest pose of each contact (NaN until one came): a returning contact's.
        self.known = np.full((n, 7), np.nan)
        self._built_on: Optional[np.ndarray] = None  # the ``known`` the solver in force was built on
        self._corners: dict = {}  # mask bytes -> the solver of that contact subset at these poses

    def same_poses(self, positions: np.ndarray, quaternions: np.ndarray) -> bool:
        """Whether the live contacts' poses equal the solver's within the tolerance.

        :param positions: (n,3).
        :param quaternions: (n,4), any scale and sign.
        :return: True when the cached solver can be reused.
        """
        if self.positions is None:
            return False
        live = self.weights > 0.0
        return same_poses(positions[live], quaternions[live], self.positions[live],
                          self.quaternions[live], self.tolerance)

    def update(self, positions, quaternions, options=None, weights=None) -> bool:
        """Rebuild the solver if the poses, the options or the weights changed.

        :param positions: (n,3) contact positions in the object frame (NaN rows: no pose).
        :param quaternions: (n,4) contact orientations ``[qx,qy,qz,qw]``.
        :param options: new ``DistributionOptions``, or None to keep the current ones.
        :param weights: (n,) contact weights, or None to keep the current ones.
        :return: True when a new solver was built.
        :raises ValueError: (core errors) when the contacts are invalid, or a contact of
            positive weight has no pose; the cache is then left unchanged.
        """
        positions, quaternions = check_poses(positions, quaternions, self.names, missing_ok=True)
        weights = self.weights if weights is None else check_weights(weights, len(self.names), self.names)
        known = np.concatenate([positions, quaternions], axis=1)
        missing = np.isnan(known).any(axis=1)
        self._require_poses(missing, weights)
        if missing.any():
            known[missing] = self.known[missing]
        return self._apply(known, options, weights)

    def _require_poses(self, missing: np.ndarray, weights: np.ndarray) -> None:
        """Raise ValueError when a contact of positive weight has no pose (``missing``, (n,))."""
        absent = (weights > 0) & missing
        if absent.any():
            raise ValueError(f'no pose of {", ".join(np.array(self.names)[absent])}, whose weight is above 0 '
                             '(only a released contact may have none)')

    def _apply(self, known: np.ndarray, options, weights: np.ndarray) -> bool:
        """Rebuild the solver on the latest poses ``known`` (n, 7) if they, the options or the weights changed."""
        previous, self.known = self.known, known
        positions, quaternions = self.latest()
        # every contact's poses, released ones too (the very poses of the solver in force: a ramp's tick)
        same = known is self._built_on or self.positions is not None and same_poses(
            positions, quaternions, self.positions, self.quaternions, self.tolerance)
        unchanged = same or self.same_poses(positions, quaternions)  # the live contacts' poses
        if options is None and unchanged and np.array_equal(weights, self.weights):
            return False
        opts = self.options if options is None else options
        try:
            dist = self._build(positions, quaternions, options, weights, same)
        except ValueError:
            self.known = previous  # refused: nothing of these poses is kept
            raise
        if options is not None or not same:
            self._corners = {}  # a released contact moved too: the subsets it returns into are new
            self.positions = positions.copy()
            self.quaternions = normalize(quaternions)
        self.distributor = dist
        self.options = opts
        self.weights = weights.copy()
        self._built_on = known
        return True

    def _build(self, positions: np.ndarray, quaternions: np.ndarray, options, weights: np.ndarray,
               same: bool) -> WeightedSolver:
        """Return the solver at these poses and weights: the per-tick update of the one in force when it can.

        The poses are :meth:`latest`'s, checked by :func:`check_poses` when they came: the
        contacts' arrays do not check them again.

        :param same: the poses equal those of the solver in force (within the tolerance): its
            maps and named basis are kept, only the weights change.
        :raises ValueError: when the core cannot build it.
        """
        try:
            with np.errstate(over='raise', invalid='raise'):  # overflow refuses these poses
                if options is None and self.distributor is not None:
                    return self.distributor.moved(None if same else self.layout.arrays(positions, quaternions, True),
                                                  weights)
                opts = self.options if options is None else options
                return WeightedSolver(self.layout.arrays(positions, quaternions, True), self.object_model, opts,
                                      weights)
        except (FloatingPointError, np.linalg.LinAlgError) as e:
            raise ValueError(f'the core cannot build a solver for these poses ({e})') from None

    def corners(self) -> list:
        """Return the contact subsets the weights mix (eq. 16.1): ``[(probability, solver)]``.

        One term, the solver itself, when no contact is in transition; else one solver per subset
        (its contacts at full weight), kept while the poses stay (a ramp reuses them).
        """
        weights = self.weights
        if not ((weights > 0.0) & (weights < 1.0)).any():
            return [(1.0, self.distributor)]
        masks, probabilities = subset_mixture(weights)
        out = []
        for mask, probability in zip(masks, probabilities):
            key = mask.tobytes()
            if key not in self._corners:
                self._corners[key] = WeightedSolver(self.layout.arrays(self.positions, self.quaternions),
                                                    self.object_model, self.options, mask.astype(float))
            out.append((float(probability), self._corners[key]))
        return out

    def reweigh(self, weights) -> bool:
        """Rebuild the solver at other weights on the latest poses (:meth:`update`).

        :param weights: (n,) contact weights.
        :return: True when a new solver was built.
        :raises ValueError: as :meth:`update`.
        """
        weights = check_weights(weights, len(self.names), self.names)
        self._require_poses(np.isnan(self.known[:, 0]), weights)
        return self._apply(self.known, None, weights)

    def weigh(self, weights) -> bool:
        """Use other weights from now on: before any pose, for the first solver; after, as :meth:`reweigh`.

        :param weights: (n,) contact weights in ``[0, 1]``, not all 0.
        :return: True when a new solver was built.
        :raises ValueError: bad weights, every weight 0, or as :meth:`update` (the weights then stay).
        """
        weights = check_weights(weights, len(self.names), self.names)
        if not weights.any():
            raise ValueError('every weight 0: no contact would carry the object')
        if self.distributor is None:
            self.weights = weights
            return False
        return self.reweigh(weights)

    def latest(self) -> tuple:
        """Return the latest pose of every contact: ``(positions (n, 3), quaternions (n, 4))``.

        A contact never seen (released from the start) is at the origin, unrotated: it is out of
        the solve until a pose of it comes.
        """
        known = self.known
        if not np.isnan(known[:, 0]).any():  # every contact has a pose (a pose is NaN whole or not at all)
            return known[:, :3], known[:, 3:]
        return (np.nan_to_num(known[:, :3]),
                np.where(np.isnan(known[:, 3:]), [0.0, 0.0, 0.0, 1.0], known[:, 3:]))

    def adopt_options(self, options, distributor: Optional[WeightedSolver] = None) -> None:
        """Use new options from now on, with the solver already built for them.

        :param options: the accepted ``DistributionOptions``.
        :param distributor: the solver :meth:`try_options` built with them on the current
            poses, or None when no poses are cached yet.
        """
        self.options = options
        self._corners = {}
        if distributor is not None:
            self.distributor = distributor

    def try_options(self, options, weights=None) -> WeightedSolver:
        """Build (without keeping) a solver with other options or weights on the current poses.

        :param options: candidate ``DistributionOptions``.
        :param weights: candidate weights (None: the current ones).
        :return: the solver.
        :raises ValueError: when the core rejects the options.
        """
        return WeightedSolver(self.layout.arrays(self.positions, self.quaternions), self.object_model,
                              options, self.weights if weights is None else weights)

    def solver_at(self, weights: np.ndarray) -> Optional[WeightedSolver]:
        """Return the solver of the latest poses at these weights (the one in force when they are its), or None before any pose.

        :param weights: (n,) checked contact weights, not all 0.
        """
        if self.distributor is None or np.array_equal(self.weights, weights):
            return self.distributor
        return self.try_options(self.options, weights)

    def values(self, internal_load: Optional[np.ndarray] = None) -> dict:
        """Key/values of the diagnostics: the solver's regime, basis, virtual masses.

        :param internal_load: the coordinates in force, shown with them (None: not shown).
        :return: nothing before the first solver.
        """
        dist = self.distributor
        if dist is None:
            return {}
        out = {'regime': dist.regime.name, 'regime_reasons': ', '.join(dist.regime.reasons),
               'regime_message': regime_word(dist.regime), 'basis': ';'.join(dist.basis_names),
               'virtual_masses': format_numbers(dist.virtual_masses)}
        if internal_load is not None:
            out['internal_load'] = format_numbers(internal_load)
        return out
