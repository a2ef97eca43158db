"""The paper's invariant internal-load state (eq. 78), made continuous (docs/theory.md, 5.3).

The admissible manipulating distributions for a resultant ``h_o`` are
``h_m = h_m,p + K(h_o) sigma`` with ``|sigma| <= 1`` (the torque shares of eq. 65 bounded by
``|t_o|``, and the virtual-mass redistributions that keep the masses positive). The invariant of
applied wrenches ``h`` is ``h - h_m*``, with ``h_m*`` the admissible distribution closest to ``h``
in the metric ``W``: the part of ``h`` that no admissible manipulating distribution explains. It
does not depend on which admissible ``h_m`` a configuration picks, it equals the paper's
``N_c`` projection while the closest point is inside the ball, and because the set shrinks
with ``t_o`` it is continuous where the subspace spanned by ``K`` is not.
"""
import math

import numpy as np

_NEWTON_STEPS = 40


def ball_coefficients(hessian: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """Minimise ``sigma^T H sigma / 2 - g^T sigma`` over ``|sigma| <= 1``, for k problems at once.

    Trust-region subproblem with a PSD ``H`` and ``g`` in its range: the unconstrained
    minimum-norm solution when it lies in the ball, else ``(H + mu I) sigma = g`` with
    ``|sigma| = 1``, ``mu`` found by Newton's method on ``1 / |sigma(mu)| - 1`` (monotone).

    :param hessian: (k, d, d) symmetric PSD matrices.
    :param gradient: (k, d) vectors.
    :return: (k, d) minimisers.
    """
    values, vectors = np.linalg.eigh(hessian)
    values = np.clip(values, 0.0, None)
    projected = np.einsum('kda,kd->ka', vectors, gradient)
    top = values.max(axis=1, keepdims=True)
    keep = values > 1e-12 * top
    inverse = np.where(keep, 1.0 / np.where(keep, values, 1.0), 0.0)
    outside = np.sum((projected * inverse) ** 2, axis=1) > 1.0
    if outside.any():
        kept = keep[outside]
        lam = np.where(kept, values[outside], 1.0)
        g2 = np.where(kept, projected[outside] ** 2, 0.0)
        m = _shift_one(lam[0].tolist(), g2[0].tolist()) if len(lam) == 1 else _shifts(lam, g2)
        inverse[outside] = np.where(kept, 1.0 / (lam + m), 0.0)
    return np.einsum('kda,ka->kd', vectors, projected * inverse)


def _shifts(lam: np.ndarray, g2: np.ndarray) -> np.ndarray:
    """Newton's method on ``1 / |sigma(mu)| - 1`` for k problems at once: ``mu`` (k, 1)."""
    m = np.zeros((lam.shape[0], 1))
    for _ in range(_NEWTON_STEPS):
        denominator = lam + m
        norm2 = np.sum(g2 / denominator ** 2, axis=1, keepdims=True)
        slope = np.sum(g2 / denominator ** 3, axis=1, keepdims=True)
        previous, m = m, m + (np.sqrt(norm2) - 1.0) * norm2 / slope
        if (m == previous).all():
            break  # every mu at a fixed point: the remaining steps would not change it
    return m


def _shift_one(lam: list, g2: list) -> float:
    """:func:`_shifts` for one problem, on Python floats (a live sample: no numpy call per step)."""
    m = 0.0
    for _ in range(_NEWTON_STEPS):
        norm2 = slope = 0.0
        for value, weight in zip(lam, g2):
            inverse = 1.0 / (value + m)
            term = weight * inverse * inverse
            norm2 += term
            slope += term * inverse
        previous, m = m, m + (math.sqrt(norm2) - 1.0) * norm2 / slope
        if m == previous:
            break
    return m


def invariant_part(applied: np.ndarray, resultant: np.ndarray, particular: np.ndarray,
                   maps: np.ndarray, metric: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """``h - h_m*`` for k samples (memory-bounded chunks).

    :param applied: (k, 6n) applied wrenches, object axes about each contact.
    :param resultant: (k, 6) their resultants about the CoM.
    :param particular: (6n, 6) the canonical ``h_m,p`` map.
    :param maps: (d, 6n, 6) maps ``h_o -> k_a`` scaled to the unit ball.
    :param metric: (6n,) the metric ``W``.
    :param chunk: samples per chunk.
    :return: (k, 6n) invariant wrenches.
    """
    out = applied - resultant @ particular.T
    if maps.shape[0] == 0:
        return out
    if out.shape[0] == 1:  # a live sample: matrix products instead of einsums
        directions = maps.dot(resultant[0]).T  # (6n, d)
        weighted = directions * metric[:, None]
        sigma = ball_coefficients((weighted.T @ directions)[None], (weighted.T @ out[0])[None])
        out[0] -= directions @ sigma[0]
        return out
    for start in range(0, out.shape[0], chunk):
        h_o = resultant[start:start + chunk]
        directions = np.einsum('aij,kj->kia', maps, h_o)
        weighted = directions * metric[None, :, None]
        hessian = np.einsum('kia,kib->kab', weighted, directions)
        gradient = np.einsum('kia,ki->ka', weighted, out[start:start + chunk])
        sigma = ball_coefficients(hessian, gradient)
        out[start:start + chunk] -= np.einsum('kia,ka->ki', directions, sigma)
    return out
