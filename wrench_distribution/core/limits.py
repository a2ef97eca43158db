"""Command limits: per-effector force and torque norms, desired-wrench and internal-load limits.

Pure numpy. Every check is overflow-safe: norms of finite inputs are taken with
``math.hypot`` (or after scaling by the largest entry), so 1.7e308 gives a figure and a
refusal, never an overflow warning.
"""
from dataclasses import dataclass
import math
from typing import Optional, Sequence, Tuple

import numpy as np

#: The violation policies.
POLICIES = ('hold', 'zero', 'scale')
#: Relative margin kept below a limit when scaling, so rounding never lands above it.
SCALE_MARGIN = 1e-9
#: Below this magnitude, squared norms of six values cannot overflow.
_SQUARE_SAFE = 1e150


def _row_norms(block: np.ndarray) -> np.ndarray:
    """Euclidean norms of the rows of an (n, 3) array, without overflow.

    :param block: finite (n, 3) array.
    :return: (n,) norms (inf only where the true norm exceeds the float range).
    """
    big = np.max(np.abs(block), axis=1)
    safe = np.where(big > 0.0, big, 1.0)
    with np.errstate(over='ignore', invalid='ignore'):
        return big * np.sqrt(np.sum((block / safe[:, None]) ** 2, axis=1))


@dataclass
class Violation:
    """A limit exceeded: what, by how much, and the factor that brings it inside.

    :ivar text: the figures, e.g. ``force of 'left' 1500 N > limit 1000 N``.
    :ivar scale: factor in (0, 1) that brings every checked quantity inside its limit.
    """

    text: str
    scale: float


@dataclass
class CommandLimits:
    """The configured limits.

    :param names: effector names (for messages).
    :param force: largest force norm per effector (N).
    :param torque: largest torque norm per effector (N m).
    :param desired_force: largest force norm of the desired wrench (N).
    :param desired_torque: largest torque norm of the desired wrench (N m).
    :param internal_load: largest absolute internal-load coordinate.
    :param policy: ``hold``, ``zero`` or ``scale``.
    """

    names: Sequence[str]
    force: Sequence[float]
    torque: Sequence[float]
    desired_force: float
    desired_torque: float
    internal_load: float
    policy: str = 'hold'

    def check_desired(self, wrench: Sequence[float]) -> Optional[Violation]:
        """Check a desired wrench (six finite values).

        :param wrench: ``[fx, fy, fz, tx, ty, tz]``.
        :return: None when inside the limits, else the violation.
        """
        fn = math.hypot(wrench[0], wrench[1], wrench[2])
        tn = math.hypot(wrench[3], wrench[4], wrench[5])
        parts = []
        scale = 1.0
        if fn > self.desired_force:
            parts.append(f'desired force {fn:.6g} N > desired_force_limit '
                         f'{self.desired_force:.6g} N')
            scale = min(scale, self.desired_force / fn)
        if tn > self.desired_torque:
            parts.append(f'desired torque {tn:.6g} N m > desired_torque_limit '
                         f'{self.desired_torque:.6g} N m')
            scale = min(scale, self.desired_torque / tn)
        if not parts:
            return None
        return Violation('; '.join(parts), scale * (1.0 - SCALE_MARGIN))

    def __post_init__(self) -> None:
        self._force_sq = np.asarray(self.force, float) ** 2
        self._torque_sq = np.asarray(self.torque, float) ** 2
        self._squares = np.stack([self._force_sq, self._torque_sq], axis=1)  # (n, 2)
        #: with finite squared limits an overflowing square (inf) can never pass as inside
        self._finite_squares = bool(np.isfinite(self._squares).all())

    def check_commands(self, commands: np.ndarray) -> Optional[Violation]:
        """Check the (n, 6) commands against the per-effector force and torque limits.

        :param commands: finite (n, 6) array.
        :return: None when inside, else the violation (figures of every effector over).
        """
        # fast path: squared norms of forces and torques in one product; a square that
        # overflows (inf) or a NaN fails the comparison against finite squared limits and
        # takes the exact path below (huge limits: only commands whose squares are finite)
        if self._finite_squares or np.abs(commands).max() < _SQUARE_SAFE:
            blocks = commands.reshape(-1, 2, 3)
            if (np.einsum('ijk,ijk->ij', blocks, blocks) <= self._squares).all():
                return None
        fn = _row_norms(commands[:, :3])
        tn = _row_norms(commands[:, 3:])
        flim = np.asarray(self.force, float)
        tlim = np.asarray(self.torque, float)
        over_f = fn > flim
        over_t = tn > tlim
        if not (over_f.any() or over_t.any()):
            return None
        parts = [f"force of '{self.names[i]}' {fn[i]:.6g} N > limit {flim[i]:.6g} N"
                 for i in np.flatnonzero(over_f)]
        parts += [f"torque of '{self.names[i]}' {tn[i]:.6g} N m > limit {tlim[i]:.6g} N m"
                  for i in np.flatnonzero(over_t)]
        with np.errstate(divide='ignore', over='ignore'):  # tiny norms: ratios of inf
            scale = float(min(np.min(flim / fn), np.min(tlim / tn)))
        return Violation('; '.join(parts), scale * (1.0 - SCALE_MARGIN))

    def check_internal_load(self, coords: Sequence[float]) -> Optional[str]:
        """Check prescribed internal-load coordinates.

        :param coords: lambda_c (finite).
        :return: None when inside, else the reason with the figure.
        """
        a = np.abs(np.asarray(coords, float))
        if a.size == 0 or not np.all(np.isfinite(a)):
            return None if a.size == 0 else 'internal load contains NaN or Inf'
        k = int(np.argmax(a))
        if a[k] > self.internal_load:
            return (f'internal load coordinate {k} is {coords[k]:.6g}, |value| > '
                    f'internal_load_limit {self.internal_load:.6g}')
        return None

    def within(self, commands: np.ndarray) -> bool:
        """Tell whether every command is inside its force and torque limit.

        :param commands: (n, 6) array.
        :return: the verdict (False for NaN or Inf).
        """
        return bool(np.all(np.isfinite(commands))) and self.check_commands(commands) is None


def scaled_inside(commands: np.ndarray, limits: CommandLimits) -> Tuple[np.ndarray, float]:
    """Scale a command set uniformly until every command is inside its limits.

    :param commands: finite (n, 6) array.
    :param limits: the limits.
    :return: ``(scaled commands, factor)`` (factor 1 when already inside).
    """
    v = limits.check_commands(commands)
    if v is None:
        return commands, 1.0
    return commands * v.scale, v.scale
