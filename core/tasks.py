from celery import shared_task


@shared_task(name="core.ping")
def ping(value: str) -> str:
    """A task with no side effects, used to prove the worker path end to end."""
    return f"pong:{value}"


@shared_task(name="core.write_marker")
def write_marker(path: str, text: str) -> str:
    """Write `text` to `path`: lets a test see that a dispatched task ran in another process."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path
