"""The spaces of one contact configuration built on demand: ``N(G)`` named, the read-out, ``N_m``.

- :func:`internal_space`: the named basis ``E`` of ``N(G)`` (docs/theory.md, section 6);
- :func:`read_out`: ``C`` with ``C E = I`` (coordinates of an internal load) and the fused
  analysis matrix (eq. 80 and the resultant in one product);
- :func:`manipulating_set`: the admissible manipulating distributions
  ``h_m,p + K(h_o) sigma`` (eqs. 72-77), for the invariant internal state.

:class:`~.load_distributor.LoadDistributor` builds each once, when first needed.
"""
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import scipy.linalg

from .errors import InvalidInputError
from .grasp import manipulating_maps, null_projector, pseudo_inverse, VirtualInertia, wrench_scale
from .internal_basis import (build_internal_basis, Geometry, handle_vector, named_candidates,
                             reselect, rotate_blocks, SelectionPlan)
from .invariant import invariant_part
from .results import BatchAnalysis
from .validation import finite_array


@dataclass(frozen=True)
class InternalSpace:
    """The named basis ``E`` of ``N(G)``.

    :param names: element names.
    :param units: ``'N'`` or ``'N*m'`` per element.
    :param basis: ``E`` (6n, m), object axes about each contact.
    :param basis_contact: ``E`` in the contact frames.
    :param plan: how the named elements were selected (None: with ``balanced_*`` fallbacks).
    """

    names: Tuple[str, ...]
    units: Tuple[str, ...]
    basis: np.ndarray
    basis_contact: np.ndarray
    plan: Optional[SelectionPlan] = None


@dataclass(frozen=True)
class ReadOut:
    """The linear maps built on ``E``.

    :param coordinates: ``C`` (m, 6n) with ``C E = I``: coordinates of an element of ``N(G)``.
    :param gram: ``E^T W0 E`` in the metric ``W0 = diag(I, I / l^2)``.
    :param analysis: (6n, 12 + 24n + m) fused read-out of contact-frame measurements.
    """

    coordinates: np.ndarray
    gram: np.ndarray
    analysis: np.ndarray


@dataclass(frozen=True)
class ManipulatingSet:
    """The admissible manipulating distributions ``h_m,p + K(h_o) sigma``, ``|sigma| <= 1``.

    :param particular: (6n, 6) canonical ``h_m,p`` map (forces only, canonical masses).
    :param maps: (d, 6n, 6) maps ``h_o -> k_a``.
    :param metric: (6n,) the metric ``W = M*^-1`` of the canonical masses.
    """

    particular: np.ndarray
    maps: np.ndarray
    metric: np.ndarray


def internal_space(geometry: Geometry, grasp_matrix: np.ndarray, metric: np.ndarray,
                   active: np.ndarray, rank: int, dimension: int,
                   plan: Optional[SelectionPlan] = None) -> InternalSpace:
    """Build the named basis of ``N(G)``.

    :param geometry: the contacts' geometry (:class:`~.internal_basis.Geometry`).
    :param grasp_matrix: ``G``.
    :param metric: (6n,) ``diag(I, I / l^2)`` on the active components.
    :param active: (6n,) mask of the components the contacts can apply.
    :param rank: rank of ``G``.
    :param dimension: dimension of ``N(G)``.
    :param plan: the selection on other poses of the same contacts: made again when the greedy
        selection would make it (:func:`~.internal_basis.reselect`), else the basis is built afresh.
    :return: the basis (``balanced_<c>(3)`` named ``balanced_<c>(<name of contact 3>)``).
    """
    basis = None
    if plan is not None and sum(int(kept.sum()) for kept in plan.kept) == dimension:
        basis = reselect(plan, named_candidates(geometry), metric)
    if basis is None:
        basis = build_internal_basis(
            named_candidates(geometry), lambda: null_projector(grasp_matrix, np.where(metric > 0, metric, 1.0), active,
                                                               geometry.length, rank),
            active, metric, dimension, geometry.rotations)
    names = tuple(_contact_name(name, geometry.names) for name in basis.names)
    to_contact = rotate_blocks((basis.matrix * active[:, None]).T, geometry.rotations).T
    return InternalSpace(names, basis.units, basis.matrix, to_contact, basis.plan)


def _contact_name(name: str, names: Sequence[str]) -> str:
    """``balanced_<c>(3)`` -> ``balanced_<c>(<name of contact 3>)``."""
    if name.startswith('balanced_'):
        head, index = name[:-1].split('(')
        return f'{head}({names[int(index)]})'
    return name


