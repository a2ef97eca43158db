"""A demo run's parameter sections: the scenario file with the command line's changes (no ROS)."""
from __future__ import annotations

from ..scenarios.models import effector_model
from ..scenarios.runs import apply_feedback, load_calibration, without_calibration_motions
from ..scenarios.sections import load_sections, scenario_file, validate_sections
from ...config.handles import format_schedule, parse_schedule


def run_sections(sections: dict, duration: float | None, zero_internal: bool) -> dict:
    """Return the parameter sections of this run.

    With a duration other than the file's, the controller's times after the fixture
    release are stretched by ``(duration - release) / (nominal - release)`` so that the
    move and the squeeze change keep their place in the run.

    :param sections: node name -> parameters, from the scenario file.
    :param duration: requested sim time, or None for the file's.
    :param zero_internal: set every scheduled internal-load value to 0.
    :return: the modified sections (a copy)
    :raises ValueError: for a duration too short, or a parameter the schema refuses
        (``ConfigError``).
    """
    out = {k: dict(v) for k, v in sections.items()}
    sim, ctl = out['object_sim'], out['object_controller']
    checked = validate_sections(sections)  # the schema's values and defaults
    nominal = checked['object_sim']['duration'] or 6.0
    release = checked['object_sim']['release_time']
    duration = nominal if duration is None else float(duration)
    if duration <= release + 0.5:
        raise ValueError(f'--duration must exceed {release + 0.5:g} s (fixture release + 0.5 s)')
    sim['duration'] = duration
    sim['wait_for_subscribers'] = 2  # the analyzer and the recorder
    factor = (duration - release) / max(nominal - release, 1e-9)

    def stretch(t: float) -> float:
        return t if t <= release else release + (t - release) * factor
    start = checked['object_controller']['move_start']
    end = start + checked['object_controller']['move_duration']
    ctl['move_start'] = stretch(start)
    ctl['move_duration'] = stretch(end) - stretch(start)
    ctl['internal_load_schedule'] = format_schedule(
        (stretch(when), {k: 0.0 if zero_internal else v for k, v in handles.items()})
        for when, handles in parse_schedule(checked['object_controller']['internal_load_schedule']))
    return out


def prepare_sections(args) -> tuple:
    """Load the scenario and apply the command-line overrides.

    :param args: parsed arguments.
    :return: ``(scenario path, node sections, the grasp identification's calls or None)``.
    :raises ValueError: on a bad option or parameter (``ConfigError``); ``OSError`` when the
        scenario cannot be read.
    """
    path = scenario_file(args.scenario)
    sections = run_sections(load_sections(str(path)), args.duration,
                            args.internal_load == 'zero')
    _apply_run_options(args, sections)
    model = effector_model(sections['object_sim'])
    model.require()
    if args.tare != 'off' and not float(sections['object_sim'].get('grasp_time', 0.0)) > 0.0:
        raise ValueError('--tare needs a free phase before the grasp: a scenario with '
                         'object_sim grasp_time > 0 (e.g. dual_arm_real_cell)')
    if args.calibration is not None:
        load_calibration(sections, args.calibration)
    if args.hold_only:
        if args.calibrate != 'off':
            raise ValueError('--hold-only skips the motions --calibrate captures: use one or the other')
        without_calibration_motions(sections, validate_sections(sections))
    model.prepare(sections)
    if args.internal_load_feedback == 'on':
        apply_feedback(sections)
    if args.friction_feedback == 'on':
        sections['wrench_distributor']['friction_feedback'] = True
    checked = validate_sections(sections)
    if args.calibrate == 'on':
        from ..nodes.calibration_step import procedure
        procedure(checked)  # refuses a scenario without the motions
    return path, sections, grasp_steps(args.identify_grasps, checked)


def _apply_run_options(args, sections: dict) -> None:
    """Apply the options that set one parameter each: rate, pace, friction mode, move, squeeze.

    :raises ValueError: for a rate beyond the physics rate or a negative pace.
    """
    if args.rate is not None:
        if not 1.0 <= args.rate <= float(sections['object_sim']['physics_rate']):
            raise ValueError('--rate must be between 1 Hz and the physics rate')
        sections['object_sim']['publish_rate'] = float(args.rate)
    if args.real_time_factor is not None:
        if not args.real_time_factor >= 0.0:
            raise ValueError('--real-time-factor must be 0 (as fast as possible) or more')
        sections['object_sim']['real_time_factor'] = float(args.real_time_factor)
    if args.friction is not None:
        sections['wrench_distributor']['friction_mode'] = args.friction
    if args.move_duration is not None:
        sections['object_controller']['move_duration'] = float(args.move_duration)
    if args.squeeze is not None:
        set_schedule(sections['object_controller'], args.squeeze)


def grasp_steps(mode: str, checked: dict):
    """Return the grasp identification's calls (``--identify-grasps``), or None when it is off.

    :param mode: ``auto`` (where the scenario holds rests before its move), ``on`` or ``off``.
    :param checked: the run's validated sections.
    :raises ValueError: ``on`` for a scenario without the rests
    """
    if mode == 'off':
        return None
    from ..nodes.calibration_step import grasp_procedure
    try:
        return grasp_procedure(checked)
    except ValueError:
        if mode == 'on':
            raise
        return None


def set_schedule(controller: dict, value: float) -> None:
    """Give every scheduled internal-load handle the same value."""
    controller['internal_load_schedule'] = format_schedule(
        (when, dict.fromkeys(handles, value))
        for when, handles in parse_schedule(controller.get('internal_load_schedule', [])))
