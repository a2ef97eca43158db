"""Declare a node's parameters from the pure schema in :mod:`wrench_distribution.config`."""
import math
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Set, Tuple

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
from rclpy.exceptions import (InvalidParameterTypeException, InvalidParameterValueException,
                              ParameterUninitializedException)
from rclpy.node import Node
from rclpy.parameter import Parameter

from wrench_distribution.config.nodes import build_config
from wrench_distribution.config.safety import asked_text, RefusedChanges, UnsafeChangeError
from wrench_distribution.config.schema import ConfigError, ParamSpec
from wrench_distribution.config.validation import unknown_message, validate_params

#: What bad parameters raise while a node reads its configuration: the runner exits 2 on them,
#: a managed node's configure fails on them (the message names the parameter).
CONFIG_ERRORS = (ConfigError, InvalidParameterTypeException, InvalidParameterValueException)
#: ``check(params) -> (reason or None, plan)`` of :func:`add_parameter_callbacks` (reason: a
#: message or the ``ValueError`` that refused the request).
CheckFn = Callable[[list], Tuple[Optional[str], Any]]
#: ``apply(plan)`` of :func:`add_parameter_callbacks`.
ApplyFn = Callable[[Any], None]
#: Where the refusals of undeclared names are kept (one entry: names are the requester's choice).
UNDECLARED = '(undeclared)'

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


def declare_from_specs(node: Node, specs: Sequence[ParamSpec],
                       given: Optional[Set[str]] = None) -> Tuple[Dict[str, object], Set[str]]:
    """Declare every parameter; return the values (defaults where not given) and the names given.

    Each parameter is declared with its static type and no value, so that rclpy tells whether
    it was given (a parameter file, ``-p``, the overrides of a launch file or of a node made in
    a process): it is then set, else uninitialised and set here to its default. An empty list
    has no ROS type of its own (rclpy would infer a byte array): declared this way, it is a
    typed empty array that ``ros2 param get`` and ``ros2 param dump`` show as ``[]``. Type
    mismatches in overrides raise rclpy's ``InvalidParameterTypeException``, which the caller
    reports. A parameter the node has declared already (a managed node configured again) is
    read as it is now.

    :param node: the node.
    :param specs: the parameter specs.
    :param given: the names given so far, updated in place (a managed node keeps it across
        its configures; None: a new set).
    :return: ``(name -> Python value, the names given)``.
    """
    values: Dict[str, object] = {}
    given = set() if given is None else given
    for spec in specs:
        if node.has_parameter(spec.name):
            values[spec.name] = read_value(node, spec)
            continue
        try:
            if _declare(node, spec):
                given.add(spec.name)
        except InvalidParameterTypeException:
            if spec.type not in _INTEGER_FORMS:
                raise
            _declare_from_integers(node, spec)
            given.add(spec.name)
        values[spec.name] = read_value(node, spec)
    return values, given


def _declare(node: Node, spec: ParamSpec) -> bool:
    """Declare one parameter with its static type (see :func:`declare_from_specs`).

    :return: whether it was given.
    """
    writable = descriptor_for(spec)
    writable.read_only = False  # to set the default once; restored just below
    node.declare_parameter(spec.name, _TYPES[spec.type][1], writable)
    try:
        node.get_parameter(spec.name)
        given = True
    except ParameterUninitializedException:  # not given: its default
        node.set_parameters([typed_parameter(spec, spec.default)])
        given = False
    node.set_descriptor(spec.name, descriptor_for(spec))
    return given


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


def retyped(params: list, specs: Mapping[str, ParamSpec]) -> list:
    """Pre-set callback body: a request typed as a file would be (rclpy >= Iron).

    An empty array of any type becomes the declared array type (``ros2 param set /node
    internal_load "[]"`` sends an empty array whose type the client guessed), and an integer
    (array) set on a double (array) parameter becomes that double (``ros2 param set /node
    torque_share 1``), as the same value in a parameter file is read. Without this, rclpy
    refuses both as the wrong type before the node sees them.

    :param params: the requested parameters.
    :param specs: schema by name.
    :return: the parameters, retyped.
    """
    out = []
    for p in params:
        spec = specs.get(p.name)
        v = p.value
        if spec is None or p.type_ == _TYPES[spec.type][1]:
            out.append(p)
        elif spec.type.endswith('_array') and isinstance(v, (list, tuple)) and len(v) == 0:
            out.append(typed_parameter(spec, []))
        elif spec.type in _INTEGER_FORMS and p.type_ == _INTEGER_FORMS[spec.type]:
            out.append(typed_parameter(spec, [float(x) for x in v] if spec.type.endswith('_array')
                                       else float(v)))
        else:
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


