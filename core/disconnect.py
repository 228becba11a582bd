"""Whether the client of a request is still there, for long requests that should stop when nobody waits.

A streamed answer learns it when a write fails, but a WSGI view that answers once at the end never writes until
then. gunicorn puts the client's socket in the environ (`gunicorn.socket`): a peer that closed its end makes the
socket readable with nothing to read, which a non-blocking peek tells without consuming any byte the request
still holds. Elsewhere (Django's test client, runserver) there is no socket to ask, and the client counts as there.
"""

import socket
import threading
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class ClientGone(Exception):
    """The request's client went away: whatever the request would still compute is for nobody."""


def client_gone(request: HttpRequest | None) -> bool:
    """True when the request's client closed or reset its connection."""
    sock = request.META.get("gunicorn.socket") if request is not None else None
    if not isinstance(sock, socket.socket) or sock.fileno() < 0:
        return False
    try:
        # An empty peek is the peer's FIN; bytes mean it is still talking (a pipelined request, an unread body).
        # The base class's recv reads the raw stream, also under TLS, where the SSL socket refuses MSG_PEEK.
        return socket.socket.recv(sock, 1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False  # nothing arrived: the client is waiting
    except OSError:  # reset by the peer, or already closed
        return True


_serving = threading.local()


def current_client_gone() -> bool:
    """client_gone() for the request this thread is serving (ClientGoneMiddleware), False outside one."""
    return client_gone(getattr(_serving, "request", None))


class ClientGoneMiddleware:
    """Lets code below the views ask whether the client of the request being served is still there
    (current_client_gone), and answers 499 for a request stopped by ClientGone: nobody reads the answer, and
    the access log tells why it stopped."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        _serving.request = request
        try:
            return self.get_response(request)
        finally:
            _serving.request = None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return HttpResponse(status=499) if isinstance(exception, ClientGone) else None
