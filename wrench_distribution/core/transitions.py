"""Distribution over contacts that come and go: every contact with a weight in ``[0, 1]``.

docs/theory.md, section 16. A :class:`WeightedDistributor` holds a :class:`.LoadDistributor` of
the contacts of positive weight (with their weights: the mixture of eq. 16.1 and the torque
parameters of eq. 16.2) and answers for every contact: a released contact (weight 0) has the
command 0 and is out of the solve. A prescribed internal load is applied element by element
with the scales of eq. 16.6, so elements that involve a leaving contact ramp with it; the
read-out reports the load actually applied.
"""
from functools import cached_property
from typing import List, Mapping, Optional, Sequence, Union

import numpy as np

from .contact_weights import check_weights, element_scales, handle_scale, mixture_derivative
from .contacts import Contact, ContactArrays, ObjectModel
from .errors import InvalidInputError, UnrealisableWrenchError
from .internal_basis import handle_members
from .load_distributor import InternalLoad, LoadDistributor
from .options import DistributionOptions
from .results import Analysis, Synthesis
from .validation import check_names, finite_array


class WeightedDistributor:
    """Synthesis and analysis for contacts with weights (docs/theory.md, section 16).

    :param contacts: every contact, in effector order (or their :class:`.ContactArrays`).
    :param object_model: the object (as for :class:`.LoadDistributor`).
    :param options: distribution options.
    :param weights: one weight in ``[0, 1]`` per contact; None: all 1 (then this is exactly the
        :class:`.LoadDistributor` of the contacts).
    :raises InvalidInputError: bad contacts, options or weights, or every weight 0.
    """

    def __init__(self, contacts: Union[Sequence[Contact], ContactArrays], object_model: Optional[ObjectModel] = None,
                 options: Optional[DistributionOptions] = None, weights=None) -> None:
        if not isinstance(contacts, ContactArrays):
            contacts = tuple(contacts)
            if not contacts or not all(isinstance(c, Contact) for c in contacts):
                raise InvalidInputError('at least one contact is required, each a Contact')
            check_names([c.name for c in contacts])
            contacts = ContactArrays.of(contacts)
        self.names = list(contacts.names)
        self.n = len(self.names)
        self._object_model = object_model
        self._options = options if options is not None else DistributionOptions()
        self._adopt(contacts, check_weights(weights, self.n, self.names), None)

    def moved(self, contacts: Optional[ContactArrays] = None, weights=None) -> 'WeightedDistributor':
        """Return the distribution at new poses or weights (or both), reusing what stays: the per-tick path.

        The same as ``WeightedDistributor(contacts, object_model, options, weights)`` with this
        one's object and options: the same computations, without checking the contacts again
        (those of :meth:`.ContactLayout.arrays` are checked) and, at the same poses and the same
        contacts of positive weight, with the maps of the contact subsets and the named basis
        kept: a change of weights then only mixes the subsets anew (eq. 16.1).

        :param contacts: the same contacts (names and types) at their new poses, or None: the
            same poses.
        :param weights: the new weights in ``[0, 1]``, or None: the same weights.
        :return: the new distribution (this one is unchanged).
        :raises InvalidInputError: other contacts, bad weights, every weight 0, or options the
            contacts cannot take.
        """
        if contacts is not None and (not isinstance(contacts, ContactArrays) or contacts.names != self._arrays.names
                                     or contacts.types != self._arrays.types):
            raise InvalidInputError('moved() takes the same contacts (names and types) at new poses, as ContactArrays')
        moved = WeightedDistributor.__new__(WeightedDistributor)
        moved.names, moved.n = self.names, self.n
        moved._object_model, moved._options = self._object_model, self._options
        moved._adopt(self._arrays if contacts is None else contacts,
                     self.weights if weights is None else check_weights(weights, self.n, self.names), self)
        return moved

    def _adopt(self, contacts: ContactArrays, weights: np.ndarray, previous: Optional['WeightedDistributor']) -> None:
        """Build the distributor of the contacts of positive weight (from ``previous`` when it has the same ones)."""
        #: (n,) the contact weights.
        self.weights = weights
        #: (n,) the contacts in the solve (weight above 0).
        self.live = live = weights > 0.0
        count = int(np.count_nonzero(live))
        if not count:
            raise InvalidInputError('every contact has weight 0: no contact would hold the object')
        self._arrays = contacts
        self._all_live = all_live = count == self.n
        live_weights = weights if all_live else weights[live]
        live_weights = None if min(live_weights.tolist()) == 1.0 else live_weights
        if previous is not None and (previous.live == live).all():
            #: The distributor of the contacts in the solve, with their weights.
            self.distributor = previous.distributor.moved(
                None if contacts is previous._arrays else contacts if all_live else contacts.select(live), live_weights,
                checked=True)
        else:
            self.distributor = LoadDistributor(contacts if all_live else contacts.select(live), self._object_model,
                                               self._options if all_live else self._options.restricted(live),
                                               live_weights)

    @cached_property
    def _rows(self) -> np.ndarray:
        """Rows (6 n_live,) of the contacts in the solve in a stacked (6n,) wrench."""
        return (6 * np.flatnonzero(self.live)[:, None] + np.arange(6)).ravel()

    @property
    def live_names(self) -> List[str]:
        """Names of the contacts in the solve (weight above 0)."""
        return list(self.distributor.names)

    @property
    def released_names(self) -> List[str]:
        """Names of the released contacts (weight 0)."""
        return [name for name, live in zip(self.names, self.live) if not live]

    @property
    def basis_names(self) -> List[str]:
        """Names of the internal-load basis of the contacts in the solve (docs/theory.md, 16.5)."""
        return self.distributor.basis_names

    @cached_property
    def element_scales(self) -> np.ndarray:
        """``phi`` (m,) of eq. 16.6: the product of the weights of the contacts each element touches."""
        return element_scales(self.distributor.basis_matrix, self.weights[self.live])

    def applied_load(self, internal_load: InternalLoad) -> np.ndarray:
        """Coordinates of the internal load actually applied at these weights (eq. 16.6).

        :param internal_load: None, (m,) coordinates in :attr:`basis_names`, or handles such as
            ``{'squeeze(lf,rh)': 20.0}`` (any contact, released or not: a handle is scaled by the
            weights of the contacts it names, so one on a released contact gives 0).
        :return: (m,) coordinates ``phi . lambda`` (or of the scaled handles).
        :raises InvalidInputError: unknown handle, wrong length, NaN or Inf.
        """
        m = self.distributor.internal_dimension
        if internal_load is None:
            return np.zeros(m)
        if not isinstance(internal_load, Mapping):
            values = finite_array(internal_load, (m,), f'internal_load ({m} values: {", ".join(self.basis_names)})')
            return self.element_scales * values
        scaled = {}
        for key, value in internal_load.items():
            amount = float(finite_array(value, (), f'internal load {key!r}'))
            parsed = handle_members(str(key))
            scale = None if parsed is None else handle_scale(parsed[1], self.names, self.weights)
            if scale is None:
                raise InvalidInputError(f'unknown internal-load handle {key!r}; handles name contacts of '
                                        f'{", ".join(self.names)}, e.g. ' + ', '.join(self.basis_names))
            if scale > 0.0:
                scaled[key] = scale * amount
        return self.distributor.internal_load_from_handles(scaled) if scaled else np.zeros(m)

    def _pad(self, live_rows: np.ndarray) -> np.ndarray:
        """(..., 6 n_live) -> (..., 6 n) with zeros at the released contacts."""
        out = np.zeros(live_rows.shape[:-1] + (6 * self.n,))
        out[..., self._rows] = live_rows
        return out

    def internal_wrench(self, internal_load: InternalLoad, object_frame: bool = False) -> np.ndarray:
        """Stacked (6n,) wrench of the applied internal load, for :meth:`wrench_commands`.

        :param internal_load: as for :meth:`applied_load`.
        :param object_frame: in object-frame axes instead of the contact frames.
        :return: (6n,) array, zero at the released contacts.
        """
        applied = self.applied_load(internal_load)
        return self._pad(self.distributor.internal_basis(object_frame) @ applied if applied.size
                         else np.zeros(6 * len(self.live_names)))

    def wrench_commands(self, wrench, internal: Optional[np.ndarray] = None,
                        object_frame: bool = False) -> np.ndarray:
        """Commands (n, 6) for a desired resultant: the control-loop path.

        :param wrench: desired resultant (6,), object frame about the centre of mass.
        :param internal: None or the (6n,) result of :meth:`internal_wrench` for the same frame.
        :param object_frame: commands in object-frame axes instead of the contact frames.
        :return: (n, 6); the rows of released contacts are exactly 0.
        :raises UnrealisableWrenchError: when the contacts in the solve cannot produce it.
        """
        if self._all_live:
            return self.distributor.wrench_commands(wrench, internal, object_frame)
        live = self.distributor.wrench_commands(wrench, None if internal is None else internal[self._rows],
                                                object_frame)
        return self._pad(live.reshape(-1)).reshape(self.n, 6)

    def synthesize(self, wrench, internal_load: InternalLoad = None) -> Synthesis:
        """Commands for one resultant, with the applied internal load (eq. 16.6).

        :param wrench: desired resultant (6,), object frame about the centre of mass.
        :param internal_load: as for :meth:`applied_load`.
        :return: the synthesis of the contacts in the solve with every array over all n contacts
            (zero rows at released contacts); ``internal_load`` is the applied ``phi . lambda``.
        """
        inner = self.distributor.synthesize(wrench, self.applied_load(internal_load))
        source = inner.invariant_source
        return Synthesis(
            wrench_contact=self._rows_of(inner.wrench_contact), wrench_object=self._rows_of(inner.wrench_object),
            manipulating_object=self._rows_of(inner.manipulating_object),
            internal_object=self._rows_of(inner.internal_object), resultant=inner.resultant,
            residual=inner.residual, internal_load=inner.internal_load, regime=inner.regime,
            invariant_source=lambda applied: tuple(self._rows_of(part) if part.ndim == 3 else part
                                                   for part in source(applied[:, self.live])))

    def _rows_of(self, per_contact: np.ndarray) -> np.ndarray:
        """(..., n_live, 6) -> (..., n, 6), zero rows at the released contacts."""
        return self._pad(per_contact.reshape(per_contact.shape[:-2] + (-1,))).reshape(
            per_contact.shape[:-2] + (self.n, 6))

    def analyze(self, measured) -> Analysis:
        """Decompose measured wrenches of the contacts in the solve (released ones are not read).

        :param measured: (n, 6) wrenches applied to the object, contact frames about the
            contact points (the rows of released contacts are ignored).
        :return: the :class:`.Analysis` of the contacts in the solve (arrays over
            :attr:`live_names`); its ``internal_load`` is the load applied, ``phi . lambda``.
        """
        measured = finite_array(measured, (self.n, 6), 'measured wrenches')
        return self.distributor.analyze(measured[self.live])

    def weight_sensitivity(self, wrench) -> np.ndarray:
        """Rate of change of the commands per unit of each weight (eq. 16.4), newtons per unit weight.

        ``L_i = sum_j |d f_j / d omega_i| + |d t_j / d omega_i| / l0``, exact: the commands are
        multilinear in the weights (up to the normalisation ``Z``), so ``L_i`` is the size of
        the difference between the commands with ``omega_i = 1`` and with ``omega_i = 0``; a ramp
        of ``omega_i`` alone moves them along a straight line at that rate.

        :param wrench: the resultant (6,), object frame about the centre of mass.
        :return: (n,) rates; NaN for released contacts (the rate of a returning contact is that
            of the set it returns to); inf where a contact set that the change would mix in
            cannot produce ``wrench`` (two contacts in transition at once, section 16.6).
        """
        wrench = finite_array(wrench, (6,), 'wrench')

        def commands(weights: np.ndarray) -> np.ndarray:
            return WeightedDistributor(self._arrays, self._object_model, self._options,
                                       weights).wrench_commands(wrench, object_frame=True)

        length = self.distributor.reference_length
        rates = np.full(self.n, np.nan)
        for i in np.flatnonzero(self.live):
            try:
                change = mixture_derivative(self.weights, i, commands)
            except UnrealisableWrenchError:
                rates[i] = np.inf
                continue
            rates[i] = float(np.linalg.norm(change[:, :3], axis=1).sum()
                             + np.linalg.norm(change[:, 3:], axis=1).sum() / length)
        return rates


def carry_internal_load(before: WeightedDistributor, after: WeightedDistributor, internal_load) -> np.ndarray:
    """Coordinates in ``after``'s basis of a load given in ``before``'s (docs/theory.md, 16.5).

    For a change of the contacts in the solve: the elements of ``before`` that touch only
    contacts still in the solve keep their wrench (each lies in the new ``N(G)``), expressed in
    the new basis; the others (they touch a contact that left) are dropped.

    :param before: the distribution the load was given for.
    :param after: the new one (same contact names and order).
    :param internal_load: (m_before,) coordinates.
    :return: (m_after,) coordinates.
    :raises InvalidInputError: when the two have different contacts.
    """
    if before.names != after.names:
        raise InvalidInputError('carry_internal_load needs the same contacts in the same order')
    values = finite_array(internal_load, (before.distributor.internal_dimension,), 'internal_load')
    basis = before._pad(before.distributor.basis_matrix.T).T                 # (6n, m), object axes
    touched = np.abs(basis).reshape(before.n, 6, -1).max(axis=1) > 0.0      # (n, m)
    kept = ~np.any(touched & ~after.live[:, None], axis=0)
    wrench = basis[:, kept] @ values[kept]
    return after.distributor.coordinates_of_wrench(wrench[after._rows])
