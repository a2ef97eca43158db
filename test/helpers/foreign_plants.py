"""Plants that are not our model, for the internal-load feedback tests.

A dual-arm grasp of two rigid contacts ``a`` and ``b`` whose centre of mass is the midpoint
of the contacts. Everything here is written from the geometry, without the package:

* the grasp matrix ``G`` (``F = f_a + f_b``, ``T = t_a + t_b + r_a x f_a + r_b x f_b``);
* the named internal wrenches of docs/theory.md section 6, by hand: ``e`` the unit vector
  from ``a`` to ``b``, ``u = normalise(z x e)``, ``v = e x u``, ``d = |b - a|``; squeeze
  ``(+e, -e)`` forces; twist ``(+e, -e)`` torques; bends ``(+u, -u)``, ``(+v, -v)``
  torques; shears ``(+u, -u)`` forces with torques ``d/2 v`` at both contacts, ``(+v, -v)``
  forces with torques ``-d/2 u`` at both (the couple of the forces cancelled);
* the manipulating part of a pure force ``F`` through the centre of mass: ``F/2`` at each
  contact, no torque (the mirror symmetry that swaps ``a`` and ``b`` leaves the problem
  unchanged, so any distribution that does not depend on the labels splits it so);
* the true internal load: the coordinates, in those named wrenches, of the true contact
  wrenches minus that manipulating part.

The plant (:class:`ForeignPlant`) delivers ``A w(k - D) + bias`` for the command ``w`` (all
12 components of both effectors, object axes): per-axis gains on the diagonal of ``A``,
cross-coupling between axes and between effectors off it, a bias, and a transport delay of
``D`` commands (a FIFO). The object does not accelerate: whatever the arms deliver, the
object settles where the resultant equals the desired one, the arms giving way in
proportion to their compliance ``K^-1``: ``w_true = w_raw - S (G w_raw - h_o)`` with
``S = K^-1 G^T (G K^-1 G^T)^-1``. The loop's gain from a commanded internal load to the
true one is then ``Gamma = E^+ (I - S G) A E``.

The stability of the sampled PI (engine/feedback.py) on the mode ``sigma`` of ``Gamma`` with
a delay of ``n`` samples (docs/theory.md section 12) is :func:`critical_integral_gain` in
closed form and :func:`spectral_radius` from the characteristic polynomial's roots.
"""
from collections import deque

import numpy as np


def skew(r: np.ndarray) -> np.ndarray:
    """Return the cross-product matrix of ``r``."""
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def grasp_matrix(positions: np.ndarray, com: np.ndarray) -> np.ndarray:
    """Return the 6 x 12 grasp matrix of two contacts, wrenches stacked ``[f, t]`` per contact."""
    blocks = [np.block([[np.eye(3), np.zeros((3, 3))], [skew(p - com), np.eye(3)]])
              for p in positions]
    return np.hstack(blocks)


def named_wrenches(positions: np.ndarray, axis=(0.0, 0.0, 1.0)) -> np.ndarray:
    """Return the 12 x 6 named internal wrenches (squeeze, twist, bend_u, bend_v, shear_u, shear_v)."""
    a, b = positions
    d = np.linalg.norm(b - a)
    e = (b - a) / d
    u = np.cross(axis, e)
    u /= np.linalg.norm(u)
    v = np.cross(e, u)
    zero = np.zeros(3)

    def pair(f_a, t_a, f_b, t_b):
        return np.concatenate([f_a, t_a, f_b, t_b])
    return np.column_stack([pair(e, zero, -e, zero), pair(zero, e, zero, -e),
                            pair(zero, u, zero, -u), pair(zero, v, zero, -v),
                            pair(u, 0.5 * d * v, -u, 0.5 * d * v),
                            pair(v, -0.5 * d * u, -v, -0.5 * d * u)])


NAMES = ['squeeze', 'twist', 'bend_u', 'bend_v', 'shear_u', 'shear_v']


class ForeignPlant:
    """Two arms that are not our model: gains, coupling, bias, delay, equilibrium.

    :param positions: (2, 3) contact positions, object frame (the centre of mass is their midpoint).
    :param gain: (12, 12) ``A``.
    :param bias: (12,) added to what the arms deliver.
    :param delay: ``D``, commands held in the FIFO before they act.
    :param compliance: (12,) ``K^-1`` of the arms (how they give way to keep equilibrium).
    :param force: (3,) the desired resultant, a pure force through the centre of mass.
    """

    def __init__(self, positions, gain, bias, delay, compliance, force) -> None:
        self.positions = np.asarray(positions, float)
        self.com = self.positions.mean(0)
        self.gain, self.bias = np.asarray(gain, float), np.asarray(bias, float)
        self.delay = int(delay)
        self.G = grasp_matrix(self.positions, self.com)
        self.E = named_wrenches(self.positions)
        weighted = np.diag(compliance) @ self.G.T
        self.S = weighted @ np.linalg.inv(self.G @ weighted)
        self.resultant = np.concatenate([force, np.zeros(3)])
        self.manipulating = np.concatenate([0.5 * np.asarray(force), np.zeros(3)] * 2)
        self.fifo: deque = deque()

    def gamma(self) -> np.ndarray:
        """Return ``Gamma``, the gain from commanded to true internal load (6 x 6)."""
        settle = np.eye(12) - self.S @ self.G
        return np.linalg.lstsq(self.E, settle @ self.gain @ self.E, rcond=None)[0]

    def deliver(self, commands: np.ndarray) -> np.ndarray:
        """Take one command set (2, 6), object axes; return the true wrenches (2, 6) now.

        :param commands: the commands just sent.
        :return: what the contacts apply to the object, ``D`` commands late, in equilibrium.
        """
        command = np.asarray(commands, float).reshape(12)
        if not self.fifo:  # at rest before the first command: the FIFO holds it
            self.fifo.extend([command] * self.delay)
        self.fifo.append(command)
        raw = self.gain @ self.fifo.popleft() + self.bias
        return (raw - self.S @ (self.G @ raw - self.resultant)).reshape(2, 6)

    def truth(self, wrenches: np.ndarray) -> np.ndarray:
        """Return the true internal load of contact wrenches (2, 6), object axes.

        :raises AssertionError: when the wrenches do not balance the desired resultant.
        """
        internal = np.asarray(wrenches, float).reshape(12) - self.manipulating
        scale = 1.0 + np.abs(internal).max()
        assert np.abs(self.G @ internal).max() <= 1e-9 * scale, 'not in equilibrium'
        coords, *_ = np.linalg.lstsq(self.E, internal, rcond=None)
        assert np.abs(self.E @ coords - internal).max() <= 1e-9 * scale
        return coords


