"""A problem file's distribution engine: what the command line synthesises with (no ROS).

``wrench-distribution synthesize`` computes its commands with the distributor node's own
:class:`~.distribution.DistributionEngine` (prescription, friction auto mode, friction check
on the commands sent), so the JSON it prints is what the node would publish for the same
configuration. Problem files accept a little more than the node's schema (a single contact,
a friction margin up to 1), so the engine's parameters are built here from the core objects
the problem file describes, not validated again against the schema. Limits are unbounded
unless the problem file's ``limits`` sets them (each value checked as the node's parameter
is); the watchdog is off.
"""
from dataclasses import replace
import math
from typing import Any, Mapping, Optional, Tuple

import numpy as np

from wrench_distribution.config import build_config, ConfigError, LIMIT_CEILING
from wrench_distribution.config.schema import PARAM_INDEX
from wrench_distribution.config.validation import defaults
from wrench_distribution.config.values import check_param_value
from wrench_distribution.core.errors import InvalidInputError, WrenchDistributionError
from wrench_distribution.core.friction import FrictionOptions
from wrench_distribution.core.load_distributor import LoadDistributor
from wrench_distribution.core.prescription import InternalLoadPrescription
from wrench_distribution.core.validation import check_keys, finite_array
from .distribution import DistributionEngine, Outcome


#: Problem-file ``limits`` keys and the distributor parameters they set.
LIMIT_KEYS = {'force': 'force_limits', 'torque': 'torque_limits',
              'desired_force': 'desired_force_limit', 'desired_torque': 'desired_torque_limit',
              'internal_load': 'internal_load_limit', 'on_limit': 'on_limit'}


def problem_limits(limits: Any, n: int) -> dict:
    """Return the limit parameters of a problem file's ``limits`` mapping.

    :param limits: None or ``{force, torque: a number or one per contact; desired_force,
        desired_torque, internal_load: numbers; on_limit: hold | zero | scale}``.
    :param n: number of contacts.
    :return: ``{parameter: value}`` for the keys given.
    :raises InvalidInputError: naming the key and the accepted values.
    """
    if limits is None:
        return {}
    if not isinstance(limits, Mapping):
        raise InvalidInputError('"limits" must be a mapping with keys ' + ', '.join(LIMIT_KEYS))
    check_keys(limits, tuple(LIMIT_KEYS), '"limits"')
    out = {}
    for key, value in limits.items():
        name = LIMIT_KEYS[str(key)]
        per_contact = name in ('force_limits', 'torque_limits')
        try:
            value = check_param_value(PARAM_INDEX['distributor'][name],
                                      [value] if per_contact and not isinstance(value, list) else value)
        except ConfigError as error:
            raise InvalidInputError(f'limits.{key}: {error}') from None
        if per_contact and (len(value) not in (1, n) or not all(0 < x <= LIMIT_CEILING for x in value)):
            raise InvalidInputError(f'limits.{key}: got {value!r:.80}; accepted: one number for every '
                                    f'contact or one per contact ({n}), each > 0 and <= {LIMIT_CEILING:g}')
        out[name] = value
    return out


def problem_parameters(distributor: LoadDistributor, friction: FrictionOptions,
                       limits: Any = None, weights: Optional[np.ndarray] = None) -> dict:
    """Return the distributor parameters of a problem file's grasp, friction and limits.

    Every other parameter keeps the node's default, except the limits (unbounded unless
    given), the watchdog and the future-stamp check (off) and the command frame (the
    contact frames), and no markers.

    :param distributor: the solver built from the problem file.
    :param friction: the problem file's friction options.
    :param limits: the problem file's ``limits`` (see :func:`problem_limits`), or None.
    :param weights: the problem file's ``contact_weights`` (in force from the start), or None.
    :return: ``{parameter: value}``, the keys of the distributor schema.
    """
    values = defaults('distributor')
    contacts = distributor.contacts
    values.update(
        effectors=[c.name for c in contacts], contact_types=[c.type for c in contacts],
        contact_source='static',
        contact_positions=[float(x) for c in contacts for x in c.position],
        contact_orientations=[float(x) for c in contacts for x in c.orientation],
        friction_coefficients=[0.0 if c.friction is None else float(c.friction) for c in contacts],
        contact_normals=[float(x) for c in contacts for x in c.normal],
        friction_mode=friction.mode, friction_margin=friction.margin,
        command_frame='contact', command_sign=1, input_timeout=0.0, max_future=0.0,
        publish_markers=False,
        force_limits=[math.inf], torque_limits=[math.inf], desired_force_limit=math.inf,
        desired_torque_limit=math.inf, internal_load_limit=math.inf)
    values.update(problem_limits(limits, len(contacts)))
    if weights is not None:
        values['contact_weights'] = [float(w) for w in weights]
    return values


