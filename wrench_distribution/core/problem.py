"""Problem files (YAML or JSON) for the command line: parsing and result documents."""
import json
import re
from typing import Any, Dict, Mapping, Tuple

import numpy as np

from .codec import zero_below_resolution
from .contact_weights import check_weights
from .contacts import Contact, ObjectModel
from .errors import InvalidInputError
from .friction import FrictionOptions
from .load_distributor import LoadDistributor
from .options import DistributionOptions
from .results import Analysis, Regime, Synthesis
from .safe_load import load_document
from .validation import check_keys, did_you_mean, finite_vector

#: The keys of a problem document: the grasp, the object, options, and what is asked.
PROBLEM_KEYS = ('contacts', 'object', 'options', 'wrench', 'measured', 'limits', 'contact_weights')
OPTION_KEYS = ('torque_share', 'virtual_masses', 'torque_weights', 'internal_load', 'basis_reference_axis')
#: Option keys handled outside DistributionOptions (see :func:`friction_options`).
EXTRA_OPTION_KEYS = ('friction',)


#: Most contacts a problem file may name (the cost grows with the cube of the count).
MAX_CONTACTS = 64


def read_problem(path: str) -> Dict[str, Any]:
    """Read a problem document safely and within limits (JSON is valid YAML).

    :param path: file path.
    :return: the document, a mapping.
    :raises InvalidInputError: when the file is missing, unreadable, too large, not UTF-8,
        not YAML, breaks a size/depth/alias/number limit, or is not a mapping.
    """
    document = load_document(path, 'problem file')
    if not isinstance(document, Mapping):
        raise InvalidInputError(f'problem file {path!r} must contain a mapping with "contacts"')
    check_keys(document, PROBLEM_KEYS, f'problem file {path!r}')
    return dict(document)


def _mapping(value: Any, what: str, keys: Tuple[str, ...]) -> Mapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f'{what} must be a mapping with keys {", ".join(keys)}, '
                                f'got {type(value).__name__}')
    check_keys(value, keys, what)
    return value


def _contacts(contacts_doc: Any) -> list:
    if not isinstance(contacts_doc, list) or not contacts_doc:
        raise InvalidInputError('"contacts" must be a non-empty list of {name, type, position, orientation}')
    if len(contacts_doc) > MAX_CONTACTS:
        raise InvalidInputError(f'"contacts" has {len(contacts_doc)} entries; at most {MAX_CONTACTS} accepted')
    contacts = []
    for index, entry in enumerate(contacts_doc):
        entry = _mapping(entry, f'contacts[{index}]',
                         ('name', 'type', 'position', 'orientation', 'friction', 'normal'))
        if 'name' not in entry or 'position' not in entry:
            raise InvalidInputError(f'contacts[{index}] needs "name" and "position"')
        try:
            contacts.append(Contact(
                name=entry['name'], type=entry.get('type', 'rigid'), position=entry['position'],
                orientation=entry.get('orientation', (0.0, 0.0, 0.0, 1.0)),
                friction=entry.get('friction'), normal=entry.get('normal', (0.0, 0.0, 1.0)),
            ))
        except InvalidInputError as error:
            raise InvalidInputError(f'contacts[{index}]: {error}') from None
        except (TypeError, ValueError, OverflowError) as error:
            raise InvalidInputError(f'contacts[{index}]: invalid value ({error})') from None
    return contacts


def build_distributor(document: Mapping[str, Any]) -> Tuple[LoadDistributor, Any]:
    """Build the distributor a problem document describes.

    :param document: mapping with ``contacts``, optional ``object`` and ``options``.
    :return: the distributor and the raw ``internal_load`` option (or None).
    :raises InvalidInputError: naming the offending key.
    """
    contacts = _contacts(document.get('contacts'))
    object_doc = _mapping(document.get('object'), '"object"', ('com', 'mass', 'inertia'))
    options_doc = _mapping(document.get('options'), '"options"', OPTION_KEYS + EXTRA_OPTION_KEYS)
    kwargs = {k: options_doc[k] for k in OPTION_KEYS if k in options_doc and k != 'internal_load'}
    for key in ('virtual_masses', 'torque_weights'):
        value = kwargs.get(key)
        if value is not None and not isinstance(value, (str, list)):
            raise InvalidInputError(f'options.{key} must be a list (one number per contact)'
                                    + (' or a name' if key == 'virtual_masses' else '')
                                    + f', got {value!r:.40}')
    try:
        model = ObjectModel(
            com=object_doc.get('com', (0.0, 0.0, 0.0)), mass=object_doc.get('mass'),
            inertia=object_doc.get('inertia'),
        )
        options = DistributionOptions(**kwargs)
        distributor = LoadDistributor(contacts, model, options)
    except InvalidInputError:
        raise
    except (TypeError, ValueError, OverflowError, np.linalg.LinAlgError) as error:
        raise InvalidInputError(f'invalid "object" or "options": {error}') from None
    return distributor, options_doc.get('internal_load')


