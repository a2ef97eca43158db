"""The judge of a parameter file: every rule the nodes and rcl's parser apply, with the fix.

``wrench-distribution check-config FILE`` reads a ROS parameter file that may also hold
other nodes' sections (a controller manager's, the controllers'). Only this package's
sections are judged: ``wrench_distributor``, ``wrench_analyzer`` and the simulator's nodes
(``object_sim``, ``object_controller``, ``baseline_distributor``), each merged with the
``/**`` wildcard as rcl merges it; the other sections are listed as ignored. Every section's
problems are reported in one run, each a :class:`Problem` with its fix:

- rcl's parser, on the whole file (it parses every section before any node's code runs):
  a list mixing types (``[0, 0.38]``: "Sequence should be of same type") or holding lists;
- the node's rules: unknown names (with the nearest declared names), types, ranges,
  lengths and the cross-checks of :mod:`.validation`; an integer where a double is declared
  is read as that double by the nodes (a warning: other ROS tools type it by its form);
- plausibility: lengths that look like millimetres, a centre of mass far from any contact,
  quaternions that are not unit (the nodes normalise them: a warning naming the rotation
  used), tool and object masses no wrist or arm carries, gravity that is not about 9.81.

Errors stop a node; warnings do not. The disagreements between the two sections
(:func:`.check.config_findings`) are compared once both sections are free of errors.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
import math
from typing import Any, Mapping, Optional

from .schema import ConfigError, DOUBLE, DOUBLE_ARRAY
from .validation import (check_param_value, cross_check_errors, did_you_mean, INDEX,
                         NODE_KINDS, unknown_names)

WILDCARDS = ('/**', '**')
#: A length beyond this (m) is no grasp on one object: most likely millimetres.
LONGEST_LENGTH = 5.0
#: A tool between a wrist sensor and the object heavier than this (kg) is implausible.
HEAVIEST_TOOL = 25.0
#: An object heavier than this (kg) is beyond any arm this package drives.
HEAVIEST_OBJECT = 1000.0
#: A quaternion whose norm differs from 1 by more than this is not a typed unit quaternion.
QUATERNION_TOLERANCE = 1e-3
STANDARD_GRAVITY = 9.81
#: The node refuses nothing here; the parameter that turns unknown names into warnings.
ALLOW_UNKNOWN = 'allow_unknown_parameters'
#: (parameter, width) of the lengths checked for millimetres.
_LENGTHS = (('contact_positions', 3), ('sensor_positions', 3), ('tool_coms', 3),
            ('object_com', 3), ('arm_base_positions', 3), ('initial_position', 3))
_QUATERNIONS = ('contact_orientations', 'sensor_orientations', 'initial_orientation',
                'arm_base_orientations')


@dataclass(frozen=True)
class Problem:
    """One problem of one section.

    :param severity: ``error`` (the node refuses to start, or rcl kills it) or ``warning``.
    :param section: the node (``wrench_analyzer``) or ``file`` for rcl's whole-file rules.
    :param parameter: the parameter (dotted path for rcl's rules).
    :param message: what is wrong, and what the node does with it.
    :param fix: what to write instead (empty when the message says it).
    """

    severity: str
    section: str
    parameter: str
    message: str
    fix: str = ''

    def text(self) -> str:
        """Return the problem as one line."""
        fix = f' Fix: {self.fix}' if self.fix else ''
        return f'{self.severity}: {self.section}: {self.parameter}: {self.message}{fix}'

    def as_dict(self) -> dict:
        """Return the problem as a JSON-ready dict."""
        return asdict(self)


@dataclass
class Judgement:
    """What check-config says about one file.

    :ivar sections: node name -> kind, for the sections judged.
    :ivar ignored: the other sections' keys (not this package's nodes).
    :ivar problems: errors and warnings, section by section.
    :ivar values: node name -> validated values, for the sections without errors.
    :ivar controllers: other sections, flattened (name -> parameters), for the findings.
    """

    sections: dict = field(default_factory=dict)
    ignored: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    values: dict = field(default_factory=dict)
    controllers: dict = field(default_factory=dict)

    @property
    def errors(self) -> list:
        """Return the problems of severity ``error``."""
        return [p for p in self.problems if p.severity == 'error']

    @property
    def warnings(self) -> list:
        """Return the problems of severity ``warning``."""
        return [p for p in self.problems if p.severity == 'warning']


# -- rcl's parser ------------------------------------------------------------------------
def _yaml_form(value: Any) -> str:
    """Return rcl's type of a YAML scalar (bool, integer, double, string)."""
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, int):
        return 'integer'
    if isinstance(value, float):
        return 'double'
    return 'string'


