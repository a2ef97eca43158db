"""The judge of a parameter file: every rule the nodes and rcl's parser apply, with the fix.

``wrench-distribution check-config FILE`` reads a ROS parameter file that may also hold
other nodes' sections (a controller manager's, the controllers'). Only this package's
sections are judged: ``wrench_distributor``, ``wrench_analyzer`` and the simulator's nodes
(``object_sim``, ``object_controller``, ``baseline_distributor``), each merged with the
``/**`` wildcard as rcl merges it; the other sections are listed as ignored. Every section's
problems are reported in one run, each a :class:`~.findings.Problem` with its fix:

- rcl's parser, on the whole file (:mod:`.rcl`: it parses every section before any node's
  code runs): a list mixing types or holding lists;
- the node's rules, by the node's own path: unknown names (with the nearest declared
  names), each value (:mod:`.values`; an integer where a double is declared is read as that
  double: a warning, other ROS tools type it by its form), the cross-checks
  (:mod:`.cross_checks`) and the configuration the node builds (:mod:`.nodes`: handles
  parsed and judged against the effectors, core objects);
- plausibility (:mod:`.plausibility`): warnings only.

Errors stop a node; warnings do not. The disagreements between the distributor's and the
analyzer's sections (:func:`.check.config_findings`) are compared once both are free of errors.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from .cross_checks import cross_check_errors
from .findings import Judgement, Problem
from .index import INDEX, NODE_KINDS
from .loading import flatten_parameters, node_of, RCL_EMPTY
from .nodes import build_config
from .plausibility import plausibility
from .rcl import empty_lists, integer_for_double, number_text, refused_lists, shortened
from .schema import ConfigError
from .validation import did_you_mean, unknown_names
from .values import check_param_value

WILDCARDS = ('/**', '**')
#: The node refuses nothing here; the parameter that turns unknown names into warnings.
ALLOW_UNKNOWN = 'allow_unknown_parameters'


def _section_params(key: Any, section: Any) -> tuple:
    """``(flat parameters, problem or None)`` of one section of the file."""
    if not isinstance(section, Mapping) or 'ros__parameters' not in section:
        return {}, f"section '{key}' has no 'ros__parameters' mapping"
    params = section['ros__parameters']
    if params is None:
        return {}, None
    if not isinstance(params, Mapping):
        return {}, f"'{key}.ros__parameters' is not a mapping"
    return flatten_parameters(params), None


def _sections(data: Mapping, out: Judgement) -> tuple:
    """``(wildcard parameters, {node: own parameters})``; other sections go to ``out``."""
    wildcard: dict = {}
    own: dict = {}
    for key, section in data.items():
        name = node_of(key)
        if str(key) in WILDCARDS or name in NODE_KINDS:
            params, problem = _section_params(key, section)
            if problem:
                out.problems.append(Problem('error', name if name in NODE_KINDS else str(key),
                                            'ros__parameters', problem,
                                            f"write '{key}:' then 'ros__parameters:' then the parameters"))
            (wildcard if str(key) in WILDCARDS else own.setdefault(name, {})).update(params)
        else:
            out.ignored.append(str(key))
    return wildcard, own


def judge_document(data: Mapping, required: Sequence[str] = ()) -> Judgement:
    """Judge every section of this package's nodes in a parsed parameter file.

    :param data: the parsed file (a mapping of section keys to sections).
    :param required: nodes whose section must be there (the ``/**`` wildcard alone counts).
    :return: the :class:`~.findings.Judgement` (the cross-section findings are not in it).
    """
    out = Judgement(problems=[Problem('error', 'file', path, message, fix)
                              for path, message, fix in refused_lists(data)])
    out.problems += [Problem('warning', 'file', path, 'an empty list: rcl gives it no value, so '
                             "the node keeps the parameter's default", 'omit it, or write its values')
                     for path in empty_lists(data)]
    wildcard, own = _sections(data, out)
    out.controllers.update({node_of(k): _section_params(k, s)[0] for k, s in data.items()
                            if str(k) in out.ignored})
    for name in required:
        if name in own:
            continue
        if any(str(k) in WILDCARDS for k in data):
            own[name] = {}
        else:
            keys = ', '.join(map(str, data)) or 'none'
            out.problems.append(Problem('error', name, '', f"no section for node '{name}' (keys: {shortened(keys)})",
                                        f'add "{name}:" (or "/**:") with "ros__parameters:"'))
    for name, params in own.items():
        kind = NODE_KINDS[name]
        out.sections[name] = kind
        merged = dict(wildcard, **params)
        values = _judge_section(name, kind, merged, out.problems)
        if values is not None:
            out.values[name] = values
            _judge_config(name, kind, values, merged, out)
    return out


def _judge_config(name: str, kind: str, values: dict, given: Mapping, out: Judgement) -> None:
    """Build the node's configuration as the node does (its conversions refuse what it refuses)."""
    if kind not in ('distributor', 'analyzer'):
        return
    try:
        out.configs[name] = build_config(kind, values, frozenset(given) & frozenset(INDEX[kind]))
    except ConfigError as error:
        out.problems.append(Problem('error', name, parameter_of(str(error)), str(error)))
        del out.values[name]


def _judge_section(name: str, kind: str, params: dict, problems: list) -> Optional[dict]:
    """Judge one node's parameters; return its validated values, or None after an error."""
    index = INDEX[kind]
    before = len([p for p in problems if p.severity == 'error'])
    allow = params.get(ALLOW_UNKNOWN) is True
    for unknown in unknown_names(kind, params):
        problems.append(Problem(
            'warning' if allow else 'error', name, unknown,
            'not a parameter of the ' + kind + (': the node ignores it (allow_unknown_parameters)'
                                                if allow else ': the node refuses to start'),
            did_you_mean(index, unknown)))
    checked = {}
    for pname, value in params.items():
        spec = index.get(pname)
        if spec is None:
            continue
        try:
            checked[pname] = check_param_value(spec, value)
        except ConfigError as e:
            problems.append(Problem('error', name, pname, str(e), _type_fix(spec, value)))
            continue
        note = integer_for_double(spec, value)
        if note:
            problems.append(Problem('warning', name, pname, note, _number_fix(value)))
        if value == RCL_EMPTY:
            problems.append(Problem('warning', name, pname, "an empty value (or '~'): rcl reads "
                                    "the string '~', which the node takes as it is",
                                    'omit the parameter for its default'))
    values = {n: checked[n] if n in checked else (list(s.default) if isinstance(s.default, list)
                                                  else s.default) for n, s in index.items()}
    for error in cross_check_errors(kind, values):
        problems.append(Problem('error', name, parameter_of(str(error)), str(error)))
    problems.extend(plausibility(name, values))
    return values if len([p for p in problems if p.severity == 'error']) == before else None


def parameter_of(message: str) -> str:
    """Return the parameter a :class:`ConfigError` message names (``parameter 'x': ...``)."""
    head, _, rest = message.partition("'")
    return rest.partition("'")[0] if head.rstrip().endswith(('parameter', 'parameters')) else ''


def _number_fix(value: Any) -> str:
    if isinstance(value, list):
        return f"write [{shortened(', '.join(number_text(v) for v in value))}]"
    return f'write {number_text(value)}'


def _type_fix(spec, value: Any) -> str:
    if value == RCL_EMPTY:
        return "rcl reads an empty value (or '~') as the string '~': omit the parameter for its default"
    if spec.type == 'integer' and isinstance(value, float) and value.is_integer():
        return f'write {int(value)} (an integer, no decimal point)'
    return f'write {spec.constraint_text()}'
