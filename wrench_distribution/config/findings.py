"""What check-config reports (no ROS import).

A :class:`Problem` of one section, the :class:`Judgement` of a file, a :class:`Finding` where
the distributor's and the analyzer's sections disagree.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


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
    :ivar configs: node name -> the configuration the node builds (distributor, analyzer).
    """

    sections: dict = field(default_factory=dict)
    ignored: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    values: dict = field(default_factory=dict)
    controllers: dict = field(default_factory=dict)
    configs: dict = field(default_factory=dict)

    @property
    def errors(self) -> list:
        """Return the problems of severity ``error``."""
        return [p for p in self.problems if p.severity == 'error']

    @property
    def warnings(self) -> list:
        """Return the problems of severity ``warning``."""
        return [p for p in self.problems if p.severity == 'warning']


@dataclass(frozen=True)
class Finding:
    """One disagreement between the two sections.

    :param concern: ``effectors``, ``frames``, ``contacts``, ``object``, ``signs``,
        ``topics`` or ``tools``.
    :param parameter: the parameter(s) concerned.
    :param message: what disagrees and why it matters.
    :param distributor: the distributor's value (or None).
    :param analyzer: the analyzer's value (or None).
    """

    concern: str
    parameter: str
    message: str
    distributor: Any = None
    analyzer: Any = None

    def text(self) -> str:
        """Return the finding as one line."""
        return f'{self.concern}: {self.parameter}: {self.message}'

    def as_dict(self) -> dict:
        """Return the finding as a JSON-ready dict."""
        return asdict(self)