def problem_weights(document: Mapping[str, Any], names) -> Any:
    """Read the ``contact_weights`` of a problem document (docs/theory.md, section 16).

    :param document: the problem document.
    :param names: the contact names, in order.
    :return: None (every weight 1) or the (n,) weights: a list of one number in ``[0, 1]`` per
        contact, or a mapping ``{contact name: weight}`` (the contacts it does not name: 1).
    :raises InvalidInputError: an unknown name, another count, a value outside ``[0, 1]``, more
        contacts in transition than allowed, or every weight 0.
    """
    value = document.get('contact_weights')
    if value is None:
        return None
    names = list(names)
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in names)
        if unknown:
            raise InvalidInputError(f'contact_weights names unknown contacts {", ".join(unknown)}; '
                                    f'contacts: {", ".join(names)}')
        value = [value.get(name, 1.0) for name in names]
    elif not isinstance(value, list):
        raise InvalidInputError('contact_weights must be a list (one weight in [0, 1] per contact) or a '
                                f'mapping {{contact: weight}}, got {type(value).__name__}')
    weights = check_weights(value, len(names), names)
    if not weights.any():
        raise InvalidInputError('contact_weights: every weight is 0, no contact would carry the object')
    return weights


def friction_options(document: Mapping[str, Any]) -> FrictionOptions:
    """Read the ``options.friction`` of a problem document (default: check, margin 0.1).

    :param document: the problem document.
    :return: the friction options.
    :raises InvalidInputError: on bad keys or values.
    """
    options_doc = document.get('options') or {}
    return FrictionOptions.from_mapping(options_doc.get('friction') if isinstance(options_doc, Mapping) else None)


def _regime(regime: Regime) -> Dict[str, Any]:
    return {'name': regime.name, 'reasons': list(regime.reasons), 'message': regime.message}


def _document(distributor: LoadDistributor, result, contacts: dict, **internal: Any) -> Dict[str, Any]:
    """Fields shared by both documents: ``internal`` adds to ``internal_load``."""
    return {
        'contacts': contacts,
        'resultant': result.resultant.tolist(),
        'residual': result.residual,
        'internal_load': {
            'basis': distributor.basis_names, 'units': distributor.basis_units,
            'values': result.internal_load.tolist(), **internal,
        },
        'invariant_norm': result.invariant_norm,
        'virtual_masses': dict(zip(distributor.names, distributor.virtual_masses.tolist())),
        'regime': _regime(distributor.regime),
        'gain': distributor.gain,
    }


def synthesis_document(distributor: LoadDistributor, synthesis: Synthesis) -> Dict[str, Any]:
    """JSON-ready result of ``synthesize``.

    :param distributor: the distributor used.
    :param synthesis: its result.
    :return: mapping with contacts, resultant, residual, regime, internal_load, virtual_masses.
    """
    contacts = {}
    for i, name in enumerate(distributor.names):
        contacts[name] = {
            'wrench': synthesis.wrench_contact[i].tolist(),
            'wrench_object': synthesis.wrench_object[i].tolist(),
            'manipulating_object': synthesis.manipulating_object[i].tolist(),
            'internal_object': synthesis.internal_object[i].tolist(),
            'invariant_object': synthesis.invariant_object[i].tolist(),
            'along_manipulating_object': synthesis.along_manipulating_object[i].tolist(),
        }
    along = synthesis.along_manipulating_object.reshape(-1)
    scale = np.tile(np.r_[np.ones(3), np.full(3, 1.0 / distributor.reference_length)], distributor.n)
    return _document(distributor, synthesis, contacts,
                     along_manipulating_norm=float(np.sqrt(0.5 * np.sum((along * scale) ** 2))))


