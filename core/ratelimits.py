"""Failed sign-ins and failed API keys, counted so that they protect without becoming a weapon.

- Sign-in: wrong passwords count per (username, client address) for the lock: 5 a minute for one username from
  one address, then that pair is refused until the window passes, the right password included. Another address
  signing in as the same user is not affected, so nobody can lock a user out by failing on purpose from their
  own machine. Every failure also counts per address for the flood: 20 a minute from one address, then every
  sign-in from there is refused.
- API keys: a valid key is always accepted. Wrong keys count per address; past 20 a minute the wrong ones are
  answered 429 instead of 401 until the window passes. A key's 256-bit secret cannot be guessed, so this only
  slows a misbehaving client; before, 21 wrong keys in 0.6 s made every valid key from that address get 429.

Counting uses django-ratelimit's fixed windows in the default cache: in-process memory on the embedded default
(one server process, so it sees every attempt), Redis when MNEMO_CACHE_URL names one for several workers.
The client address is REMOTE_ADDR; behind a proxy, have it set the real one.
"""

from django.http import HttpRequest
from django_ratelimit.core import is_ratelimited

SIGN_IN_FAILURES = "5/m"  # per username and address
SIGN_IN_FAILURES_PER_ADDRESS = "20/m"
API_KEY_FAILURES = "20/m"  # per address


def _username_at_address(group: str, request: HttpRequest) -> str:
    return f"{request.POST.get('username', '')}\n{request.META.get('REMOTE_ADDR', '')}"


_SIGN_IN_LIMITS = ((_username_at_address, SIGN_IN_FAILURES), ("ip", SIGN_IN_FAILURES_PER_ADDRESS))


def _over(request: HttpRequest, group: str, key, rate: str, *, count: bool) -> bool:
    return is_ratelimited(
        request, group=group, key=key, rate=rate, method=is_ratelimited.ALL, increment=count
    )


def sign_in_blocked(request: HttpRequest) -> bool:
    return any(_over(request, "sign-in", key, rate, count=False) for key, rate in _SIGN_IN_LIMITS)


def record_sign_in_failure(request: HttpRequest) -> None:
    for key, rate in _SIGN_IN_LIMITS:
        _over(request, "sign-in", key, rate, count=True)


def api_key_failures_blocked(request: HttpRequest) -> bool:
    """Whether this address sent too many wrong keys lately (its next wrong one gets 429, a valid one passes)."""
    return _over(request, "api-key", "ip", API_KEY_FAILURES, count=False)


def record_api_key_failure(request: HttpRequest) -> None:
    _over(request, "api-key", "ip", API_KEY_FAILURES, count=True)
