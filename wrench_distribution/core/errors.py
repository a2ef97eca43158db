"""Typed errors of the core: every rejection carries a message a user can act on."""


class WrenchDistributionError(ValueError):
    """Base class of every error the core raises on bad input or impossible requests."""


class InvalidInputError(WrenchDistributionError):
    """NaN or Inf, wrong lengths, unknown names, or options outside their accepted values."""


class UnrealisableWrenchError(WrenchDistributionError):
    """The requested resultant is not in the range of the grasp matrix ``G``."""
