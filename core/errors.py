"""The one application error: a request Mnemo refuses, and the HTTP status that fits it.

Every app raises a subclass (input over a cap, a document that cannot be retried, an archive that cannot be
imported, …). The API maps them all in one handler (config/api.py), so an endpoint never translates them
itself; the pages show the message.
"""

from core.stored_text import in_language


class RequestRefused(ValueError):
    """The message says what to change; `status` is the HTTP status that fits (422 unless the class says)."""

    status = 422

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        if status is not None:
            self.status = status

    def __str__(self) -> str:
        # A message built as a core.stored_text.Text reads in the active language: the page's or the API
        # request's, and English where a worker stores it (knowledge.ingest).
        return in_language(self.args[0]) if self.args and isinstance(self.args[0], str) else super().__str__()
