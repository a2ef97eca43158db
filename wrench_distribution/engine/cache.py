"""Contact poses -> cached ``LoadDistributor``: rebuilt only when the contacts move (no ROS)."""
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.core import Contact, LoadDistributor
from wrench_distribution.core.codec import format_numbers
from wrench_distribution.core.safe_load import MAX_ABS
from wrench_distribution.core.spatial import normalize, same_poses, unusable_quaternions
from .status import regime_word


def check_poses(positions, quaternions, names: Sequence[str]) -> tuple:
    """Check contact poses before a solver is built from them.

    :param positions: (n, 3) contact positions.
    :param quaternions: (n, 4) contact orientations ``[qx, qy, qz, qw]``, any scale.
    :param names: effector names (n).
    :return: ``(positions, quaternions)`` as float arrays.
    :raises ValueError: wrong count, NaN or Inf, out of range, zero quaternion.
    """
    positions = np.asarray(positions, dtype=float).reshape(-1, 3)
    quaternions = np.asarray(quaternions, dtype=float).reshape(-1, 4)
    if positions.shape[0] != len(names) or quaternions.shape[0] != len(names):
        raise ValueError(f'expected {len(names)} contact poses (one per effector: '
                         f'{", ".join(names)}), got {positions.shape[0]}')
    if not (np.all(np.isfinite(positions)) and np.all(np.isfinite(quaternions))):
        raise ValueError('contact poses contain NaN or Inf')
    far = float(np.abs(positions).max(initial=0.0))
    if far > MAX_ABS or float(np.abs(quaternions).max(initial=0.0)) > MAX_ABS:
        raise ValueError(f'contact pose coordinate {far:.6g} is out of range (|x| <= '
                         f'{MAX_ABS:g})')
    if np.any(unusable_quaternions(quaternions)):
        raise ValueError('contact orientation quaternion is zero')
    return positions, quaternions


class DistributorCache:
    """Keeps one ``LoadDistributor`` per contact configuration.

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
        self.positions: Optional[np.ndarray] = None
        self.quaternions: Optional[np.ndarray] = None
        self.distributor: Optional[LoadDistributor] = None
        #: Extra ``Contact`` keyword arguments per effector (friction, normal), or None.
        self.contact_extras: Optional[list] = contact_extras

    def same_poses(self, positions: np.ndarray, quaternions: np.ndarray) -> bool:
        """Whether poses equal the cached ones within the tolerance.

        :param positions: (n,3).
        :param quaternions: (n,4), any scale and sign.
        :return: True when the cached solver can be reused.
        """
        if self.positions is None:
            return False
        return same_poses(positions, quaternions, self.positions, self.quaternions, self.tolerance)

    def update(self, positions, quaternions, options=None) -> bool:
        """Rebuild the solver if the poses (or options) changed.

        :param positions: (n,3) contact positions in the object frame.
        :param quaternions: (n,4) contact orientations ``[qx,qy,qz,qw]``.
        :param options: new ``DistributionOptions``, or None to keep the current ones.
        :return: True when a new solver was built.
        :raises ValueError: (core errors) when the contacts are invalid; the cache is
            then left unchanged.
        """
        positions, quaternions = check_poses(positions, quaternions, self.names)
        if options is None and self.same_poses(positions, quaternions):
            return False
        opts = self.options if options is None else options
        contacts = self._contacts(positions, quaternions)
        try:
            with np.errstate(over='raise', invalid='raise'):  # overflow refuses these poses
                dist = LoadDistributor(contacts, self.object_model, opts)
        except (FloatingPointError, np.linalg.LinAlgError) as e:
            raise ValueError(f'the core cannot build a solver for these poses ({e})') from None
        self.distributor = dist
        self.options = opts
        self.positions = positions.copy()
        self.quaternions = normalize(quaternions)
        return True

    def adopt_options(self, options, distributor: Optional[LoadDistributor] = None) -> None:
        """Use new options from now on, with the solver already built for them.

        :param options: the accepted ``DistributionOptions``.
        :param distributor: the solver :meth:`try_options` built with them on the current
            poses, or None when no poses are cached yet.
        """
        self.options = options
        if distributor is not None:
            self.distributor = distributor

    def try_options(self, options) -> LoadDistributor:
        """Build (without keeping) a solver with other options on the current poses.

        :param options: candidate ``DistributionOptions``.
        :return: the solver.
        :raises ValueError: when the core rejects the options.
        """
        return LoadDistributor(self._contacts(self.positions, self.quaternions),
                               self.object_model, options)

    def _contacts(self, positions, quaternions) -> list:
        extras = self.contact_extras or [{}] * len(self.names)
        return [Contact(name=n, type=t, position=tuple(p), orientation=tuple(q), **x)
                for n, t, p, q, x in zip(self.names, self.types, positions, quaternions, extras)]

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
