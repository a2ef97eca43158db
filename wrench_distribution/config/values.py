"""Checks of one parameter value against its spec (no ROS import).

The one place where a value from a file, a ``ros2 param set`` or a problem file becomes the
declared Python type: a double is a ``float`` whether it was written ``4`` or ``4.0``, an
array is a ``list``; a value of another type, not finite or out of range is refused with a
message naming the parameter and its accepted values.
"""
from __future__ import annotations

import math
from typing import Any

from .schema import BOOL, ConfigError, DOUBLE, DOUBLE_ARRAY, INTEGER, INTEGER_ARRAY, ParamSpec, STRING, STRING_ARRAY


def is_finite_number(x: Any) -> bool:
    """Tell whether ``x`` is an int or float (not a bool) and finite.

    :param x: any value.
    :return: True for a finite number.
    """
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check_param_value(spec: ParamSpec, value: Any) -> Any:
    """Check one value against its spec and return it normalised.

    :param spec: the parameter spec.
    :param value: the value (from YAML, a ROS parameter or a problem file).
    :return: the value as the declared Python type (float for doubles, list for arrays).
    :raises ConfigError: naming the parameter and its accepted values.
    """
    def fail(why: str) -> ConfigError:
        return ConfigError(f"parameter '{spec.name}': {why}; accepted: "
                           f'{spec.constraint_text()}')

    if spec.type.endswith('_array'):
        return _check_array(spec, value, fail)
    return _check_scalar(spec, value, fail)


def _check_scalar(spec: ParamSpec, value: Any, fail) -> Any:
    """Check a string, bool, double or integer value (see :func:`check_param_value`)."""
    t = spec.type
    if t == STRING:
        return _check_string(spec, value, fail, 'a string')
    if t == BOOL:
        if not isinstance(value, bool):
            raise fail(f'expected true or false, got {value!r}')
        return value
    if t in (DOUBLE, INTEGER):
        if t == INTEGER and (isinstance(value, bool) or not isinstance(value, int)):
            raise fail(f'expected an integer, got {value!r}')
        if not is_finite_number(value):
            raise fail(f'expected a finite number, got {value!r}')
        v = float(value) if t == DOUBLE else int(value)
        if spec.minimum is not None and (v < spec.minimum or (spec.minimum_excluded
                                                              and v == spec.minimum)):
            raise fail(f'{v} is too small')
        if spec.maximum is not None and v > spec.maximum:
            raise fail(f'{v} is too large')
        if spec.accepted is not None and v not in spec.accepted:
            raise fail(f'{v} is not accepted')
        return v
    raise fail(f'unknown type {t}')  # pragma: no cover


def _check_string(spec: ParamSpec, value: Any, fail, expected: str) -> str:
    """Check a string, or one entry of a string array, against the accepted values."""
    if not isinstance(value, str):
        raise fail(f'expected {expected}, got {value!r}')
    if spec.accepted is not None and value not in spec.accepted:
        raise fail(f'{value!r} is not accepted')
    return value


def _check_array(spec: ParamSpec, value: Any, fail) -> list:
    """Check an array value (see :func:`check_param_value`)."""
    t = spec.type
    if isinstance(value, (str, bytes)):
        raise fail(f'expected a list, got {value!r}')
    if not isinstance(value, (list, tuple)):
        try:
            value = list(value)  # numpy arrays, array.array from rclpy
        except TypeError:
            raise fail(f'expected a list, got {value!r}') from None
    out = list(value)
    if t == STRING_ARRAY:
        return [_check_string(spec, v, fail, 'strings') for v in out]
    if t == DOUBLE_ARRAY:
        res = []
        for v in out:
            if not is_finite_number(v) and not (hasattr(v, '__float__') and math.isfinite(float(v))):
                raise fail(f'expected finite numbers, got {v!r}')
            res.append(float(v))
        _check_entries(spec, res, fail)
        return res
    if t == INTEGER_ARRAY:
        res = []
        for v in out:
            if isinstance(v, bool) or not (isinstance(v, int) or hasattr(v, '__index__')):
                raise fail(f'expected integers, got {v!r}')
            res.append(int(v))
        return res
    raise fail(f'unknown type {t}')  # pragma: no cover


def _check_entries(spec: ParamSpec, values: list, fail) -> None:
    """Refuse an entry of a double array beyond the spec's bounds (its physical range)."""
    for i, v in enumerate(values):
        low = spec.minimum is not None and (v < spec.minimum or (spec.minimum_excluded and v == spec.minimum))
        if low or (spec.maximum is not None and v > spec.maximum):
            bound = (f'{">" if spec.minimum_excluded else ">="} {spec.minimum:g}' if low
                     else f'<= {spec.maximum:g}')
            raise fail(f'entry {i} ({v:g}) is out of its bounds ({bound})')
