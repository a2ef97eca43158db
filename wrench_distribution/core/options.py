"""Options of the distribution and the numerical tolerances behind the regimes."""
from dataclasses import dataclass, replace
from typing import Optional, Sequence, Union

import numpy as np

from .errors import InvalidInputError
from .validation import finite_vector

VIRTUAL_MASS_MODES = ('auto', 'reduced', 'full')

#: Extent, relative to the largest one, below which a direction of the contact set counts as
#: absent when solving eq. 64 (keeps the virtual masses continuous and well conditioned).
HULL_REGULARISATION = 1e-3
#: Relative distance above which the centre of mass counts as off the contacts' affine hull.
HULL_TOLERANCE = 1e-7
#: Relative residual of the dimensionless eq. 59 up to which its (filtered least-squares) masses
#: are used in full; they fade out linearly into eq. 64's by twice this residual.
FULL_INERTIA_RESIDUAL = 1e-3
#: Smallest admissible virtual mass (masses are normalised to mean 1).
MASS_FLOOR = 1e-2
#: Eigenvalue ratio of the force inertia below which contact torques take over (collinear sets).
COLLINEAR_RATIO = 1e-2
#: Weight of the torque regulariser in a fully singular direction.
TORQUE_REGULARISATION = 1e-3
#: Relative residual of ``G h - h_o`` above which a wrench is unrealisable.
RESIDUAL_TOLERANCE = 1e-6
#: Part of a named basis candidate, relative to its size, that must be independent of the
#: elements kept before it (keeps the coordinates of a physical load of its own size).
BASIS_TOLERANCE = 0.6
#: Command gain (largest command per unit resultant, unit-consistent) above which a grasp is
#: reported as ill-conditioned.
GAIN_LIMIT = 5.0
#: Singular-value ratio (unit-consistent) below which the grasp matrix loses rank.
RANK_TOLERANCE = 1e-6


@dataclass(frozen=True)
class DistributionOptions:
    """How the manipulating wrenches are chosen (Theorem 2 parameters).

    :param torque_share: fraction of the resultant torque produced by contact torques
        (section VI-C), in [0, 1]; 0 is the paper's forces-only convention.
    :param virtual_masses: ``'auto'`` (eq. 59 when mass and inertia are given and it is
        solvable, else eq. 64), ``'reduced'`` (eq. 64), ``'full'`` (eq. 59) or one
        positive number per contact.
    :param torque_weights: share of the contact torques per contact (rigid contacts only),
        normalised to sum 1; None means equal shares.
    :param basis_reference_axis: object-frame axis used to name bending and shear
        directions of the internal-load basis.
    """

    torque_share: float = 0.0
    virtual_masses: Union[str, Sequence[float]] = 'auto'
    torque_weights: Optional[Sequence[float]] = None
    basis_reference_axis: Sequence[float] = (0.0, 0.0, 1.0)

    def __post_init__(self) -> None:
        share = self.torque_share
        if not isinstance(share, (int, float)) or not np.isfinite(share) or not 0 <= share <= 1:
            raise InvalidInputError(f'torque_share must be a number in [0, 1], got {share!r}')
        object.__setattr__(self, 'torque_share', float(share))
        masses = self.virtual_masses
        if isinstance(masses, str):
            if masses not in VIRTUAL_MASS_MODES:
                raise InvalidInputError(
                    f'virtual_masses must be one of {", ".join(VIRTUAL_MASS_MODES)} or a list of '
                    f'positive numbers, got {masses!r}'
                )
        else:
            values = finite_vector(masses, len(masses), 'virtual_masses')
            if values.size == 0 or np.any(values <= 0):
                raise InvalidInputError('explicit virtual_masses must all be positive')
            object.__setattr__(self, 'virtual_masses', tuple(values))
        if self.torque_weights is not None:
            weights = finite_vector(self.torque_weights, len(self.torque_weights), 'torque_weights')
            if np.any(weights < 0):
                raise InvalidInputError('torque_weights must be non-negative')
            object.__setattr__(self, 'torque_weights', tuple(weights))
        axis = finite_vector(self.basis_reference_axis, 3, 'basis_reference_axis')
        if np.linalg.norm(axis) < 1e-9:
            raise InvalidInputError('basis_reference_axis must be a non-zero vector')
        object.__setattr__(self, 'basis_reference_axis', tuple(axis / np.linalg.norm(axis)))

    def restricted(self, mask) -> 'DistributionOptions':
        """Return the options for the contacts where ``mask`` is true (per-contact lists cut to them).

        :param mask: (n,) booleans over the contacts these options were given for.
        :return: the options of that subset (``self`` when nothing is per contact).
        """
        keep = np.flatnonzero(mask)
        changes = {}
        if not isinstance(self.virtual_masses, str):
            changes['virtual_masses'] = tuple(np.asarray(self.virtual_masses)[keep])
        if self.torque_weights is not None:
            changes['torque_weights'] = tuple(np.asarray(self.torque_weights)[keep])
        return replace(self, **changes) if changes else self
