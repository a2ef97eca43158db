"""Declare a node's parameters from the pure schema in :mod:`wrench_distribution.config`."""
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Set, Tuple

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
from rclpy.exceptions import InvalidParameterTypeException, ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter

from wrench_distribution.config.schema import ConfigError, ParamSpec
from wrench_distribution.config.validation import check_param_value, unknown_message, validate_params

#: ``check(params) -> (reason or None, plan)`` of :func:`add_parameter_callbacks`.
CheckFn = Callable[[list], Tuple[Optional[str], Any]]
#: ``apply(plan)`` of :func:`add_parameter_callbacks`.
ApplyFn = Callable[[Any], None]

_TYPES = {
    'string': (ParameterType.PARAMETER_STRING, Parameter.Type.STRING),
    'double': (ParameterType.PARAMETER_DOUBLE, Parameter.Type.DOUBLE),
    'integer': (ParameterType.PARAMETER_INTEGER, Parameter.Type.INTEGER),
    'bool': (ParameterType.PARAMETER_BOOL, Parameter.Type.BOOL),
    'string_array': (ParameterType.PARAMETER_STRING_ARRAY, Parameter.Type.STRING_ARRAY),
    'double_array': (ParameterType.PARAMETER_DOUBLE_ARRAY, Parameter.Type.DOUBLE_ARRAY),
    'integer_array': (ParameterType.PARAMETER_INTEGER_ARRAY, Parameter.Type.INTEGER_ARRAY),
}


def descriptor_for(spec: ParamSpec) -> ParameterDescriptor:
    """Build the ``ParameterDescriptor`` of one spec.

    :param spec: the parameter spec.
    :return: descriptor with description, type, read_only, constraints and range.
    """
    d = ParameterDescriptor()
    d.name = spec.name
    d.type = _TYPES[spec.type][0]
    d.description = spec.description
    d.read_only = spec.read_only
    d.additional_constraints = spec.constraint_text()
    if spec.type == 'double' and spec.minimum is not None and spec.maximum is not None:
        d.floating_point_range = [FloatingPointRange(from_value=float(spec.minimum),
                                                     to_value=float(spec.maximum), step=0.0)]
    elif spec.type == 'integer' and spec.minimum is not None and spec.maximum is not None:
        d.integer_range = [IntegerRange(from_value=int(spec.minimum),
                                        to_value=int(spec.maximum), step=0)]
    return d


def typed_parameter(spec: ParamSpec, value: object) -> Parameter:
    """Make a ``Parameter`` of the spec's declared type (also for an empty array).

    :param spec: the parameter spec.
    :param value: the Python value.
    :return: the parameter.
    """
    return Parameter(spec.name, _TYPES[spec.type][1], list(value) if isinstance(
        value, (list, tuple)) else value)


def declare_from_specs(node: Node, specs: Sequence[ParamSpec]) -> Dict[str, object]:
    """Declare every parameter and return the values (defaults where not overridden).

    An empty list has no ROS type of its own (rclpy would infer a byte array), so an
    empty-array default is declared with its static type and then set to a typed empty
    array: ``ros2 param get`` and ``ros2 param dump`` show ``[]`` like any other value.
    Type mismatches in overrides raise rclpy's ``InvalidParameterTypeException``, which
    the caller reports.

    :param node: the node.
    :param specs: the parameter specs.
    :return: name -> Python value.
    """
    values: Dict[str, object] = {}
    for spec in specs:
        try:
            _declare(node, spec)
        except InvalidParameterTypeException:
            if spec.type not in _INTEGER_FORMS:
                raise
            _declare_from_integers(node, spec)
        values[spec.name] = read_value(node, spec)
    return values


def _declare(node: Node, spec: ParamSpec) -> None:
    """Declare one parameter with its static type (see :func:`declare_from_specs`)."""
    desc = descriptor_for(spec)
    default = spec.default
    if isinstance(default, list) and not default:
        writable = descriptor_for(spec)
        writable.read_only = False  # to set the typed [] once; restored just below
        node.declare_parameter(spec.name, _TYPES[spec.type][1], writable)
        try:
            node.get_parameter(spec.name)
        except ParameterUninitializedException:  # not overridden: a typed []
            node.set_parameters([typed_parameter(spec, [])])
        node.set_descriptor(spec.name, desc)
    else:
        node.declare_parameter(spec.name, default, desc)


