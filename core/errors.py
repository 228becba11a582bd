"""The one application error: a request Mnemo refuses, and the HTTP status that fits it.

Every app raises a subclass (input over a cap, a document that cannot be retried, an archive that cannot be
imported, …). The API maps them all in one handler (config/api.py), so an endpoint never translates them
itself; the pages show the message.
"""


class RequestRefused(ValueError):
    """The message says what to change; `status` is the HTTP status that fits (422 unless the class says)."""

    status = 422

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        if status is not None:
            self.status = status