def coupled_arms(positions, force, seed, coupling, delay, scale=1.0) -> ForeignPlant:
    """Return two arms with per-axis gains 0.6-1.4, coupling, biases of 2-5 N and 0.1-0.3 N*m.

    :param coupling: the largest gain between two different wrench components (any axes,
        either effector).
    :param delay: commands held in the FIFO.
    :param scale: a factor on the whole gain matrix.
    """
    rng = np.random.default_rng(seed)
    gain = np.diag(rng.uniform(0.6, 1.4, 12)) + coupling * rng.uniform(-1.0, 1.0, (12, 12))
    bias = rng.choice([-1.0, 1.0], 12) * np.tile(
        np.concatenate([rng.uniform(2.0, 5.0, 3), rng.uniform(0.1, 0.3, 3)]), 2)
    return ForeignPlant(positions, scale * gain, bias, delay, rng.uniform(0.5, 2.0, 12), force)


def settled_correction(plant: ForeignPlant, target: np.ndarray) -> np.ndarray:
    """Return the correction ``u*`` at which the plant's truth is ``target`` (a fresh plant).

    The truth is affine in the commanded internal load: ``truth(target + u) = truth(target)
    + Gamma u``, so ``u* = Gamma^-1 (target - truth(target))``.
    """
    still = ForeignPlant(plant.positions, plant.gain, plant.bias, 0, np.ones(12), plant.resultant[:3])
    still.S = plant.S
    commands = plant.manipulating + plant.E @ target
    return np.linalg.solve(plant.gamma(), target - still.truth(still.deliver(commands)))


# --- the sampled PI with a delay: stability -------------------------------------------------
def mode_polynomial(sigma: complex, kp: float, integral: float, n: int) -> np.ndarray:
    """Return the coefficients of ``z^(n+1) - z^n + sigma (kp + ki T) z - sigma kp``.

    The PI of engine/feedback.py, ``u_k = u_(k-1) + (kp + ki T) e_k - kp e_(k-1)``, on the
    mode ``sigma`` of a plant seen ``n`` samples late, ``e_k = -sigma u_(k-n) + const``.

    :param integral: ``ki T``.
    """
    coefficients = np.zeros(n + 2, dtype=complex)
    coefficients[0], coefficients[1] = 1.0, -1.0
    coefficients[n] += sigma * (kp + integral)
    coefficients[n + 1] -= sigma * kp
    return coefficients


def spectral_radius(sigmas, kp: float, integral: float, n: int) -> float:
    """Return the largest root modulus over the modes ``sigmas`` (below 1: stable)."""
    return max(np.abs(np.roots(mode_polynomial(s, kp, integral, n))).max() for s in sigmas)


def critical_frequency(a: float, n: int) -> float:
    """Return the smallest ``w`` in (0, pi] with ``cos((n - 1/2) w) + a cos(w / 2) = 0``."""
    grid = np.linspace(1e-9, np.pi, 20000)
    values = np.cos((n - 0.5) * grid) + a * np.cos(0.5 * grid)
    change = np.nonzero(np.sign(values[:-1]) != np.sign(values[1:]))[0]
    if change.size == 0:
        return np.pi
    low, high = grid[change[0]], grid[change[0] + 1]
    for _ in range(60):
        mid = 0.5 * (low + high)
        if np.sign(np.cos((n - 0.5) * mid) + a * np.cos(0.5 * mid)) == np.sign(values[change[0]]):
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


def critical_integral_gain(a: float, n: int) -> tuple:
    """Return ``(K*, w*)``: the loop is stable for ``0 < sigma ki T < K*`` (``a = sigma kp``).

    docs/theory.md (12.6): ``K* = 2 sin(w*/2) (sin((n - 1/2) w*) - a sin(w*/2))``.
    """
    w = critical_frequency(a, n)
    return 2.0 * np.sin(0.5 * w) * (np.sin((n - 0.5) * w) - a * np.sin(0.5 * w)), w