def analysis_document(distributor: LoadDistributor, analysis: Analysis) -> Dict[str, Any]:
    """JSON-ready result of ``analyze``.

    :param distributor: the distributor used.
    :param analysis: its result.
    :return: mapping with per-contact parts, resultant, residual, regime, internal_load.
    """
    contacts = {}
    for i, name in enumerate(distributor.names):
        contacts[name] = {
            part + suffix: getattr(analysis, f'{part}_{frame}')[i].tolist()
            for part in ('manipulating', 'constraint', 'internal', 'invariant')
            for suffix, frame in (('', 'contact'), ('_object', 'object'))
        }
    return _document(distributor, analysis, contacts, norm=analysis.internal_load_norm,
                     norm_unit='N')


#: The axes of the pair elements, as :mod:`.internal_basis` builds them (object frame).
AXIS_DEFINITIONS = {
    'e': 'unit vector from the first to the second contact of the pair',
    'u': 'normalise(basis_reference_axis x e)',
    'v': 'e x u',
}
_ELEMENT_AXIS = {'squeeze': ('e', 0), 'twist': ('e', 3), 'bend_u': ('u', 3), 'bend_v': ('v', 3),
                 'shear_u': ('u', 0), 'shear_v': ('v', 0)}


def basis_document(distributor: LoadDistributor) -> Dict[str, Any]:
    """JSON-ready description of the named basis: each element with its unit and its axis.

    A pair element ``kind(a,b)`` acts along (squeeze, shear) or about (twist, bend) one axis,
    ``e``, ``u`` or ``v`` of its pair; the axis is read from the basis itself (the force or
    torque the element applies at ``a``, normalised), in the object frame.

    :param distributor: the distributor.
    :return: mapping with ``basis``, ``units``, ``elements`` and ``axis_definitions``.
    """
    matrix = distributor.basis_matrix
    elements = []
    for column, (name, unit) in enumerate(zip(distributor.basis_names, distributor.basis_units)):
        kind, _, rest = name.partition('(')
        element = {'name': name, 'unit': unit}
        if kind in _ELEMENT_AXIS:
            letter, offset = _ELEMENT_AXIS[kind]
            row = 6 * distributor.names.index(rest.rstrip(')').split(',')[0]) + offset
            block = matrix[row:row + 3, column]
            element.update(axis_name=letter, axis=(block / np.linalg.norm(block)).tolist(),
                           applied='torque about' if offset else 'force along')
        elements.append(element)
    return {'basis': distributor.basis_names, 'units': distributor.basis_units,
            'elements': elements, 'basis_reference_axis': list(distributor.options.basis_reference_axis),
            'axis_definitions': AXIS_DEFINITIONS}


def measured_matrix(distributor: LoadDistributor, measured: Any) -> np.ndarray:
    """Return the ``measured`` mapping ``{name: [6 numbers]}`` as an (n, 6) contact-order array.

    :param distributor: gives the contact names and order.
    :param measured: the mapping from the problem document.
    :return: (n, 6) array.
    :raises InvalidInputError: for missing or unknown contacts, or bad values.
    """
    if not isinstance(measured, Mapping):
        raise InvalidInputError('"measured" must be a mapping {contact name: [fx, fy, fz, tx, ty, tz]}')
    unknown = sorted(map(str, set(measured) - set(distributor.names)))
    missing = [n for n in distributor.names if n not in measured]
    if unknown or missing:
        hints = [f"'{u}'" + (f' ({hint})' if (hint := did_you_mean(u, distributor.names)) else '')
                 for u in unknown]
        raise InvalidInputError(
            '"measured" must name every contact exactly once'
            + (f'; unknown: {", ".join(hints)}' if unknown else '')
            + (f'; missing: {", ".join(missing)}' if missing else ''))
    return np.array([finite_vector(measured[n], 6, f'measured[{n}]') for n in distributor.names])


def to_json(document: Mapping[str, Any]) -> str:
    """Serialise strictly: NaN or Inf can never reach the output.

    Residues below the solver's resolution print as 0 (:func:`.codec.zero_below_resolution`).

    :param document: JSON-ready mapping.
    :return: indented JSON text.
    """
    text = json.dumps(zero_below_resolution(document), indent=2, allow_nan=False)
    # one line per vector of numbers keeps the document readable
    return re.sub(r'\[\s*([-0-9.eE+,\s]+?)\s*\]', lambda m: '[' + ', '.join(
        part.strip() for part in m.group(1).split(',')) + ']', text)
