"""The synthesis maps of one contact configuration: virtual masses, ``G_M+`` and its checks.

Built once per contact configuration by :func:`build_synthesis` (docs/theory.md, sections 2
to 4): the virtual masses (eq. 64 reduced, eq. 59 full, or given), the torque weights, the
virtual inertia, the parametrized pseudo-inverse ``G_M+`` (eq. 81, generalised), and what
the regime report and the per-sample checks need (gain, reproduction error of ``G G_M+``).
:class:`~.load_distributor.LoadDistributor` composes them.
"""
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from .contact_weights import rigid_presence, subset_mixture
from .errors import InvalidInputError, UnrealisableWrenchError
from .grasp import grasp_rank, pseudo_inverse, reference_length, virtual_inertia, VirtualInertia, wrench_scale
from .options import GAIN_LIMIT, HULL_TOLERANCE, MASS_FLOOR, RESIDUAL_TOLERANCE
from .results import Regime
from .virtual_masses import blended_masses, reduced_masses

COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')


@dataclass(frozen=True)
class ContactSet:
    """What the synthesis is built from.

    :param r: (n, 3) contact positions relative to the centre of mass.
    :param rigid: (n,) rigid-contact mask.
    :param active: (6n,) mask of the components the contacts can apply.
    :param grasp_matrix: ``G`` (6, 6n).
    :param rotation_blocks: (6n, 6n) contact rotations on the active components.
    :param rank: rank of ``G``.
    :param reference_length: length of the contact set.
    :param object_model: the object's ``ObjectModel``.
    :param options: the ``DistributionOptions``.
    :param contact_weights: (n,) contact weights in ``(0, 1]`` (docs/theory.md, section 15), or
        None for all 1.
    """

    r: np.ndarray
    rigid: np.ndarray
    active: np.ndarray
    grasp_matrix: np.ndarray
    rotation_blocks: np.ndarray
    rank: int
    reference_length: float
    object_model: object
    options: object
    contact_weights: Optional[np.ndarray] = None

    @property
    def in_transition(self) -> bool:
        """Tell whether a contact has a weight below 1 (the maps are then a mixture, eq. 15.2)."""
        return self.contact_weights is not None and bool(np.any(self.contact_weights < 1.0))

    def subset(self, mask: np.ndarray) -> 'ContactSet':
        """Return the contacts where ``mask`` is true, with full weights, as a set of their own.

        :param mask: (n,) booleans.
        :return: the geometry of those contacts (their rank and length decided on them alone).
        """
        rows = np.repeat(mask, 6)
        r, rigid = self.r[mask], self.rigid[mask]
        length = reference_length(r, np.zeros(3))
        return ContactSet(r, rigid, self.active[rows], self.grasp_matrix[:, rows],
                          self.rotation_blocks[np.ix_(rows, rows)], grasp_rank(r, rigid, length), length,
                          self.object_model, self.options.restricted(mask))


