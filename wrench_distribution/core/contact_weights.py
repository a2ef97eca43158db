"""Contact weights: how a contact's share ramps between 1 (full) and 0 (released).

docs/theory.md, section 16. A weight ``omega_i`` in ``[0, 1]`` is read as the probability that
contact ``i`` is present, independently of the others. The virtual masses of a weighted set are
the mixture (16.1) of the masses of its contact subsets; the torque share, the contact-torque
weights and the collinear regulariser follow (16.2); a prescribed internal-load element is scaled
by the weights of the contacts it touches (16.6). Every function here is consistent under
removal: at ``omega_i = 0`` it gives what it gives for the set without contact ``i``.
"""
from functools import lru_cache
from itertools import product
from typing import Callable, Optional, Tuple

import numpy as np

from .errors import InvalidInputError
from .validation import finite_array

#: Most contacts that may be in transition (0 < weight < 1) at once: the mixture (16.1) has
#: ``2**k`` terms.
MAX_TRANSITIONS = 8
#: Size, relative to an element's largest entry, above which the element touches a contact (16.6).
TOUCH_TOLERANCE = 1e-12


def check_weights(weights, n: int, names=None) -> np.ndarray:
    """Contact weights as an (n,) array in ``[0, 1]``; None gives all 1.

    :param weights: None or n numbers.
    :param n: number of contacts.
    :param names: contact names, for the messages.
    :return: the weights (a new array).
    :raises InvalidInputError: wrong count, NaN, Inf, outside ``[0, 1]``, or more than
        :data:`MAX_TRANSITIONS` contacts in transition.
    """
    if weights is None:
        return np.ones(n)
    if isinstance(weights, np.ndarray) and weights.shape == (n,) and weights.dtype == float:
        values = weights.tolist()           # a few plain floats: NaN fails both comparisons
        if all(0.0 <= value <= 1.0 for value in values) and \
                sum(value < 1.0 for value in values) <= MAX_TRANSITIONS:
            return weights.copy()
    values = finite_array(weights, (n,), f'contact weights ({n} values, one per contact)').copy()
    label = list(names) if names is not None else [str(i) for i in range(n)]
    outside = [f'{label[i]}={values[i]:g}' for i in np.flatnonzero((values < 0) | (values > 1))]
    if outside:
        raise InvalidInputError(f'contact weights must be in [0, 1]: {", ".join(outside)}')
    moving = np.flatnonzero((values > 0) & (values < 1))
    if moving.size > MAX_TRANSITIONS:
        raise InvalidInputError(
            f'at most {MAX_TRANSITIONS} contacts may be in transition (weight strictly between 0 '
            f'and 1) at once; {moving.size} are: {", ".join(label[i] for i in moving)}')
    return values