def _number_text(value: Any) -> str:
    return repr(float(value)) if isinstance(value, int) and not isinstance(value, bool) else repr(value)


def rcl_problems(data: Mapping) -> list:
    """Return the lists rcl's parser refuses, anywhere in the file (it parses every section).

    :param data: the parsed file.
    :return: one error per list that mixes types or holds a list (rcl reads a list of
        mappings, as nested names; this package's nodes refuse it by type).
    """
    out: list = []

    def walk(path: str, value: Any, depth: int) -> None:
        if depth > 64:
            return
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f'{path}.{k}' if path else str(k), v, depth + 1)
        elif isinstance(value, list):
            out.extend(_list_problems(path, value))
    walk('', data, 0)
    return out


def _list_problems(path: str, value: list) -> list:
    if any(isinstance(v, list) for v in value):
        return [Problem('error', 'file', path, 'rcl refuses a list of lists '
                        "('Sequences cannot be key'): every node started with this file exits "
                        'before its code runs', 'write one flat list of numbers or strings')]
    forms = {_yaml_form(v) for v in value if not isinstance(v, Mapping)}
    if len(forms) < 2:
        return []
    if forms == {'integer', 'double'}:
        fixed = ', '.join(_number_text(v) for v in value)
        return [Problem('error', 'file', path, 'rcl refuses a list that mixes integers and doubles '
                        "('Sequence should be of same type'): every node started with this file "
                        'exits before its code runs', f'write every entry with a decimal point: '
                        f'[{_short(fixed)}]')]
    return [Problem('error', 'file', path, f"rcl refuses a list of mixed types ({', '.join(sorted(forms))}: "
                    "'Sequence should be of same type'): every node started with this file exits "
                    'before its code runs', 'write every entry of one type (quote strings)')]


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + ' ...'


# -- sections ----------------------------------------------------------------------------
def _node_of(key: Any) -> str:
    return str(key).lstrip('/').split('/')[-1]


def _flatten(params: Mapping) -> dict:
    """``ros__parameters`` flattened with dots, like ROS does (lists are values)."""
    out: dict = {}
    stack = [('', params)]
    while stack:
        prefix, mapping = stack.pop()
        for k, v in mapping.items():
            name = f'{prefix}{k}'
            if isinstance(v, Mapping):
                stack.append((name + '.', v))
            else:
                out[name] = v
    return out


def _section_params(key: Any, section: Any) -> tuple:
    """``(flat parameters, problem or None)`` of one section of the file."""
    if not isinstance(section, Mapping) or 'ros__parameters' not in section:
        return {}, f"section '{key}' has no 'ros__parameters' mapping"
    params = section['ros__parameters']
    if params is None:
        return {}, None
    if not isinstance(params, Mapping):
        return {}, f"'{key}.ros__parameters' is not a mapping"
    return _flatten(params), None