@dataclass(frozen=True)
class SynthesisMaps:
    """The linear maps of the synthesis and their checks.

    :param virtual_masses: (n,) the masses the synthesis uses.
    :param weights: (n,) torque weights (rigid contacts only, sum 1).
    :param canonical: the virtual inertia of the canonical masses (``W``, ``N_m``, ``h_m,p``).
    :param virtual_com: the virtual masses' centre, object frame.
    :param pseudo_inverse: ``G_M+`` (6n, 6), object axes about each contact.
    :param pseudo_inverse_contact: ``G_M+`` in the contact frames.
    :param internal_dimension: dimension of ``N(G)``.
    :param check_scale: (6,) scale of the resultant checks.
    :param gain: largest command per unit resultant (unit-consistent metric).
    :param reproduction: scaled ``G G_M+ - I``, or None where it vanishes.
    :param regime: which formulas applied, and why.
    """

    virtual_masses: np.ndarray
    weights: np.ndarray
    canonical: VirtualInertia
    virtual_com: np.ndarray
    pseudo_inverse: np.ndarray
    pseudo_inverse_contact: np.ndarray
    internal_dimension: int
    check_scale: np.ndarray
    gain: float
    reproduction: Optional[np.ndarray]
    regime: Regime

    def unreproduced(self, wrenches: np.ndarray) -> np.ndarray:
        """Relative part of each resultant (k, 6) that ``G G_M+`` does not reproduce (k,)."""
        if self.reproduction is None:
            return np.zeros(wrenches.shape[0])
        scaled = wrenches * self.check_scale
        outside = np.linalg.norm(scaled @ self.reproduction.T, axis=1)
        return outside / np.maximum(np.linalg.norm(scaled, axis=1), 1e-300)

    def check_realisable(self, wrench: np.ndarray, contacts, length: float) -> None:
        """Raise when ``G G_M+`` does not reproduce ``wrench`` (no contact wrenches produce it).

        :param wrench: the resultant (6,).
        :param contacts: the contacts (``names`` and ``types``: a :class:`.ContactArrays`).
        :param length: the contact set's length.
        :raises UnrealisableWrenchError: naming the part the contacts cannot produce.
        """
        if self.unreproduced(wrench[None])[0] > RESIDUAL_TOLERANCE:
            raise UnrealisableWrenchError(self.unrealisable_message(wrench, contacts, length))

    def unrealisable_message(self, wrench: np.ndarray, contacts, length: float) -> str:
        """Say which part of ``wrench`` the contacts cannot produce.

        :param wrench: the resultant (6,).
        :param contacts: the contacts (``names`` and ``types``: a :class:`.ContactArrays`).
        :param length: the contact set's length.
        :return: the message.
        """
        scale = self.check_scale
        missing = (self.reproduction @ (wrench * scale)) / scale
        detail = ', '.join(f'{c}={-e:.6g}' for c, e in zip(COMPONENTS, missing)
                           if abs(e) > 1e-9 * np.abs(wrench).max())
        return (f'the wrench {np.round(wrench, 9).tolist()} cannot be produced by contacts '
                f'{", ".join(contacts.names)} ({", ".join(contacts.types)}): '
                f'the part they cannot produce is {detail}. Point contacts on one line (to within '
                f'{length:.3g} x 1e-6) cannot produce a torque about that line.')


def build_synthesis(g: ContactSet) -> SynthesisMaps:
    """Build the synthesis maps of one contact configuration.

    :param g: the geometry.
    :return: the maps.
    :raises InvalidInputError: on options the contacts cannot take.
    """
    if g.in_transition:
        return mixed_synthesis(g)
    masses, method, reasons = virtual_masses(g.r, g.object_model, g.options.torque_share, g.options.virtual_masses)
    share = g.options.torque_share
    if not g.rigid.any() and share > 0:
        reasons.append('torque_share_without_rigid_contacts')
        share = 0.0
    weights = torque_weights(g)
    # W, N_m and h_m,p come from the canonical masses of the paper's particular solution
    # (section VI-E), whatever masses the synthesis uses (docs/theory.md, section 5).
    canonical_masses = masses if isinstance(g.options.virtual_masses, str) else \
        virtual_masses(g.r, g.object_model, g.options.torque_share, 'auto')[0]
    spread = float(np.sqrt(np.mean(np.sum(g.r * g.r, axis=1))))
    canonical = virtual_inertia(canonical_masses, g.r, g.rigid, spread)
    inertia = canonical if canonical_masses is masses else virtual_inertia(masses, g.r, g.rigid, spread)
    if inertia.collinear and share < 1.0:
        reasons.append('collinear_contacts')
    gm = pseudo_inverse(inertia, share, weights, g.rigid)
    if g.rank == 6:
        # iterative refinement: G G_M+ = I to rounding even where J_f is ill-conditioned
        # (nearly collinear point contacts); a change of the order of that rounding
        for _ in range(2):
            gm = gm + gm @ (np.eye(6) - g.grasp_matrix @ gm)
    return _finish(g, gm, masses, weights, canonical, inertia.com, reasons, method)


