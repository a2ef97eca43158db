"""User-facing errors of the bag tools."""
from __future__ import annotations


class BagError(Exception):
    """A problem with the bag or the configuration that the user can fix.

    The message is one readable line; the command prints it as ``error: ...`` and
    exits with status 2.
    """


class IncompleteBag(BagError):
    """A bag of which part could not be read; the outputs hold the rest.

    :ivar summary: the summary of what was read (its ``completeness`` says what is missing).
    """

    def __init__(self, message: str, summary: dict) -> None:
        super().__init__(message)
        self.summary = summary
