"""Per-effector arrays: the one reader of the flat ``[x, y, z per effector]`` form (no ROS).

ROS parameters cannot hold lists of dicts, so per-effector settings are flat arrays aligned
with ``effectors`` (an empty array: the default for every effector). Every reading of that
form (contact poses, sensors, tools, biases, friction, limits, the simulator's errors and arm
bases) goes through :func:`per_effector` or :func:`rows`; their widths are checked by
:func:`check_width`.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np

from .schema import ConfigError, ParamSpec


def rows(values: Sequence[float], n: int, width: int, default: Sequence[float]) -> np.ndarray:
    """Return a per-effector array parameter as rows, the default in every row where it is empty.

    :param values: the parameter's flat list (empty: the default for every effector).
    :param n: number of effectors.
    :param width: numbers per effector.
    :param default: the ``width`` numbers of an effector when the list is empty.
    :return: ``numpy`` array (n, width).
    :raises ValueError: when the list holds neither 0 nor ``n * width`` numbers.
    """
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        return np.tile(np.asarray(default, dtype=float), (n, 1))
    if v.size != n * width:
        raise ValueError(f'expected {width} numbers per effector ({n * width}), got {v.size}')
    return v.reshape(n, width)


def per_effector(values: Sequence, n: int, width: int, default: Sequence) -> Tuple[tuple, ...]:
    """Return a per-effector array parameter as one tuple per effector (any element type).

    :param values: the parameter's flat list (empty: the default for every effector).
    :param n: number of effectors.
    :param width: entries per effector.
    :param default: the ``width`` entries of an effector when the list is empty.
    :return: ``n`` tuples of ``width`` entries (fewer when the list is short: see :func:`check_width`).
    """
    values = list(values or ())
    if not values:
        return tuple(tuple(default) for _ in range(n))
    return tuple(tuple(values[i:i + width]) for i in range(0, len(values) - width + 1, width))


def check_width(values: Sequence, name: str, n: int, width: int, allow_empty: bool = True,
                spec: Optional[ParamSpec] = None) -> None:
    """Refuse a per-effector array that holds neither ``n * width`` entries nor (if allowed) none.

    :param values: the array.
    :param name: the parameter's name (for the message).
    :param n: number of effectors.
    :param width: entries per effector.
    :param allow_empty: whether an empty array is accepted (the defaults).
    :param spec: the parameter's spec (its accepted values go into the message).
    :raises ConfigError: naming the parameter and the count expected.
    """
    if allow_empty and len(values) == 0:
        return
    if len(values) != n * width:
        what = f'{width} per effector' if width > 1 else 'one per effector'
        raise ConfigError(
            f"parameter '{name}': has {len(values)} entries, expected {n * width} ({what}, "
            f'{n} effectors)' + ('' if not allow_empty else ' or none')
            + (f'; accepted: {spec.constraint_text()}' if spec else ''))


def expand_limits(values: Sequence[float], n: int) -> Tuple[float, ...]:
    """Expand a limit given once for every effector, or once per effector.

    :param values: 1 or n limits.
    :param n: number of effectors.
    :return: n limits.
    """
    return tuple(values) * n if len(values) == 1 else tuple(values)


def first_zero_group(values: Sequence[float], width: int) -> Optional[int]:
    """Return the index of the first group of ``width`` numbers whose norm is zero, or None.

    :param values: the flat array.
    :param width: numbers per group.
    :return: the group's index, or None.
    """
    for i in range(0, len(values), width):
        if math.sqrt(sum(x * x for x in values[i:i + width])) < 1e-9:
            return i // width
    return None