def unknown_overrides(specs: Sequence[ParamSpec], given: Mapping[str, object]) -> list:
    """Names given to the node (params file, command line) that it does not declare.

    :param specs: the declared specs.
    :param given: the parameters given (:func:`ros_args_parameters`).
    :return: sorted unknown names.
    """
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


def requested_changes(params, specs: Mapping[str, ParamSpec]) -> Dict[str, object]:
    """Return the values a set-parameters request asks for, by name (arrays as lists, unset as ``[]``).

    :param params: the ``rclpy.parameter.Parameter`` list of the request.
    :param specs: schema by name.
    :return: name -> value of the node's own parameters (rclpy's, ``use_sim_time``, are
        rclpy's business); every check is the configuration's
        (:func:`~wrench_distribution.config.changed_config`).
    """
    out: Dict[str, object] = {}
    for p in params:
        spec = specs.get(p.name)
        if spec is not None:
            value = param_value_of(p)
            out[p.name] = [] if value is None and spec.type.endswith('_array') else value
    return out


def declare_and_validate(node: Node, specs: Sequence[ParamSpec], kind: str,
                         given: Optional[Set[str]] = None) -> Tuple[dict, Set[str]]:
    """Declare every parameter of a node, refuse unknown overrides, validate the values.

    A name given to the node (parameter file, command line) that it does not declare is an
    error naming the nearest declared names, or a warning with ``allow_unknown_parameters``.
    A node with a ``calibration_file`` takes its calibration values from it
    (:mod:`.calibration_file`).

    :param node: the node.
    :param specs: its parameter schema.
    :param kind: the node kind (:data:`~wrench_distribution.config.index.INDEX`).
    :param given: the names given so far (:func:`declare_from_specs`).
    :return: ``(validated values, the names given)``.
    :raises ConfigError: naming the parameter and its accepted values.
    """
    import sys
    from wrench_distribution.config.check import param_file_problems
    from .calibration_file import declaration_specs, take_calibration
    misread = param_file_problems(sys.argv)
    if misread:
        raise ConfigError('parameter file refused: ' + '; '.join(misread))
    values, given = declare_from_specs(node, declaration_specs(specs, kind), given)
    values = take_calibration(node, specs, kind, values, sys.argv)
    unknown = unknown_overrides(specs, ros_args_parameters(sys.argv, node.get_name()))
    if unknown:
        message = unknown_message(kind, unknown)
        if not values.get('allow_unknown_parameters', False):
            raise ConfigError(f'{message}; set allow_unknown_parameters: true to run on with a '
                              'warning')
        node.get_logger().warning(f'{message}: ignored (allow_unknown_parameters)')
    return validate_params(kind, values), given


def declare_config(node: Node, specs: Sequence[ParamSpec], kind: str,
                   given: Optional[Set[str]] = None):
    """Declare the parameters of the distributor or the analyzer and build its configuration.

    The names given count as set (the package's default limits are a WARN only when unset).
    A managed node calls it at each configure: the parameters declared by an earlier one are
    read as they are now (:func:`declare_from_specs`).

    :param node: the node.
    :param specs: its parameter schema.
    :param kind: ``'distributor'`` or ``'analyzer'``.
    :param given: the names given so far, updated in place (None: a new set).
    :return: the node's configuration (:mod:`wrench_distribution.config.nodes`).
    :raises ConfigError: naming the parameter and its accepted values.
    """
    values, given = declare_and_validate(node, specs, kind, given)
    return build_config(kind, values, frozenset(given))


#: Parameter type -> its name in messages.
_TYPE_NAMES = {t: name.replace('_', ' ') for name, (_, t) in _TYPES.items()}


def rclpy_refusal(node: Node, param: Parameter, specs: Mapping[str, ParamSpec]) -> Optional[str]:
    """Say why rclpy will refuse to set a parameter before the node's on-set callback sees it.

    rclpy checks each parameter of a request against its descriptor first: an undeclared name,
    a read-only parameter, a value of another type than the declared one (or none), a number
    outside the declared range. The same checks here, on the public descriptor, so that the
    pre-set callback can name the attempt; what rclpy decides is unchanged.

    :param node: the node.
    :param param: one requested parameter (after :func:`retyped`).
    :param specs: schema by name (for the nearest names of an undeclared one).
    :return: the reason, naming the parameter and what is accepted; None when rclpy passes it on.
    """
    from wrench_distribution.config.validation import did_you_mean
    name = param.name
    if not node.has_parameter(name):
        return (f"parameter '{name}' is not declared by {node.get_name()} "
                f'({did_you_mean(sorted(specs), name)})')
    descriptor = node.describe_parameter(name)
    if descriptor.read_only:
        return (f"parameter '{name}' is read-only: fixed at start-up (a parameter file or the "
                'command line sets it), never at runtime')
    if descriptor.dynamic_typing:
        return None
    declared = Parameter.Type(descriptor.type)
    if param.type_ != declared:
        given = 'no value' if param.type_ == Parameter.Type.NOT_SET else \
            f'a {_TYPE_NAMES.get(param.type_, param.type_.name.lower())} ({param.value!r:.80})'
        return f"parameter '{name}': {given} refused; accepted: a {_TYPE_NAMES.get(declared, declared.name.lower())}"
    return _out_of_range(name, param, descriptor)