def read_out(space: InternalSpace, metric: np.ndarray, grasp_matrix: np.ndarray,
             gm: np.ndarray, rotation_blocks: np.ndarray) -> ReadOut:
    """Build the read-out of internal loads and the fused analysis matrix.

    :param space: the named basis.
    :param metric: (6n,) ``diag(I, I / l^2)`` on the active components.
    :param grasp_matrix: ``G``.
    :param gm: ``G_M+``.
    :param rotation_blocks: (6n, 6n) contact rotations on the active components.
    :return: the read-out.
    """
    e = space.basis
    gram = (e.T * metric) @ e
    if not e.shape[1]:
        coordinates = np.zeros((0, e.shape[0]))
    else:
        # C = (E^T W0 E)^-1 E^T W0 through a QR of the scaled basis (no squared condition number)
        root = np.sqrt(metric)
        q, r = np.linalg.qr(e * root[:, None])
        coordinates = scipy.linalg.solve_triangular(r, q.T) * root[None, :]
    return ReadOut(coordinates, gram, analysis_matrix(coordinates, grasp_matrix, gm,
                                                      rotation_blocks))


def analysis_matrix(coordinates: np.ndarray, grasp_matrix: np.ndarray, gm: np.ndarray,
                    rotation_blocks: np.ndarray) -> np.ndarray:
    """Fused read-out: contact-frame measurements (k, 6n) @ this -> every analysis output."""
    to_object, to_contact = rotation_blocks, rotation_blocks
    resultant = grasp_matrix @ to_object                      # (6, 6n)
    manipulating = gm @ resultant                             # h_m (object axes)
    constraint = manipulating - to_object                     # h_c = h_m - h (eq. 80)
    error = (grasp_matrix @ gm - np.eye(6)) @ resultant       # G h_m - h_o
    return np.hstack([resultant.T, manipulating.T, constraint.T, manipulating.T @ to_contact,
                      constraint.T @ to_contact, -constraint.T @ coordinates.T, error.T])


def manipulating_set(canonical: VirtualInertia, weights: np.ndarray, rigid: np.ndarray,
                     grasp_matrix: np.ndarray, active: np.ndarray, reference_length: float,
                     rank: int) -> ManipulatingSet:
    """Build ``N_m`` of the canonical masses (eqs. 72-77).

    :param canonical: the virtual inertia of the canonical masses.
    :param weights: (n,) torque weights.
    :param rigid: (n,) rigid-contact mask.
    :param grasp_matrix: ``G``.
    :param active: (6n,) mask of the components the contacts can apply.
    :param reference_length: length of the contact set.
    :param rank: rank of ``G``.
    :return: the set.
    """
    n = len(rigid)
    metric = np.tile(np.r_[np.ones(3), np.full(3, 1.0 / canonical.length ** 2)], n) \
        / np.repeat(canonical.masses, 6) * active
    projector = null_projector(grasp_matrix, np.where(metric > 0, metric, 1.0), active,
                               reference_length, rank)
    particular = pseudo_inverse(canonical, 0.0, weights, rigid)
    maps = manipulating_maps(canonical, weights, rigid, projector)
    return ManipulatingSet(particular, maps, metric)


def condition_number(gram: np.ndarray) -> float:
    """Condition number of a basis from its Gram matrix, each element scaled to unit size.

    :param gram: ``E^T W0 E`` (m, m), m >= 1.
    :return: 1 for orthogonal elements, large when elements nearly repeat.
    """
    scale = 1.0 / np.sqrt(np.diag(gram))
    values = np.linalg.eigvalsh(gram * scale[:, None] * scale[None, :])
    return float(np.sqrt(values.max() / values.min()))


def handle_coordinates(space: InternalSpace, coordinates: np.ndarray, geometry: Geometry,
                       handles: Mapping[str, float]) -> np.ndarray:
    """Coordinates in the named basis of physical internal-load handles.

    :param space: the named basis.
    :param coordinates: ``C`` of the read-out.
    :param geometry: the contacts' geometry (handles outside the basis).
    :param handles: mapping like ``{'squeeze(left,right)': 20.0}`` (N or N*m).
    :return: (m,) coordinates.
    :raises InvalidInputError: for an unknown handle or a non-finite value.
    """
    values = np.zeros(len(space.names))
    for key, value in handles.items():
        amount = float(finite_array(value, (), f'internal load {key!r}'))
        key = str(key)
        if key in space.names:
            vector = space.basis[:, space.names.index(key)]
        else:
            vector = handle_vector(geometry, key)
            if vector is None:
                raise InvalidInputError(f'unknown internal-load handle {key!r}; this grasp '
                                        'accepts e.g. ' + ', '.join(space.names))
        values += amount * (coordinates @ vector)
    return values


