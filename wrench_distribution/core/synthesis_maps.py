"""The synthesis maps of one contact configuration: virtual masses, ``G_M+`` and its checks.

Built once per contact configuration by :func:`build_synthesis` (docs/theory.md, sections 2
to 4 and 15): the virtual masses (eq. 64 reduced, eq. 59 full, or given), the torque weights,
the virtual inertia, the parametrized pseudo-inverse ``G_M+`` (eq. 81, generalised), and what
the per-sample checks need (the reproduction error of ``G G_M+``); the gain and the regime are
computed on first access. Contacts in transition (a weight below 1) get the mixture of the maps
of their contact subsets, all subsets computed at once (eq. 16.1).
:class:`~.load_distributor.LoadDistributor` composes them.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
import math
from typing import Callable, List, Optional, Tuple

import numpy as np

from .compiled import kernel
from .contact_weights import rigid_presence, subset_mixture
from .errors import InvalidInputError, UnrealisableWrenchError
from .grasp import pseudo_inverses, virtual_inertia, virtual_inertias, VirtualInertia, wrench_scale
from .options import GAIN_LIMIT, HULL_TOLERANCE, MASS_FLOOR, RESIDUAL_TOLERANCE
from .results import Regime
from .virtual_masses import (blended_masses, reduced_mass_flags, reduced_masses, subset_reduced_masses,
                             SubsetGeometry)

COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
_EYE6 = np.eye(6)
#: Largest scaled ``|G G_M+ - I|`` taken as reproduction to rounding (no refinement, no check per sample).
REPRODUCED = 1e-14


@dataclass(frozen=True)
class ContactSet:
    """What the synthesis is built from.

    :param r: (n, 3) contact positions relative to the centre of mass.
    :param rigid: (n,) rigid-contact mask.
    :param active: (6n,) mask of the components the contacts can apply.
    :param grasp_matrix: ``G`` (6, 6n).
    :param rotations: (n, 3, 3) contact frames in the object frame.
    :param object_model: the object's ``ObjectModel``.
    :param options: the ``DistributionOptions``.
    :param contact_weights: (n,) contact weights in ``(0, 1]`` (docs/theory.md, section 16), or
        None for all 1.
    :param any_rigid: whether some contact is rigid.
    :param active_count: the number of active components.
    """

    r: np.ndarray
    rigid: np.ndarray
    active: np.ndarray
    grasp_matrix: np.ndarray
    rotations: np.ndarray
    object_model: object
    options: object
    contact_weights: Optional[np.ndarray] = None
    any_rigid: bool = True
    active_count: int = 0

    @property
    def in_transition(self) -> bool:
        """Tell whether a contact has a weight below 1 (the maps are then a mixture, eq. 16.1)."""
        return self.contact_weights is not None and min(self.contact_weights.tolist()) < 1.0


@dataclass(frozen=True)
class SubsetMaps:
    """The maps of V contact subsets of one contact set (:func:`subset_maps`).

    :param pseudo_inverse: (V, 6n, 6) ``G_M+`` of each subset (zero rows outside it).
    :param masses: (V, n) virtual masses, each summing to its subset's size.
    :param counts: (V,) the subsets' sizes.
    :param com: (V, 3) virtual centres relative to the centre of mass.
    :param centroid: (V, 3) the contacts' centroids relative to the centre of mass.
    :param ranks: (V,) ranks of ``G``.
    :param lengths: (V,) reference lengths.
    :param explain: ``() -> (methods, reasons)``: how each subset's masses were obtained and its
        regime reasons (computed when the regime is asked for).
    :param masks: (V, n) the subsets.
    :param reproduced: every subset's ``G G_M+ = I`` to rounding (:func:`subset_maps`).
    """

    pseudo_inverse: np.ndarray
    masses: np.ndarray
    counts: np.ndarray
    com: np.ndarray
    centroid: np.ndarray
    ranks: np.ndarray
    lengths: np.ndarray
    explain: Callable[[], Tuple[List[str], List[List[str]]]]
    masks: np.ndarray
    reproduced: bool = False

    def select(self, masks: np.ndarray) -> Optional['SubsetMaps']:
        """Return the maps of other subsets of the same contacts at the same poses, if all are here.

        :param masks: (W, n) the subsets wanted.
        :return: their maps (the same numbers: nothing is recomputed), or None when one is missing.
        """
        if masks is self.masks:
            return self
        index = {row.tobytes(): k for k, row in enumerate(self.masks)}
        rows = [index.get(row.tobytes()) for row in masks]
        if None in rows:
            return None
        explain = self.explain

        def chosen() -> Tuple[List[str], List[List[str]]]:
            methods, reasons = explain()
            return [methods[k] for k in rows], [reasons[k] for k in rows]

        return SubsetMaps(self.pseudo_inverse[rows], self.masses[rows], self.counts[rows], self.com[rows],
                          self.centroid[rows], self.ranks[rows], self.lengths[rows], chosen, masks, self.reproduced)


class SynthesisMaps:
    """The linear maps of the synthesis and their checks.

    :param g: the geometry.
    :param subsets: the maps of the contact subsets mixed (one without transition).
    :param probabilities: their probabilities (eq. 16.1).
    :ivar pseudo_inverse: ``G_M+`` (6n, 6), object axes about each contact.
    :ivar pseudo_inverse_contact: ``G_M+`` in the contact frames.
    :ivar rank: rank of ``G``.
    :ivar reference_length: length of the contact set (independent of virtual masses).
    :ivar internal_dimension: dimension of ``N(G)``.
    :ivar check_scale: (6,) scale of the resultant checks.
    :ivar reproduction: scaled ``G G_M+(T) - I`` (k, 6, 6) of the k subsets ``T`` of positive
        probability where it does not vanish (the set itself without transition), or None.
    """

    def __init__(self, g: ContactSet, subsets: SubsetMaps, probabilities: np.ndarray) -> None:
        self._g, self._subsets = g, subsets
        self._mixed = mixed = probabilities.size > 1 or g.in_transition
        self.pseudo_inverse, self.pseudo_inverse_contact = _mixed_maps(probabilities, subsets.pseudo_inverse,
                                                                       g.rotations, mixed)
        # the first subset is the set itself (subset_mixture)
        self.rank = int(subsets.ranks[0])
        self.reference_length = float(subsets.lengths[0])
        self.internal_dimension = (g.active_count or int(g.active.sum())) - self.rank
        lever = subsets.centroid[0]
        self.check_scale = scale = check_scale(self.reference_length, lever)
        self._probabilities = probabilities
        # G G_M+ = I on every resultant G can produce; where it is not, the check runs per sample,
        # on each subset of positive probability (16.1 (a)): a mixture of maps that reproduce reproduces
        self.reproduction = None
        self._unreproducing: Optional[np.ndarray] = None  # the masks of the subsets checked
        if not subsets.reproduced:
            errors = g.grasp_matrix @ subsets.pseudo_inverse       # (V, 6, 6), scaled below
            errors -= _EYE6
            errors *= scale[:, None]
            errors /= scale
            kept = (np.abs(errors).max(axis=(1, 2)) > 1e-9) & (probabilities > 0.0)
            if kept.any():
                self.reproduction, self._unreproducing = errors[kept], subsets.masks[kept]

    @property
    def subsets(self) -> SubsetMaps:
        """Return the maps of the contact subsets mixed (one without transition)."""
        return self._subsets

    @cached_property
    def virtual_masses(self) -> np.ndarray:
        """Return the (n,) masses the synthesis uses (the mixture's, summing to the sum of the weights)."""
        subsets = self._subsets
        if not self._mixed:
            return subsets.masses[0]
        return float(self._g.contact_weights.sum()) * (self._probabilities / subsets.counts) @ subsets.masses

    @cached_property
    def virtual_com(self) -> np.ndarray:
        """Return the virtual masses' centre, object frame."""
        return self._probabilities @ self._subsets.com + self._g.object_model.com

    @cached_property
    def weights(self) -> np.ndarray:
        """Return the torque weight of each contact: rigid contacts only, summing to 1 (over the contact weights)."""
        return contact_torque_weights(self._g, torque_weights(self._g))[0]

    @cached_property
    def gain(self) -> float:
        """Largest command per unit resultant in the unit-consistent metric (1 for a good grasp)."""
        length = self.reference_length
        scaled = (wrench_scale(len(self._g.rigid), length)[:, None] * self.pseudo_inverse) / wrench_scale(1, length)
        return float(np.linalg.svd(scaled, compute_uv=False)[0])

    @cached_property
    def regime(self) -> Regime:
        """Which formulas applied, and why (the reasons of every subset mixed)."""
        methods, subset_reasons = self._subsets.explain()
        reasons = [reason for subset in subset_reasons for reason in subset]
        details: dict = {}
        if self._mixed:
            reasons.append('contact_weights')
            details['contact_weights'] = 'weights ' + ', '.join(f'{w:.4g}' for w in self._g.contact_weights)
        if self.gain > GAIN_LIMIT:
            reasons.append('ill_conditioned_grasp')
            details['ill_conditioned_grasp'] = f'command gain {self.gain:.4g} (limit {GAIN_LIMIT:g})'
        method = 'a mixture of contact subsets' if self._mixed else methods[0]
        return Regime.from_reasons(reasons, method, details)

    @cached_property
    def canonical(self) -> VirtualInertia:
        """Return the virtual inertia of the canonical masses (``W``, ``N_m``, ``h_m,p``; section 5)."""
        g = self._g
        # the paper's particular solution (section VI-E) whatever masses the synthesis uses
        masses = self.virtual_masses if isinstance(g.options.virtual_masses, str) else \
            weighted_masses(g, 'auto')
        presence = contact_torque_weights(g, torque_weights(g))[1]
        return virtual_inertia(masses, g.r, g.rigid, g.contact_weights, presence)

    def unreproduced(self, wrenches: np.ndarray) -> np.ndarray:
        """Relative part of each resultant (k, 6) that some subset's ``G G_M+`` does not reproduce (k,)."""
        if self.reproduction is None:
            return np.zeros(wrenches.shape[0])
        scaled = wrenches * self.check_scale
        outside = np.linalg.norm(scaled @ self.reproduction.transpose(0, 2, 1), axis=2).max(axis=0)
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
        parts = self.reproduction @ (wrench * scale)                  # (k, 6), one per subset checked
        worst = int(np.argmax(np.linalg.norm(parts, axis=1)))
        missing = parts[worst] / scale
        detail = ', '.join(f'{c}={-e:.6g}' for c, e in zip(COMPONENTS, missing)
                           if abs(e) > 1e-9 * np.abs(wrench).max())
        during = ''
        if self._mixed:
            subset = ', '.join(np.array(contacts.names)[self._unreproducing[worst]].tolist())
            during = (' while some of them are in transition (weights ' + ', '.join(
                f'{w:.4g}' for w in self._g.contact_weights) + '): every contact subset on the way must produce '
                f'it, and {subset} alone cannot')
        return (f'the wrench {np.round(wrench, 9).tolist()} cannot be produced by contacts '
                f'{", ".join(contacts.names)} ({", ".join(contacts.types)}){during}: '
                f'the part they cannot produce is {detail}. Point contacts on one line (to within '
                f'{length:.3g} x 1e-6) cannot produce a torque about that line.')


def build_synthesis(g: ContactSet, previous: Optional[SynthesisMaps] = None) -> SynthesisMaps:
    """Build the synthesis maps of one contact configuration (its subsets' mixture in transition).

    :param g: the geometry.
    :param previous: the maps of the same contacts at the same poses and options with other
        weights, or None: the subsets they hold are taken from them (eq. 16.1: only the
        probabilities depend on the weights).
    :return: the maps.
    :raises InvalidInputError: on options the contacts (or a subset of them) cannot take.
    """
    if g.in_transition:
        masks, probabilities = subset_mixture(g.contact_weights)
    else:
        masks, probabilities = _every_contact(len(g.rigid)), _ONE
    subsets = None if previous is None else previous.subsets.select(masks)
    return SynthesisMaps(g, subsets if subsets is not None else subset_maps(g, masks), probabilities)


_ONE = np.ones(1)
_ONE.setflags(write=False)


@lru_cache(maxsize=64)
def _every_contact(n: int) -> np.ndarray:
    """Return the one subset of every contact, (1, n), read-only (shared)."""
    masks = np.ones((1, n), bool)
    masks.setflags(write=False)
    return masks


def subset_maps(g: ContactSet, masks: np.ndarray) -> SubsetMaps:
    """Build the maps of V contact subsets at once, each as if the other contacts were not there.

    :param g: the geometry.
    :param masks: (V, n) the subsets.
    :return: their maps.
    :raises InvalidInputError: on options a subset cannot take.
    """
    geometry = SubsetGeometry.of(g.r, masks, g.rigid if g.any_rigid else None)
    masses, explain_masses = subset_masses(g, geometry, g.options.virtual_masses)
    rigid, shares, weights = torque_parameters(g, masks)
    inertia = virtual_inertias(masses, g.r, rigid, geometry.counts, geometry.extents.sum(axis=1), 1.0)
    gm = pseudo_inverses(inertia, shares, weights)
    ranks = geometry.ranks
    reproduced = _refine(gm, g.grasp_matrix, ranks, check_scale(geometry.lengths[0], geometry.centroid[0]))

    def explain() -> Tuple[List[str], List[List[str]]]:
        methods, reasons = explain_masses()
        share = g.options.torque_share
        return methods, [reasons[k]
                         + (['torque_share_without_rigid_contacts'] if shares[k] == 0.0 and share > 0 else [])
                         + (['collinear_contacts'] if inertia.collinear[k] and shares[k] < 1.0 else [])
                         + (['rank_deficient_grasp'] if ranks[k] < 6 else []) for k in range(len(masks))]

    return SubsetMaps(gm, masses, geometry.counts, inertia.com, geometry.centroid, ranks, geometry.lengths, explain,
                      masks, reproduced)


def _refine(gm: np.ndarray, grasp: np.ndarray, ranks: np.ndarray, scale: np.ndarray) -> bool:
    """Refine ``G_M+`` (V, 6n, 6) in place where ``G G_M+ = I`` can hold; tell whether it holds to rounding for all.

    Iterative refinement: ``G G_M+ = I`` to rounding even where ``J_f`` is ill-conditioned (nearly
    collinear point contacts); a change of the order of that rounding, not made where the scaled
    residual is already below :data:`REPRODUCED`.

    :param gm: the maps of every subset.
    :param grasp: ``G`` (6, 6n).
    :param ranks: (V,) ranks of ``G`` of the subsets.
    :param scale: (6,) the scale of the resultant checks.
    :return: whether every subset has full rank and reproduces every resultant (then unrefined).
    """
    full_ranks = min(ranks.tolist()) == 6
    if not full_ranks:
        full = ranks == 6
        for _ in range(2):
            gm[full] = gm[full] + gm[full] @ (_EYE6 - grasp @ gm[full])
        return False
    excess, largest = _reproduction_excess(gm, grasp)
    # the scaled entries are those of G G_M+ - I times 1, l or 1 / l
    if largest * max(scale[3], 1.0 / scale[3]) <= REPRODUCED:
        return True
    gm -= gm @ excess
    gm += gm @ (_EYE6 - grasp @ gm)
    return False


@kernel
def _mixed_maps(probabilities: np.ndarray, maps: np.ndarray, rotations: np.ndarray,
                mixed: bool) -> Tuple[np.ndarray, np.ndarray]:
    """Return ``G_M+`` (6n, 6), the subsets' maps mixed (eq. 16.1) or the first, and the same in the contact frames.

    Compiled. The contact frames' map has ``R_i^T`` on the force and the torque rows of each contact.
    """
    size = maps.shape[1]
    mixture, contact = np.empty((size, 6)), np.empty((size, 6))
    for row in range(size):
        for c in range(6):
            if mixed:
                total = 0.0
                for v in range(maps.shape[0]):
                    total += probabilities[v] * maps[v, row, c]
                mixture[row, c] = total
            else:
                mixture[row, c] = maps[0, row, c]
    for block in range(size // 3):
        rotation = rotations[block // 2]
        for a in range(3):
            for c in range(6):
                total = 0.0
                for b in range(3):
                    total += rotation[b, a] * mixture[3 * block + b, c]
                contact[3 * block + a, c] = total
    return mixture, contact


@kernel
def _reproduction_excess(gm: np.ndarray, grasp: np.ndarray) -> Tuple[np.ndarray, float]:
    """Return ``G G_M+ - I`` (V, 6, 6) of every subset and its largest magnitude (NaN if one is NaN; compiled)."""
    excess = np.empty((gm.shape[0], 6, 6))
    largest = 0.0
    for v in range(gm.shape[0]):
        for a in range(6):
            for c in range(6):
                total = 0.0
                for row in range(gm.shape[1]):
                    total += grasp[a, row] * gm[v, row, c]
                if a == c:
                    total -= 1.0
                excess[v, a, c] = total
                magnitude = abs(total)
                if magnitude > largest or magnitude != magnitude:
                    largest = magnitude
    return excess, largest


def check_scale(length: float, lever: np.ndarray) -> np.ndarray:
    """Return the (6,) scale of the resultant checks of a contact set of this length and centroid.

    The lever of the centre of mass is included, so that the rounding of large commands far from it
    does not read as a missing torque.

    :param length: the contact set's reference length.
    :param lever: (3,) its centroid relative to the centre of mass.
    :return: ``[1, 1, 1, 1/l, 1/l, 1/l]``.
    """
    return wrench_scale(1, float(length) + math.sqrt(float(lever.dot(lever))))


def torque_parameters(g: ContactSet, masks: np.ndarray) -> Tuple[Optional[np.ndarray], np.ndarray, np.ndarray]:
    """Rigid contacts, torque shares and torque weights of V contact subsets (eqs. 54 and 16.2).

    :param g: the geometry.
    :param masks: (V, n) the subsets.
    :return: ``rigid`` (V, n), ``shares`` (V,) (0 for a subset without a rigid contact) and
        ``weights`` (V, n) (each row summing to 1 over its rigid contacts, or 0); ``rigid`` and
        ``weights`` are None when no contact is rigid.
    :raises InvalidInputError: when the torque weights give no weight to a subset's rigid contacts.
    """
    if not g.any_rigid:
        return None, np.zeros(len(masks)), None
    given = g.options.torque_weights
    key = (id(masks), g.rigid.tobytes(), g.options.torque_share, None if given is None else tuple(given))
    kept = _TORQUE_PARAMETERS.get(key)
    if kept is not None and kept[0] is masks:
        return kept[1]
    parameters = _torque_parameters(g, masks)
    if not masks.flags.writeable:                    # the shared masks of a weight pattern: kept
        for array in parameters:
            array.setflags(write=False)
        if len(_TORQUE_PARAMETERS) >= 512:
            _TORQUE_PARAMETERS.clear()
        _TORQUE_PARAMETERS[key] = (masks, parameters)
    return parameters


_TORQUE_PARAMETERS: dict = {}


def _torque_parameters(g: ContactSet, masks: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compute :func:`torque_parameters` with a rigid contact."""
    rigid = masks & g.rigid
    carriers = rigid.any(axis=1)
    shares = np.where(carriers, g.options.torque_share, 0.0)
    weights = torque_weights(g) * masks
    sums = weights.sum(axis=1)
    if np.any(carriers & ~(sums > 0)):
        raise InvalidInputError('torque_weights must give a positive weight to a rigid contact')
    return rigid, shares, weights / np.where(sums > 0, sums, 1.0)[:, None]


def subset_masses(g: ContactSet, geometry: SubsetGeometry, choice) -> Tuple[np.ndarray, Callable]:
    """Virtual masses of V contact subsets (each summing to its size), and how they were obtained.

    Eq. 64's masses of every subset at once; eq. 59 (mass and inertia given) and explicit masses
    one subset at a time (:func:`virtual_masses`).

    :param g: the geometry.
    :param geometry: the subsets.
    :param choice: ``auto``, ``reduced``, ``full`` or the given masses (one per contact of ``g``).
    :return: ``masses (V, n)`` and ``() -> (methods, reasons)``, one entry per subset.
    :raises InvalidInputError: as :func:`virtual_masses`.
    """
    model, masks = g.object_model, geometry.masks
    if isinstance(choice, str) and (choice == 'reduced' or (choice == 'auto' and (
            model.mass is None or model.inertia is None))):
        masses = subset_reduced_masses(geometry)

        def explain() -> Tuple[List[str], List[List[str]]]:
            off_affine, outside = reduced_mass_flags(geometry, masses)
            return ['eq. 64'] * len(masks), [(['com_off_affine_hull'] if off else []) + (
                ['com_outside_hull'] if out else []) for off, out in zip(off_affine, outside)]
        return masses, explain
    masses, methods, reasons = np.zeros(masks.shape), [], []
    for k, mask in enumerate(masks):
        given = choice if isinstance(choice, str) else tuple(np.asarray(choice)[mask])
        masses[k, mask], method, why = virtual_masses(g.r[mask], model, g.options.torque_share, given)
        methods.append(method)
        reasons.append(why)
    return masses, lambda: (methods, [list(why) for why in reasons])


def weighted_masses(g: ContactSet, choice) -> np.ndarray:
    """Virtual masses of the contact set with its weights: the mixture of its subsets' (eq. 16.1).

    :param g: the geometry.
    :param choice: ``auto``, ``reduced``, ``full`` or the given masses.
    :return: (n,) masses summing to the sum of the weights (to ``n`` without them).
    """
    if not g.in_transition:
        return subset_masses(g, SubsetGeometry.of(g.r, np.ones((1, len(g.rigid)), bool)), choice)[0][0]
    masks, probabilities = subset_mixture(g.contact_weights)
    masses = subset_masses(g, SubsetGeometry.of(g.r, masks), choice)[0]
    return float(g.contact_weights.sum()) * (probabilities / masks.sum(axis=1)) @ masses


def contact_torque_weights(g: ContactSet, base: np.ndarray) -> Tuple[np.ndarray, float]:
    """Torque weights over the contact weights and ``P`` of section 16.2 (for ``N_m``).

    :param g: the geometry.
    :param base: (n,) torque weights without contact weights (:func:`torque_weights`).
    :return: ``w'`` (n,), summing to 1 with a rigid contact, and ``P``.
    """
    if g.contact_weights is None:
        return base, 1.0 if g.rigid.any() else 0.0
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
