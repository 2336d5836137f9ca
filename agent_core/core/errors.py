"""The exception tree: one root, subclasses named for the cause.

The library raises these; the CLI and the studio turn each into one plain
sentence (``str(err)``), never a traceback.
"""
from __future__ import annotations


class ChainStudioError(Exception):
    """Root of every error this package raises on purpose."""


class InputError(ChainStudioError):
    """What the user gave cannot be used (a file, a parameter, a name); the CLI exits 2 on it."""


class MalformedTraceError(InputError):
    """Input that cannot be read as any supported trace format."""

    def __init__(self, path: str, reason: str, line: int | None = None, column: int | None = None):
        self.path = path
        self.reason = reason
        self.line = line
        self.column = column
        where = path
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        super().__init__(f"{where}: {reason}")


class UnsupportedTraceVersion(MalformedTraceError):
    """A trace written by a newer Chain Studio (or with no version at all)."""


class PayloadMismatchError(ChainStudioError):
    """A reconstructed payload differs from the body that was recorded."""


class EndpointError(ChainStudioError):
    """The model endpoint failed; the message is one sentence for the user."""


class UnknownChoiceError(InputError, KeyError, ValueError):
    """A name that is not one of the choices (a provider profile, a trim policy, a repair strategy, a model,
    a wire API); the message names the choices."""

    __str__ = Exception.__str__      # KeyError would quote the sentence


class ToolError(ChainStudioError):
    """A registered tool could not be run with the arguments the model gave."""
