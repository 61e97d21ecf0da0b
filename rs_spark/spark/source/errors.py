"""Errors of the ``reactive`` source that both readers raise."""

from __future__ import annotations


class PublisherFailed(RuntimeError):
    """The publisher signalled ``on_error``; carries its type name and message."""

    def __init__(self, error: BaseException, offset: int) -> None:
        super().__init__(
            f"the publisher failed after {offset} records with {type(error).__module__}."
            f"{type(error).__qualname__}: {error}"
        )
        self.error = error
        self.offset = offset


__all__ = ["PublisherFailed"]
