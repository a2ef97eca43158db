"""ROS parameter declaration for the simulator and controller nodes (schema in code)."""
from __future__ import annotations

from typing import Mapping

from ..params import ParamSpec

_EMPTY_TYPES = {
    'effectors': 'string_array', 'contact_types': 'string_array',
    'sensor_signs': 'integer_array', 'internal_load_schedule': 'string_array',
}


def specs_from_defaults(defaults: Mapping, descriptions: Mapping | None = None) -> tuple:
    """Parameter specs whose types are those of the defaults.

    Empty lists are double arrays unless listed in ``_EMPTY_TYPES``.

    :param defaults: name -> default value.
    :param descriptions: name -> one-line description (optional).
    :return: tuple of :class:`ParamSpec`
    """
    out = []
    for name, value in defaults.items():
        if isinstance(value, bool):
            kind = 'bool'
        elif isinstance(value, int):
            kind = 'integer'
        elif isinstance(value, float):
            kind = 'double'
        elif isinstance(value, str):
            kind = 'string'
        elif not value:
            kind = _EMPTY_TYPES.get(name, 'double_array')
        elif isinstance(value[0], str):
            kind = 'string_array'
        elif isinstance(value[0], int) and not isinstance(value[0], bool):
            kind = 'integer_array'
        else:
            kind = 'double_array'
        text = (descriptions or {}).get(name, name.replace('_', ' '))
        out.append(ParamSpec(name, kind, value, text))
    return tuple(out)


def declare_and_read(node, defaults: Mapping, descriptions: Mapping | None = None) -> dict:
    """Declare every parameter of ``defaults`` on ``node`` and return the values.

    :param node: an rclpy node.
    :param defaults: name -> default.
    :param descriptions: name -> description.
    :return: name -> value (arrays as lists)
    """
    from ..ros.parameters import declare_from_specs
    return declare_from_specs(node, specs_from_defaults(defaults, descriptions))