def judge_document(data: Mapping, required: tuple = ()) -> Judgement:
    """Judge every section of this package's nodes in a parsed parameter file.

    :param data: the parsed file (a mapping of section keys to sections).
    :param required: nodes whose section must be there (the ``/**`` wildcard alone counts).
    :return: the :class:`Judgement` (the cross-section findings are not in it).
    """
    out = Judgement(problems=rcl_problems(data))
    wildcard: dict = {}
    own: dict = {}
    for key, section in data.items():
        name = _node_of(key)
        if str(key) in WILDCARDS or name in NODE_KINDS:
            params, problem = _section_params(key, section)
            if problem:
                out.problems.append(Problem('error', name if name in NODE_KINDS else str(key),
                                            'ros__parameters', problem,
                                            f"write '{key}:' then 'ros__parameters:' then the parameters"))
            (wildcard if str(key) in WILDCARDS else own.setdefault(name, {})).update(params)
        else:
            out.ignored.append(str(key))
            params, _ = _section_params(key, section)
            out.controllers[name] = params
    for name in required:
        if name in own:
            continue
        if any(str(k) in WILDCARDS for k in data):
            own[name] = {}
        else:
            keys = ', '.join(map(str, data)) or 'none'
            out.problems.append(Problem('error', name, '', f"no section for node '{name}' (keys: {_short(keys)})",
                                        f'add "{name}:" (or "/**:") with "ros__parameters:"'))
    for name, params in own.items():
        kind = NODE_KINDS[name]
        out.sections[name] = kind
        values = _judge_section(name, kind, dict(wildcard, **params), out.problems)
        if values is not None:
            out.values[name] = values
    return out


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
            did_you_mean(kind, unknown)))
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
        note = _integer_for_double(spec, value)
        if note:
            problems.append(Problem('warning', name, pname, note, _number_fix(value)))
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