def prescription_of_problem(internal_load: Any) -> InternalLoadPrescription:
    """Return the prescription of a problem file's ``options.internal_load``.

    :param internal_load: None, a list of basis coordinates, or ``{handle: value}``.
    :return: the prescription.
    :raises InvalidInputError: for any other form.
    """
    if internal_load is None:
        return InternalLoadPrescription()
    if isinstance(internal_load, Mapping):  # values checked as the core checks them
        return InternalLoadPrescription.of_handles(
            {str(k): float(finite_array(v, (), f'internal load {k!r}')) for k, v in internal_load.items()})
    if isinstance(internal_load, list):
        return InternalLoadPrescription.of_coordinates(finite_array(internal_load, (-1,), 'internal_load'))
    raise InvalidInputError('options.internal_load must be a list (one number per basis '
                            'element) or a mapping {handle: value}, got '
                            f'{type(internal_load).__name__}')


def engine_for_problem(distributor: LoadDistributor, friction: FrictionOptions,
                       internal_load: Any, limits: Any = None,
                       weights: Optional[np.ndarray] = None) -> DistributionEngine:
    """Build the distribution engine of a problem file, its contacts given as the node's are.

    :param distributor: the solver built from the problem file (its contacts, object, options).
    :param friction: the friction options.
    :param internal_load: the raw ``options.internal_load`` (see :func:`prescription_of_problem`).
    :param limits: the problem file's ``limits``, or None.
    :param weights: the problem file's ``contact_weights``, or None (all 1).
    :return: the engine, with its solver built from the contact poses (at those weights).
    :raises WrenchDistributionError: when the prescription does not fit the grasp or a limit.
    """
    values = problem_parameters(distributor, friction, limits, weights)
    config = replace(build_config('distributor', values, frozenset(values)),
                     contacts=tuple(distributor.contacts), object_model=distributor.object_model,
                     options=distributor.options)
    engine = DistributionEngine(config)
    prescription = prescription_of_problem(internal_load)
    engine.set_prescription(prescription, 'problem' if prescription.kind != 'none' else 'none')
    update = engine.offer_contacts(np.array([c.position for c in distributor.contacts], float),
                                   np.array([c.orientation for c in distributor.contacts], float), 0)
    if update.refusal is not None:
        raise InvalidInputError(update.refusal.message)
    return engine


def synthesize_with_engine(engine: DistributionEngine, wrench) -> Tuple[np.ndarray, Optional[str]]:
    """Commands for one desired wrench through :meth:`DistributionEngine.step`.

    :param engine: the engine of :func:`engine_for_problem`.
    :param wrench: desired resultant (6,), object frame about the centre of mass.
    :return: ``(commands, limit)``: the (n, 6) commands in the contact frames as the node
        would publish them, and None, or the limit report when ``on_limit`` (zero, scale)
        changed them.
    :raises WrenchDistributionError: with the engine's reason when it gives no command
        (also ``on_limit: hold``, which has nothing to hold in one shot).
    """
    outcome: Outcome = engine.step(0, [float(x) for x in wrench], 0, 0)
    if outcome.valid:
        return outcome.commands, None
    if outcome.cause == 'limit' and outcome.commands is not None:
        return outcome.commands, outcome.message
    raise WrenchDistributionError(outcome.message)