def mixed_synthesis(g: ContactSet) -> SynthesisMaps:
    """Synthesis maps of contacts in transition: the mixture over contact subsets (eq. 15.2).

    Each subset ``T`` of positive probability gets its own maps (as if the others were not
    there); ``G_M+`` is their mixture, row by row, and so are the virtual masses and centre.

    :param g: the geometry, some contact weight below 1.
    :return: the maps.
    :raises InvalidInputError: on options a subset cannot take.
    """
    n = len(g.rigid)
    gm, masses, canonical_masses, com = np.zeros((6 * n, 6)), np.zeros(n), np.zeros(n), np.zeros(3)
    reasons: list = []
    for mask, probability in zip(*subset_mixture(g.contact_weights)):
        vertex = build_synthesis(g.subset(mask))
        gm[np.repeat(mask, 6)] += probability * vertex.pseudo_inverse
        masses[mask] += probability * vertex.virtual_masses / vertex.virtual_masses.sum()
        canonical_masses[mask] += probability * vertex.canonical.masses / vertex.canonical.masses.sum()
        com += probability * (vertex.virtual_com - np.array(g.object_model.com))
        reasons.extend(r for r in vertex.regime.reasons if r != 'ill_conditioned_grasp')
    total = float(g.contact_weights.sum())
    weights, presence = contact_torque_weights(g, torque_weights(g))
    spread = float(np.sqrt(np.mean(np.sum(g.r * g.r, axis=1))))
    canonical = virtual_inertia(canonical_masses * total, g.r, g.rigid, spread, g.contact_weights, presence)
    return _finish(g, gm, masses * total, weights, canonical, com, reasons + ['contact_weights'],
                   'a mixture of contact subsets')


def _finish(g: ContactSet, gm: np.ndarray, masses: np.ndarray, weights: np.ndarray, canonical: VirtualInertia,
            com: np.ndarray, reasons: list, method: str) -> SynthesisMaps:
    """Complete the maps: contact-frame ``G_M+``, gain, resultant check and regime."""
    n = len(g.rigid)
    if g.rank < 6:
        reasons.append('rank_deficient_grasp')
    details: dict = {}
    if g.in_transition:
        details['contact_weights'] = 'weights ' + ', '.join(f'{w:.4g}' for w in g.contact_weights)
    scaled = (wrench_scale(n, g.reference_length)[:, None] * gm) / \
        wrench_scale(1, g.reference_length)[None, :]
    gain = float(np.linalg.svd(scaled, compute_uv=False)[0])
    if gain > GAIN_LIMIT:
        reasons.append('ill_conditioned_grasp')
        details['ill_conditioned_grasp'] = f'command gain {gain:.4g} (limit {GAIN_LIMIT:g})'
    # resultants are checked with the lever of the centre of mass included, so that the
    # rounding of large commands far from it does not read as a missing torque
    scale = wrench_scale(1, g.reference_length + float(np.linalg.norm(g.r.mean(axis=0))))
    error = scale[:, None] * (g.grasp_matrix @ gm - np.eye(6)) / scale[None, :]
    return SynthesisMaps(
        virtual_masses=masses, weights=weights, canonical=canonical,
        virtual_com=com + np.array(g.object_model.com), pseudo_inverse=gm,
        pseudo_inverse_contact=g.rotation_blocks.T @ gm,
        internal_dimension=int(g.active.sum()) - g.rank, check_scale=scale, gain=gain,
        # G G_M+ = I on every resultant G can produce; where it is not, the check runs per sample
        reproduction=error if np.abs(error).max() > 1e-9 else None,
        regime=Regime.from_reasons(reasons, method, details))