def _integer_for_double(spec, value: Any) -> str:
    if spec.type == DOUBLE and isinstance(value, int) and not isinstance(value, bool):
        return (f'the integer {value} where a double is declared: the node reads it as '
                f'{float(value)!r}; other ROS tools (ros2 param load) type it by its form')
    if (spec.type == DOUBLE_ARRAY and isinstance(value, list) and value
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        return ('integers where doubles are declared: the node reads them as doubles; '
                'other ROS tools (ros2 param load) type them by their form')
    return ''


def _number_fix(value: Any) -> str:
    if isinstance(value, list):
        return f"write [{_short(', '.join(_number_text(v) for v in value))}]"
    return f'write {_number_text(value)}'


def _type_fix(spec, value: Any) -> str:
    if value is None:
        return "rcl reads an empty value (or '~') as the string '~': omit the parameter for its default"
    if spec.type == 'integer' and isinstance(value, float) and value.is_integer():
        return f'write {int(value)} (an integer, no decimal point)'
    return f'write {spec.constraint_text()}'


# -- plausibility --------------------------------------------------------------------------
def plausibility(name: str, v: dict) -> list:
    """Warnings about values that pass every rule but are most likely not what was meant.

    :param name: the node (for the messages).
    :param v: the node's values (each valid on its own, defaults filled in).
    :return: the warnings.
    """
    out = []
    for check in (_millimetre_problems, _com_problems, _quaternion_problems, _mass_problems,
                  _gravity_problems):
        out += check(name, v)
    return out


def _groups(values: Any, width: int) -> list:
    values = list(values or [])
    return [values[i:i + width] for i in range(0, len(values) - width + 1, width)]


def _norm(x) -> float:
    return math.sqrt(sum(float(c) ** 2 for c in x))


def _millimetre_problems(name: str, v: dict) -> list:
    out = []
    for pname, width in _LENGTHS:
        far = [g for g in _groups(v.get(pname), width) if _norm(g) > LONGEST_LENGTH]
        if far:
            example = far[0]
            given = ', '.join(repr(float(c)) for c in example)
            metres = ', '.join(repr(round(c / 1000.0, 9)) for c in example)
            out.append(Problem(
                'warning', name, pname,
                f'{_norm(example):.6g} m from the object frame origin: no grasp on one object '
                f'spans more than {LONGEST_LENGTH:g} m; lengths are in metres',
                f'did you mean metres? [{given}] -> [{metres}]'))
    return out


def _com_problems(name: str, v: dict) -> list:
    contacts = _groups(v.get('contact_positions'), 3)
    com = list(v.get('object_com') or [])
    if len(contacts) < 2 or len(com) != 3 or _norm(com) > LONGEST_LENGTH:
        return []  # no static contacts to compare with, or already reported as millimetres
    centre = [sum(c[i] for c in contacts) / len(contacts) for i in range(3)]
    reach = max(_norm([c[i] - centre[i] for i in range(3)]) for c in contacts)
    off = _norm([com[i] - centre[i] for i in range(3)])
    if off <= max(3.0 * reach, 0.5):
        return []
    return [Problem('warning', name, 'object_com',
                    f"the centre of mass is {off:.3g} m from the contacts' centre, {off / max(reach, 1e-9):.3g} "
                    'times their spread: the object model and the grasp do not fit together',
                    'object_com in the object frame, in metres (the frame of contact_positions)')]


def _quaternion_problems(name: str, v: dict) -> list:
    out = []
    for pname in _QUATERNIONS:
        for i, q in enumerate(_groups(v.get(pname), 4)):
            size = _norm(q)
            if size == 0.0 or abs(size - 1.0) <= QUATERNION_TOLERANCE:
                continue
            unit = [c / size for c in q]
            angle = math.degrees(2.0 * math.atan2(_norm(unit[:3]), abs(unit[3])))
            axis = [c / _norm(unit[:3]) for c in unit[:3]] if _norm(unit[:3]) > 0.0 else [0.0] * 3
            out.append(Problem(
                'warning', name, pname,
                f'quaternion {i + 1} {_rounded(q)} has norm {size:.6g}: the node normalises it '
                f'to {_rounded(unit)} ({angle:.4g} deg about {_rounded(axis)}), '
                'which may not be the rotation meant',
                f'write the unit quaternion [qx, qy, qz, qw] of the rotation meant, '
                f'e.g. {_rounded(unit)}'))
            break
    return out


def _rounded(values) -> str:
    return '[' + ', '.join(f'{c:.4g}' for c in values) + ']'


def _mass_problems(name: str, v: dict) -> list:
    out = []
    heavy = [m for m in v.get('tool_masses') or [] if m > HEAVIEST_TOOL]
    if heavy:
        out.append(Problem('warning', name, 'tool_masses',
                           f'{heavy[0]:g} kg between a wrist sensor and the object: heavier than '
                           f'any tool a wrist carries (> {HEAVIEST_TOOL:g} kg); masses are in kg',
                           f'a weight in newtons? {heavy[0]:g} N / {STANDARD_GRAVITY} = '
                           f'{heavy[0] / STANDARD_GRAVITY:.3g} kg'))
    mass = v.get('object_mass')
    if isinstance(mass, float) and mass > HEAVIEST_OBJECT:
        out.append(Problem('warning', name, 'object_mass',
                           f'{mass:g} kg: beyond any arm this package drives (> {HEAVIEST_OBJECT:g} kg)',
                           f'masses are in kg: {mass:g} g would be {mass / 1000.0:g} kg'))
    return out


def _gravity_problems(name: str, v: dict) -> list:
    g = list(v.get('gravity') or [])
    if len(g) != 3:
        return []
    size = _norm(g)
    if size == 0.0 or abs(size - STANDARD_GRAVITY) <= 0.5:
        return []
    hint = (f'in mm/s^2? {_rounded(g)} -> {_rounded([c / 1000.0 for c in g])}' if size > 1000.0
            else f'a vector of norm about {STANDARD_GRAVITY}, e.g. [0.0, 0.0, -{STANDARD_GRAVITY}]')
    return [Problem('warning', name, 'gravity', f'norm {size:.6g} m/s^2, not about '
                    f"{STANDARD_GRAVITY} (the tools' weights scale with it)", hint)]
