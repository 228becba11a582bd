"""A circuit breaker for a backend that can go away (the graph server, the Celery broker, a Qdrant server).

After a failure the backend counts as down for `seconds`: callers skip it and degrade at once, so an outage costs
one request its timeout, not every request; then it is tried again.
"""

import time


class Breaker:
    def __init__(self, seconds: float = 30.0):
        self.seconds = seconds
        self._down_until = 0.0

    def remaining(self) -> float:
        """Seconds until the backend is tried again; 0 when it may be tried now."""
        return max(0.0, self._down_until - time.monotonic())

    def trip(self) -> None:
        self._down_until = time.monotonic() + self.seconds

    def reset(self) -> None:
        self._down_until = 0.0