def contact_torque_weights(g: ContactSet, base: np.ndarray) -> Tuple[np.ndarray, float]:
    """Torque weights over the contact weights and ``P`` of eq. 15.2 (for ``N_m``, section 15.5).

    :param g: the geometry.
    :param base: (n,) torque weights without contact weights (:func:`torque_weights`).
    :return: ``w'`` (n,), summing to 1 with a rigid contact, and ``P``.
    """
    scaled = base * g.contact_weights
    total = scaled.sum()
    return (scaled / total if total > 0 else scaled), rigid_presence(g.contact_weights, base > 0)


def virtual_masses(r: np.ndarray, model, share: float, choice) -> Tuple[np.ndarray, str, list]:
    """Virtual masses (mean 1), the method that gave them, and the regime's reasons.

    :param r: (n, 3) contact positions relative to the centre of mass.
    :param model: the ``ObjectModel`` (mass and inertia for eq. 59).
    :param share: the torque share (eq. 59 matches ``(1 - share)`` of the inertia).
    :param choice: ``auto``, ``reduced``, ``full`` or the given masses.
    :return: ``(masses (n,), method, reasons)``.
    :raises InvalidInputError: on masses of the wrong count, or ``full`` without a solution.
    """
    n = len(r)
    if not isinstance(choice, str):
        if len(choice) != n:
            raise InvalidInputError(f'virtual_masses has {len(choice)} values for {n} contacts')
        masses = np.array(choice) * n / np.sum(choice)
        spread = np.sqrt(np.mean(np.sum((r - r.mean(0)) ** 2, axis=1))) or 1.0
        off = np.linalg.norm(masses @ r / n) > HULL_TOLERANCE * spread
        low = masses.min() < MASS_FLOOR
        return masses, 'explicit virtual masses', (
            ['explicit_masses_off_com'] if off else []) + (['com_outside_hull'] if low else [])
    if choice == 'full' and (model.mass is None or model.inertia is None):
        raise InvalidInputError('virtual_masses=full needs the object mass and inertia')
    reduced, off_affine, outside = reduced_masses(r, np.zeros(3))
    reasons = (['com_off_affine_hull'] if off_affine else []) + \
        (['com_outside_hull'] if outside else [])
    if choice == 'reduced' or model.mass is None or model.inertia is None:
        return reduced, 'eq. 64', reasons
    masses, weight, residual = blended_masses(r, model.mass, model.inertia_matrix, share, reduced)
    if weight == 1.0 and residual <= RESIDUAL_TOLERANCE:
        return masses, 'eq. 59', []
    if choice == 'full' and weight == 0.0:
        raise InvalidInputError(
            'virtual_masses=full: eq. 59 has no positive solution for these contacts '
            '(it needs about 10 contacts around the centre of mass and torque_share < 1); '
            'use reduced or auto')
    if weight == 1.0:
        method = f'eq. 59 (least squares, relative residual {residual:.2g})'
    else:
        method = 'eq. 64' if weight == 0.0 else f'eqs. 59 and 64 blended ({weight:.3g} of eq. 59)'
    return masses, method, reasons + ['full_inertia_unavailable']


def torque_weights(g: ContactSet) -> np.ndarray:
    """Share of the contact torques per contact (rigid contacts only), sum 1.

    :param g: the geometry.
    :return: (n,) weights (zeros without a rigid contact).
    :raises InvalidInputError: on a wrong count or no positive weight on a rigid contact.
    """
    rigid = g.rigid
    n = len(rigid)
    weights = np.zeros(n)
    if not rigid.any():
        return weights
    given = g.options.torque_weights
    if given is None:
        weights[rigid] = 1.0
    else:
        if len(given) != n:
            raise InvalidInputError(f'torque_weights has {len(given)} values for {n} contacts')
        weights = np.array(given) * rigid
        if weights.sum() <= 0:
            raise InvalidInputError('torque_weights must give a positive weight to a rigid contact')
    return weights / weights.sum()