#: Declared type -> the integer type rcl gives a value written without a decimal point.
_INTEGER_FORMS = {'double': Parameter.Type.INTEGER, 'double_array': Parameter.Type.INTEGER_ARRAY}


def _declare_from_integers(node: Node, spec: ParamSpec) -> None:
    """Declare a double parameter whose override rcl typed as an integer (``object_mass: 4``).

    rclpy refuses an INTEGER override of a DOUBLE parameter at declare time (nothing is
    stored then). So it is declared again with dynamic typing, which takes the override as
    it is; an integer (array) is then turned into the double (array) it means by
    ``set_descriptor``'s alternative value, under the parameter's own static descriptor: from
    then on it is a double like any other. Any other type is refused as before.

    :param node: the node.
    :param spec: a ``double`` or ``double_array`` spec.
    :raises InvalidParameterTypeException: the override is neither a double nor an integer.
    """
    loose = descriptor_for(spec)
    loose.read_only = False
    loose.dynamic_typing = True
    node.declare_parameter(spec.name, None, loose)  # the override is there: it is taken
    given = node.get_parameter(spec.name)
    if given.type_ not in (_TYPES[spec.type][1], _INTEGER_FORMS[spec.type]):
        node.undeclare_parameter(spec.name)
        raise InvalidParameterTypeException(given, _TYPES[spec.type][1].name)
    value = given.value
    doubles = [float(x) for x in value] if spec.type.endswith('_array') else float(value)
    node.set_descriptor(spec.name, descriptor_for(spec),
                        Parameter(spec.name, _TYPES[spec.type][1], doubles).get_parameter_value())


def read_value(node: Node, spec: ParamSpec) -> object:
    """Return the current value of a declared parameter (arrays as lists).

    :param node: the node.
    :param spec: the parameter spec.
    :return: the value as a Python object.
    """
    try:
        v = node.get_parameter(spec.name).value
    except ParameterUninitializedException:
        v = None
    if v is None:
        return [] if spec.type.endswith('_array') else spec.default
    if spec.type.endswith('_array'):
        return list(v)
    return v


def coerce_empty_arrays(params: list, specs: Mapping[str, ParamSpec]) -> list:
    """Pre-set callback body: an empty array of any type becomes the declared array type.

    ``ros2 param set /node internal_load "[]"`` sends an empty array whose type the client
    guessed; without this, rclpy refuses it as the wrong type.

    :param params: the requested parameters.
    :param specs: schema by name.
    :return: the parameters, empty arrays retyped.
    """
    out = []
    for p in params:
        spec = specs.get(p.name)
        v = p.value
        if (spec is not None and spec.type.endswith('_array') and p.type_ != _TYPES[spec.type][1]
                and isinstance(v, (list, tuple)) and len(v) == 0):
            p = typed_parameter(spec, [])
        out.append(p)
    return out


def ros_args_parameters(argv: Sequence[str], node_name: str) -> Dict[str, object]:
    """Parameters given to a node on its command line (``--params-file``, ``-p``).

    Read from the arguments themselves (rclpy keeps its overrides private).

    :param argv: the process arguments.
    :param node_name: node name (sections of parameter files are matched on it).
    :return: name -> value (unreadable files and other nodes' sections are skipped).
    """
    import yaml
    from wrench_distribution.config.loading import read_ros_params_yaml
    out: Dict[str, object] = {}
    args = list(argv)
    for i, a in enumerate(args[:-1]):
        nxt = args[i + 1]
        if a == '--params-file':
            try:
                out.update(read_ros_params_yaml(nxt, node_name))
            except ConfigError:
                continue
        elif a in ('-p', '--param') and ':=' in nxt:
            name, _, text = nxt.partition(':=')
            try:
                out[name] = yaml.safe_load(text)
            except yaml.YAMLError:
                out[name] = text
    return out


def unknown_overrides(node: Node, specs: Sequence[ParamSpec], argv: Sequence[str] = ()) -> list:
    """Names given to the node (params file, command line) that it does not declare.

    :param node: the node.
    :param specs: the declared specs.
    :param argv: the process arguments (``sys.argv`` when empty).
    :return: sorted unknown names.
    """
    import sys
    given = ros_args_parameters(list(argv) or sys.argv, node.get_name())
    known = {s.name for s in specs} | {'use_sim_time', 'start_type_description_service'}
    return sorted(k for k in given if k not in known and not k.startswith('qos_overrides.'))


