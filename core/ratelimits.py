"""Failed sign-ins and failed API keys are counted per client address (and sign-ins per username too);
over the rate, every attempt from there is refused until the window passes, the right password included.

Counting uses django-ratelimit's fixed windows in the default cache: in-process memory on the embedded default
(one server process, so it sees every attempt), Redis when MNEMO_CACHE_URL names one for several workers.
The client address is REMOTE_ADDR; behind a proxy, have it set the real one.
"""

from django.http import HttpRequest
from django_ratelimit.core import is_ratelimited

SIGN_IN_FAILURES = "5/m"  # per username and per address
SIGN_IN_FAILURES_PER_ADDRESS = "20/m"
API_KEY_FAILURES = "20/m"  # per address; a key's 256-bit secret cannot be guessed, so this only sheds load

_SIGN_IN_LIMITS = (("post:username", SIGN_IN_FAILURES), ("ip", SIGN_IN_FAILURES_PER_ADDRESS))


def _over(request: HttpRequest, group: str, key: str, rate: str, *, count: bool) -> bool:
    return is_ratelimited(
        request, group=group, key=key, rate=rate, method=is_ratelimited.ALL, increment=count
    )


def sign_in_blocked(request: HttpRequest) -> bool:
    return any(_over(request, "sign-in", key, rate, count=False) for key, rate in _SIGN_IN_LIMITS)


def record_sign_in_failure(request: HttpRequest) -> None:
    for key, rate in _SIGN_IN_LIMITS:
        _over(request, "sign-in", key, rate, count=True)


def api_key_blocked(request: HttpRequest) -> bool:
    return _over(request, "api-key", "ip", API_KEY_FAILURES, count=False)


def record_api_key_failure(request: HttpRequest) -> None:
    _over(request, "api-key", "ip", API_KEY_FAILURES, count=True)
