"""Compilation of the core's small dense numerics (numba): one decorator for every kernel.

The per-tick update builds the maps of a few contact subsets of a handful of contacts: arrays
of a few dozen numbers, on which each numpy call costs more in its dispatch than in its
arithmetic. The loops of :func:`kernel` functions are compiled on their first call and kept in
numba's cache (next to the module, or in the user's cache directory when the package's is not
writable), so that later processes load them instead of compiling again. They run with numpy's
floating-point semantics: a division by zero gives an infinity or a NaN, as in numpy, not an
exception, and no reassociation (no ``fastmath``) changes the rounding of a sum.
"""
from typing import Callable

import numba
import numpy as np

_OPTIONS = {'nogil': True, 'error_model': 'numpy'}


def kernel(function: Callable) -> Callable:
    """Compile a function of arrays and floats in nopython mode, cached, with numpy's semantics.

    :param function: the Python function (loops over numpy arrays).
    :return: the compiled dispatcher (called as the function); without a cache when numba finds
        no place to keep one (then each process compiles it on its first call).
    """
    try:
        return numba.njit(cache=True, **_OPTIONS)(function)
    except RuntimeError:                  # numba's "cannot cache function ...: no locator available"
        return numba.njit(**_OPTIONS)(function)


@kernel
def weighted_centres(weights: np.ndarray, r: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Return the centres ``sum_i w_vi r_i / W_v`` (V, 3) of V weightings (V, n) of points ``r`` (n, 3) (compiled).

    :param weights: (V, n) the weights (masses, or a subset's mask as floats).
    :param r: (n, 3) the points.
    :param totals: (V,) the divisors ``W_v`` (the weights' sums).
    :return: the centres.
    """
    centres = np.empty((weights.shape[0], 3))
    for v in range(weights.shape[0]):
        for a in range(3):
            total = 0.0
            for i in range(r.shape[0]):
                total += weights[v, i] * r[i, a]
            centres[v, a] = total / totals[v]
    return centres


def warm() -> None:
    """Compile the kernels for the arrays that the distribution passes them, so that they are in the cache.

    A distribution of rigid and point contacts, with a contact in transition, built and then moved
    as the per-tick path moves it, and two rigid contacts (on one line: the regularised inverses):
    the first node or command started afterwards loads the kernels instead of compiling them
    (several seconds, once per installation).
    """
    from .contacts import Contact, ContactLayout
    from .load_distributor import LoadDistributor
    from .transitions import WeightedDistributor
    placed = [('rigid', (0.3, 0.0, 0.0)), ('point', (-0.3, 0.1, 0.0)), ('rigid', (0.0, 0.3, 0.1)),
              ('point', (0.0, -0.3, 0.0))]
    contacts = [Contact(name=f'c{index}', type=kind, position=position)
                for index, (kind, position) in enumerate(placed)]
    LoadDistributor(contacts).wrench_commands([0.0, 0.0, 10.0, 0.0, 0.0, 0.0])
    LoadDistributor([contacts[0], contacts[2]]).wrench_commands([0.0, 0.0, 10.0, 0.0, 0.0, 0.0])
    layout = ContactLayout(contacts)
    positions, quaternions = [contact.position for contact in contacts], [[0.0, 0.0, 0.0, 1.0]] * len(contacts)
    distribution = WeightedDistributor(layout.arrays(positions, quaternions), weights=[1.0, 0.5, 1.0, 1.0])
    distribution.moved(layout.arrays(positions, quaternions), [1.0, 0.25, 1.0, 1.0]).wrench_commands(
        [0.0, 0.0, 10.0, 0.0, 0.0, 0.0])
