"""Result records of synthesis and analysis, and the regime report."""
from dataclasses import dataclass
from typing import Tuple

import numpy as np

#: Human-readable meaning of each regime reason.
REASONS = {
    'com_off_affine_hull': (
        'eq. 64 has no solution: the centre of mass is off the affine hull of the contacts; '
        'virtual masses are those of its projection and the resultant is moved there'
    ),
    'com_outside_hull': (
        'the centre of mass (or its projection) is outside the contacts\' convex hull, where eq. 64 '
        'needs negative virtual masses; its offset beyond the contacts\' extent was damped and '
        'the masses kept at least MASS_FLOOR, which moves the virtual centre of mass inside'
    ),
    'explicit_masses_off_com': 'the explicit virtual masses do not satisfy eq. 53',
    'full_inertia_unavailable': (
        'mass and inertia are given but eq. 59 has no positive solution (it needs at least '
        '10 contacts in general position); eq. 64 was used'
    ),
    'collinear_contacts': (
        'the contacts are (nearly) collinear, so the force inertia of eq. 54 is singular; '
        'the torque about their line is carried by the contact torques'
    ),
    'rank_deficient_grasp': (
        'the grasp matrix G has rank < 6 (point contacts on one line): only resultants in its '
        'range can be produced'
    ),
    'torque_share_without_rigid_contacts': 'torque_share > 0 but no contact is rigid; it was set to 0',
}


@dataclass(frozen=True)
class Regime:
    """Which formulas applied.

    :param name: ``'paper'`` when Theorem 2 / eq. 81 applies as printed, else ``'extension'``.
    :param reasons: codes of :data:`REASONS` explaining an extension.
    :param message: one readable sentence.
    """

    name: str
    reasons: Tuple[str, ...]
    message: str

    @staticmethod
    def from_reasons(reasons, method: str) -> 'Regime':
        """Build the report from reason codes.

        :param reasons: iterable of reason codes.
        :param method: how the virtual masses were obtained.
        :return: the regime.
        """
        reasons = tuple(dict.fromkeys(reasons))
        if not reasons:
            return Regime('paper', (), f'Theorem 2, closed form eq. 81 with virtual masses from {method}')
        return Regime('extension', reasons, '; '.join(REASONS[r] for r in reasons))


@dataclass(frozen=True)
class Synthesis:
    """Wrench commands for one desired resultant (see docs/core_api.md)."""

    wrench_contact: np.ndarray
    wrench_object: np.ndarray
    manipulating_object: np.ndarray
    internal_object: np.ndarray
    resultant: np.ndarray
    residual: float
    internal_load: np.ndarray
    regime: Regime


@dataclass(frozen=True)
class BatchSynthesis:
    """Synthesis of k samples: arrays with a leading sample axis."""

    wrench_contact: np.ndarray
    wrench_object: np.ndarray
    resultant: np.ndarray
    residual: np.ndarray
    realisable: np.ndarray


@dataclass(frozen=True)
class Analysis:
    """Decomposition of measured contact wrenches (eq. 80) and the internal-load state."""

    resultant: np.ndarray
    manipulating_contact: np.ndarray
    constraint_contact: np.ndarray
    internal_contact: np.ndarray
    manipulating_object: np.ndarray
    constraint_object: np.ndarray
    internal_object: np.ndarray
    internal_load: np.ndarray
    internal_load_norm: float
    residual: float


@dataclass(frozen=True)
class BatchAnalysis:
    """Analysis of k samples: the fields of :class:`Analysis` with a leading sample axis."""

    resultant: np.ndarray
    manipulating_contact: np.ndarray
    constraint_contact: np.ndarray
    internal_contact: np.ndarray
    manipulating_object: np.ndarray
    constraint_object: np.ndarray
    internal_object: np.ndarray
    internal_load: np.ndarray
    internal_load_norm: np.ndarray
    residual: np.ndarray

    def sample(self, index: int) -> Analysis:
        """One sample as an :class:`Analysis`.

        :param index: sample index.
        :return: the analysis of that sample.
        """
        return Analysis(**{
            name: (float(value[index]) if value.ndim == 1 else value[index])
            for name, value in self.__dict__.items()
        })
