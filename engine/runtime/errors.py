"""How a run fails: which rank, during which action (torch-free, so callers can catch them cheaply)."""

from __future__ import annotations


class ActionFailed(RuntimeError):
    """An action raised; carries which rank and action, for the error the user sees."""

    def __init__(self, rank: int, action, cause: BaseException):
        super().__init__(f"rank {rank} failed during {action}: {type(cause).__name__}: {cause}")
        self.rank, self.action, self.cause = rank, str(action), cause


class RunFailed(RuntimeError):
    """A distributed run ended early; the message names the rank and the action."""