def coordinates_of(internal_load, count: int, names: Sequence[str]) -> np.ndarray:
    """Internal-load coordinates, (m,) or (count, m), checked and broadcast to (count, m).

    :param internal_load: the coordinates.
    :param count: number of samples.
    :param names: the basis names (m).
    :return: (count, m) array.
    :raises InvalidInputError: on a wrong length or a non-finite value.
    """
    m = len(names)
    try:
        ndim = np.ndim(internal_load)
    except ValueError:
        raise InvalidInputError(f'internal_load must be {m} numbers ({", ".join(names)})') from None
    if ndim <= 1:
        values = finite_array(internal_load, (m,), f'internal_load ({m} values: {", ".join(names)})')
        return np.broadcast_to(values, (count, m))
    return finite_array(internal_load, (count, m), 'internal_load')


def decompose(measured: np.ndarray, analysis: np.ndarray, metric: np.ndarray,
              invariant_source: Callable) -> BatchAnalysis:
    """Decompose measured contact wrenches with the fused read-out (eq. 80).

    :param measured: (k, n, 6) checked wrenches, contact frames about the contact points.
    :param analysis: the fused read-out (:func:`analysis_matrix`).
    :param metric: (6n,) ``diag(I, I / l^2)`` on the active components.
    :param invariant_source: the invariant state's computation (on first access).
    :return: the decomposition.
    """
    count, n = measured.shape[0], measured.shape[1]
    size = 6 * n
    out = measured.reshape(count, size) @ analysis
    parts = [out[:, 6 + size * k:6 + size * (k + 1)] for k in range(4)]
    constraint_object, constraint_contact = parts[1], parts[3]
    norm2 = (constraint_object * constraint_object) @ metric
    return BatchAnalysis(
        resultant=out[:, :6],
        manipulating_contact=parts[2].reshape(count, n, 6),
        constraint_contact=constraint_contact.reshape(count, n, 6),
        internal_contact=np.negative(constraint_contact).reshape(count, n, 6),
        manipulating_object=parts[0].reshape(count, n, 6),
        constraint_object=constraint_object.reshape(count, n, 6),
        internal_object=np.negative(constraint_object).reshape(count, n, 6),
        internal_load=out[:, 6 + 4 * size:-6],
        internal_load_norm=np.sqrt(0.5 * norm2),
        residual=np.abs(out[:, -6:]).max(axis=1),
        invariant_source=invariant_source,
    )