def param_value_of(p: Parameter) -> object:
    """Python value of an incoming ``Parameter`` (arrays as lists, NOT_SET as None).

    :param p: the parameter.
    :return: value.
    """
    v = p.value
    if isinstance(v, (list, tuple)) or hasattr(v, 'tolist'):
        return list(v)
    return v


def checked_changes(params, specs: Mapping[str, ParamSpec], current: Mapping[str, object]
                    ) -> Tuple[Optional[str], Dict[str, object], Set[str]]:
    """Apply a set-parameters request to a copy of the configuration, each value checked.

    :param params: the ``rclpy.parameter.Parameter`` list of the request.
    :param specs: schema by parameter name (unknown names are left to rclpy).
    :param current: the node's current configuration values.
    :return: ``(reason, new, touched)``: ``reason`` is None when every value is accepted,
        else the message to refuse the request with.
    """
    new = dict(current)
    touched = set()
    for p in params:
        spec = specs.get(p.name)
        if spec is None:
            continue
        if spec.read_only:
            return f"parameter '{p.name}' is read-only", new, touched
        value = param_value_of(p)
        if value is None and spec.type.endswith('array'):
            value = []
        try:
            new[p.name] = check_param_value(spec, value)
        except ConfigError as e:
            return str(e), new, touched
        touched.add(p.name)
    return None, new, touched


def declare_and_validate(node: Node, specs: Sequence[ParamSpec], kind: str) -> dict:
    """Declare every parameter of a node, refuse unknown overrides, validate the values.

    A name given to the node (parameter file, command line) that it does not declare is an
    error naming the nearest declared names, or a warning with ``allow_unknown_parameters``.
    A node with a ``calibration_file`` takes its calibration values from it
    (:mod:`.calibration_file`).

    :param node: the node.
    :param specs: its parameter schema.
    :param kind: ``'distributor'`` or ``'analyzer'`` (for ``params.validate_params``).
    :return: the validated configuration.
    :raises ConfigError: naming the parameter and its accepted values.
    """
    import sys
    from .calibration_file import declaration_specs, take_calibration
    values = take_calibration(node, specs, kind, declare_from_specs(node, declaration_specs(specs, kind)),
                              sys.argv)
    unknown = unknown_overrides(node, specs)
    if unknown:
        message = unknown_message(kind, unknown)
        if not values.get('allow_unknown_parameters', False):
            raise ConfigError(f'{message}; set allow_unknown_parameters: true to run on with a '
                              'warning')
        node.get_logger().warning(f'{message}: ignored (allow_unknown_parameters)')
    return validate_params(kind, values)


def add_parameter_callbacks(node: Node, specs: Mapping[str, ParamSpec], check: CheckFn,
                            apply: ApplyFn) -> None:
    """Register the standard parameter shell: validate on set, apply after the set.

    ``check(params)`` runs in the on-set callback and must not change the node: it returns
    ``(reason, plan)``, ``reason`` None when the request is accepted. ``apply(plan)`` then
    changes the node. On rclpy >= Iron it runs in the post-set callback, once rclpy has
    stored the new values; Humble has no post-set callback, so there it runs at the end of
    the on-set callback, after every check passed (the node's only on-set callback, so the
    set cannot fail after it). On Iron and later the empty-array retyping runs as the
    pre-set callback.

    :param node: the node.
    :param specs: schema by name.
    :param check: validates a request and returns ``(reason or None, plan)``.
    :param apply: applies an accepted plan.
    """
    staged: list = []
    post_set = hasattr(node, 'add_post_set_parameters_callback')  # rclpy >= Iron

    def on_set(params) -> SetParametersResult:
        staged.clear()  # a plan whose set failed after this callback is never applied
        reason, plan = check(params)
        if reason is not None:
            return SetParametersResult(successful=False, reason=reason)
        if post_set:
            staged.append(plan)
        else:
            apply(plan)
        return SetParametersResult(successful=True)

    def on_post_set(params) -> None:
        while staged:
            apply(staged.pop(0))

    if hasattr(node, 'add_pre_set_parameters_callback'):  # rclpy >= Iron
        node.add_pre_set_parameters_callback(lambda ps: coerce_empty_arrays(ps, specs))
    node.add_on_set_parameters_callback(on_set)
    if post_set:
        node.add_post_set_parameters_callback(on_post_set)