def _out_of_range(name: str, param: Parameter, descriptor: ParameterDescriptor) -> Optional[str]:
    """Apply rclpy's range check to a double or an integer (the bounds themselves are accepted)."""
    bounds = (descriptor.floating_point_range if param.type_ == Parameter.Type.DOUBLE else
              descriptor.integer_range if param.type_ == Parameter.Type.INTEGER else [])
    if not bounds:
        return None
    low, high = sorted((bounds[0].from_value, bounds[0].to_value))
    value = param.value
    if param.type_ == Parameter.Type.DOUBLE and any(
            math.isclose(value, edge, rel_tol=Node.PARAM_REL_TOL) for edge in (low, high)):
        return None
    if low <= value <= high:
        return None
    return f"parameter '{name}': {value!r} refused; accepted: {low:g} to {high:g}"


def _noted(refused: Optional[RefusedChanges], node: Node, params, reason, names) -> None:
    """Count, keep and log one refused request (nothing without a record)."""
    if refused is None:
        return
    line = refused.note(asked_text([(p.name, param_value_of(p)) for p in params]), str(reason),
                        isinstance(reason, UnsafeChangeError), names)
    if line is not None:
        node.get_logger().warning(line)


def _named_in(reason: str, params) -> list:
    """Return the parameters of a request a refusal names (all of them when it names none)."""
    named = [p.name for p in params if f"'{p.name}'" in reason]
    return named or [p.name for p in params]


def add_parameter_callbacks(node: Node, specs: Mapping[str, ParamSpec], check: CheckFn,
                            apply: ApplyFn, refused: Optional[RefusedChanges] = None) -> None:
    """Register the standard parameter shell: validate on set, apply after the set, name refusals.

    ``check(params)`` runs in the on-set callback and must not change the node: it returns
    ``(reason, plan)``, ``reason`` None when the request is accepted (else a message, or the
    ``ValueError`` that refused it: an ``UnsafeChangeError`` counts as unsafe). ``apply(plan)``
    then changes the node. On rclpy >= Iron it runs in the post-set callback, once rclpy has
    stored the new values; Humble has no post-set callback, so there it runs at the end of
    the on-set callback, after every check passed (the node's only on-set callback, so the
    set cannot fail after it). On Iron and later the pre-set callback retypes the request
    (:func:`retyped`; on Humble, an empty array or an integer for a double is refused by
    rclpy's type check) and names what rclpy will refuse before the on-set callback
    (:func:`rclpy_refusal`). Every refusal goes to ``refused``: counted, kept per parameter,
    logged (rate-limited per parameter).

    rclpy calls these callbacks once per parameter for ``~/set_parameters`` (each parameter
    set on its own: a request may be applied in part) and once for the whole request for
    ``~/set_parameters_atomically`` (applied whole or refused whole).

    :param node: the node.
    :param specs: schema by name.
    :param check: validates a request and returns ``(reason or None, plan)``.
    :param apply: applies an accepted plan.
    :param refused: the node's record of refused requests (None: not recorded).
    """
    staged: list = []
    post_set = hasattr(node, 'add_post_set_parameters_callback')  # rclpy >= Iron

    def pre_set(params) -> list:
        params = retyped(params, specs)
        reasons = [(p.name, why) for p in params for why in [rclpy_refusal(node, p, specs)] if why]
        if reasons:  # rclpy refuses the request before on_set: named here
            _noted(refused, node, params, '; '.join(why for _, why in reasons),
                   [UNDECLARED if not node.has_parameter(n) else n for n, _ in reasons])
        return params

    def on_set(params) -> SetParametersResult:
        staged.clear()  # a plan whose set failed after this callback is never applied
        reason, plan = check(params)
        if reason is not None:
            _noted(refused, node, params, reason, _named_in(str(reason), params))
            return SetParametersResult(successful=False, reason=str(reason))
        if post_set:
            staged.append(plan)
        else:
            apply(plan)
        return SetParametersResult(successful=True)

    def on_post_set(params) -> None:
        while staged:
            apply(staged.pop(0))

    if hasattr(node, 'add_pre_set_parameters_callback'):  # rclpy >= Iron
        node.add_pre_set_parameters_callback(pre_set)
    node.add_on_set_parameters_callback(on_set)
    if post_set:
        node.add_post_set_parameters_callback(on_post_set)