def invariant_state(applied: np.ndarray, grasp_matrix: np.ndarray, space: ManipulatingSet,
                    metric: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Return the invariant internal-load state (eq. 78 made continuous, docs/theory.md, section 5.3).

    :param applied: (k, 6n) applied wrenches on the active components, object axes.
    :param grasp_matrix: ``G``.
    :param space: ``N_m`` (:func:`manipulating_set`).
    :param metric: (6n,) ``diag(I, I / l^2)`` on the active components (the norm).
    :return: ``(invariant (k, 6n), its norm (k,))``.
    """
    invariant = invariant_part(applied, applied @ grasp_matrix.T, space.particular, space.maps,
                               space.metric)
    return invariant, np.sqrt(0.5 * np.einsum('ki,i,ki->k', invariant, metric, invariant))


class InternalSpaces:
    """The spaces of one contact configuration, built on first use: ``N(G)`` named, the read-out, ``N_m``.

    The base of :class:`~.load_distributor.LoadDistributor`, which sets what they are built from
    (``grasp_matrix``, ``rigid``, ``active_components``, ``rank``, ``reference_length``,
    ``internal_dimension``, ``pseudo_inverse``, ``maps``, ``names``, ``options`` and the contact
    poses) in its constructor.
    """

    @cached_property
    def _norm_metric(self) -> np.ndarray:
        """``diag(I, I / l^2)`` on the active components (virtual masses play no part)."""
        return wrench_scale(self.n, self.reference_length) ** 2 * self.active_components

    #: The selection of the named basis on other poses of the same contacts (set by ``moved``).
    _basis_plan: Optional[SelectionPlan] = None

    @cached_property
    def _internal(self) -> InternalSpace:
        return internal_space(self._geometry, self.grasp_matrix, self._norm_metric,
                              self.active_components, self.rank, self.internal_dimension, self._basis_plan)

    @property
    def basis_plan(self) -> Optional[SelectionPlan]:
        """Return how the named basis was selected (or, before it is built, the plan it will try first)."""
        internal = self.__dict__.get('_internal')
        return internal.plan if internal is not None else self._basis_plan

    @cached_property
    def _readout(self) -> ReadOut:
        return read_out(self._internal, self._norm_metric, self.grasp_matrix, self.pseudo_inverse,
                        self._rotation_blocks)

    @cached_property
    def _geometry(self) -> Geometry:
        return Geometry(self._positions, self.rigid, self.names, np.array(self.options.basis_reference_axis),
                        self.reference_length, self._rotations)

    @cached_property
    def _manipulating_set(self) -> ManipulatingSet:
        return manipulating_set(self.maps.canonical, self.maps.weights, self.rigid,
                                self.grasp_matrix, self.active_components, self.reference_length,
                                self.rank)

    #: What depends on the poses alone: kept by :meth:`keep_spaces` for other weights.
    _POSE_SPACES = ('_norm_metric', '_internal', '_geometry', '_rotation_blocks')

    def keep_spaces(self, other: 'InternalSpaces') -> None:
        """Take, from the same contacts at the same poses and options, what depends on the poses alone.

        The named basis of ``N(G)`` is built from the geometry alone (docs/theory.md, 16.5), so
        a change of weights keeps it; the read-out and ``N_m`` depend on ``G_M+`` and are rebuilt.

        :param other: the spaces of the same contacts at the same poses and options.
        """
        for name in self._POSE_SPACES:
            if name in other.__dict__:
                self.__dict__[name] = other.__dict__[name]

    def prepare(self) -> 'InternalSpaces':
        """Build the internal-load basis, the read-out and ``N_m`` now (else on first use).

        :return: self.
        """
        _ = self._internal, self._readout, self._manipulating_set
        return self

    @property
    def basis_ready(self) -> bool:
        """Whether the named basis has been built (by an internal load, an analysis or :meth:`prepare`)."""
        return '_internal' in self.__dict__

    @property
    def basis_names(self) -> List[str]:
        """Names of the internal-load basis elements (docs/theory.md, section 6)."""
        return list(self._internal.names)

    @property
    def basis_units(self) -> List[str]:
        """Return the unit of each basis element, ``'N'`` or ``'N*m'``."""
        return list(self._internal.units)

    @property
    def basis_matrix(self) -> np.ndarray:
        """``E`` (6n, m): the applied wrenches of each element, object axes about each contact."""
        return self._internal.basis

    @property
    def basis_condition(self) -> float:
        """Return the condition number of ``E``, each element scaled to unit size.

        The metric is ``diag(I, I / l^2)``: 1 for orthogonal elements, large when elements
        nearly repeat.
        """
        return 1.0 if not self.internal_dimension else condition_number(self._readout.gram)

    def manipulating_directions(self, wrench) -> np.ndarray:
        """Columns ``K(h_o)`` spanning ``N_m`` for one resultant, scaled to the admissible ball.

        :param wrench: resultant (6,), object frame about the CoM.
        :return: (6n, d) array.
        """
        wrench = finite_array(wrench, (6,), 'wrench')
        return np.einsum('aij,j->ia', self._manipulating_set.maps, wrench)

    def internal_load_from_handles(self, handles: Mapping[str, float]) -> np.ndarray:
        """Coordinates, in :attr:`basis_names`, of physical internal-load handles.

        Any element of the families works, also one not selected for the basis (e.g.
        ``squeeze(a,c)`` on five feet); the order of the two contacts in a name does not matter.

        :param handles: mapping like ``{'squeeze(left,right)': 20.0}`` (N or N*m).
        :return: internal-load vector (m,).
        :raises InvalidInputError: for an unknown handle or a non-finite value.
        """
        return handle_coordinates(self._internal, self._readout.coordinates, self._geometry, handles)

    def coordinates_of_wrench(self, wrench) -> np.ndarray:
        """Coordinates in :attr:`basis_names` of a stacked internal wrench (object axes), ``C h``.

        :param wrench: (6n,) self-equilibrated wrenches, object axes about each contact.
        :return: (m,) coordinates (exact for an element of ``N(G)``; else of its part there).
        """
        return self._readout.coordinates @ finite_array(wrench, (6 * len(self.names),), 'internal wrench')