def subset_mixture(weights: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Contact subsets of positive probability and their probabilities, conditioned on non-empty.

    ``T_S = A u S`` for every subset ``S`` of the contacts in transition, ``A`` the contacts of
    weight 1; probability ``prod_{S} omega prod_{F - S} (1 - omega)`` (docs/theory.md, 16.2).

    :param weights: (n,) checked weights, at least one positive.
    :return: masks (k, n) of the non-empty subsets (read-only: shared by every call with the same
        contacts in transition) and their probabilities (k,), summing to 1; the first is the set of
        every contact of positive weight.
    """
    state = bytes(2 if weight == 1.0 else 1 if weight > 0.0 else 0 for weight in weights.tolist())
    masks, moving, keep = _mixture_pattern(state)                       # 0 released, 1 moving, 2 full
    if moving is None:
        return masks, _ONE
    if moving.size == 1 and keep is None:                               # one contact in transition
        chance = float(weights[moving[0]])
        return masks, np.array([chance, 1.0 - chance])
    present = weights[moving]
    probabilities = np.prod(np.where(_subset_bits(moving.size), present, 1.0 - present), axis=1)
    if keep is not None:                 # condition on some contact being present (Z of eq. 16.1)
        probabilities = probabilities[keep] / probabilities[keep].sum()
    return masks, probabilities


_ONE = np.ones(1)
_ONE.setflags(write=False)


@lru_cache(maxsize=256)
def _mixture_pattern(state: bytes) -> Tuple[np.ndarray, Optional[np.ndarray], Optional[np.ndarray]]:
    """Return the subsets of one pattern of weights (``state``: 0 released, 1 in transition, 2 full, per contact).

    :return: masks (k, n), the contacts in transition (None without) and the rows kept when no
        contact is full (None otherwise).
    """
    codes = np.frombuffer(state, dtype=np.int8)
    full = codes == 2
    moving = np.flatnonzero(codes == 1)
    if moving.size == 0:
        masks, moving, keep = full[None, :], None, None
    else:
        bits = _subset_bits(moving.size)                                # (2^k, k)
        masks = np.repeat(full[None, :], bits.shape[0], axis=0)
        masks[:, moving] = bits
        keep = None if full.any() else masks.any(axis=1)
        if keep is not None:
            masks = masks[keep]
    for array in (masks, moving, keep):
        if array is not None:
            array.setflags(write=False)
    return masks, moving, keep


@lru_cache(maxsize=None)
def _subset_bits(count: int) -> np.ndarray:
    """Every choice of ``count`` contacts present or not, one a row (2^count, count), all present first."""
    bits = np.array(list(product((True, False), repeat=count)), dtype=bool).reshape(-1, count)
    bits.setflags(write=False)
    return bits


def rigid_presence(weights: np.ndarray, torque_carriers: np.ndarray) -> float:
    """``P`` of eq. 16.2: the probability that a contact able to carry a contact torque is present.

    :param weights: (n,) weights.
    :param torque_carriers: (n,) rigid contacts with a positive torque weight.
    :return: ``1 - prod (1 - omega_i)`` over those contacts (0 without any).
    """
    if not torque_carriers.any():
        return 0.0
    return float(1.0 - np.prod(1.0 - weights[torque_carriers]))


def element_scales(basis: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``phi_j`` of eq. 16.6: the product of the weights of the contacts element ``j`` touches.

    :param basis: (6n, m) stacked wrenches of the elements.
    :param weights: (n,) weights.
    :return: (m,) scales in ``[0, 1]``.
    """
    n, m = weights.size, basis.shape[1]
    if m == 0:
        return np.ones(0)
    per_contact = np.abs(basis).reshape(n, 6, m).max(axis=1)          # (n, m)
    touched = per_contact > TOUCH_TOLERANCE * per_contact.max(axis=0)
    return np.prod(np.where(touched, weights[:, None], 1.0), axis=0)


def handle_scale(members, names, weights: np.ndarray) -> Optional[float]:
    """Scale of a physical handle: the product of the weights of the contacts it names.

    :param members: contact names inside the handle, e.g. ``('lf', 'rh')``.
    :param names: all contact names.
    :param weights: (n,) weights.
    :return: the scale, or None when a member is not a contact.
    """
    index = {name: k for k, name in enumerate(names)}
    if any(member not in index for member in members):
        return None
    return float(np.prod([weights[index[member]] for member in members]))


def partition(weights: np.ndarray) -> float:
    """``Z`` of eq. 16.2: the probability that some contact is present (1 with one of weight 1).

    :param weights: (n,) weights.
    :return: ``Z``.
    """
    return 1.0 if np.any(weights == 1.0) else 1.0 - float(np.prod(1.0 - weights))


def mixture_derivative(weights: np.ndarray, index: int, value: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``d v / d omega_i`` of a mixture ``v(omega)`` (eq. 16.2), exactly, from its two faces.

    ``Z v`` is multilinear in the weights, so ``d (Z v) / d omega_i = Z1 v1 - Z0 v0`` with
    ``v1, v0`` the values at ``omega_i = 1`` and ``0``; then ``d v = (d (Z v) - v d Z) / Z``.
    With a contact of weight 1 other than ``i``, ``Z = 1`` and this is ``v1 - v0``.

    :param weights: (n,) weights, at least one positive.
    :param index: the contact ``i``.
    :param value: the mixture's value for any weights with one positive (an array).
    :return: the derivative (the shape of ``value``).
    """
    here, size = value(weights), partition(weights)
    up, down = weights.copy(), weights.copy()
    up[index], down[index] = 1.0, 0.0
    if not down.any():
        return (value(up) - here) / size
    low = partition(down)
    return (value(up) - low * value(down) - here * (1.0 - low)) / size
