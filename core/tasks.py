from celery import shared_task


@shared_task(name="core.ping")
def ping(value: str) -> dict:
    """A task with no side effects that says which process ran it: proves the worker path end to end."""
    import os

    return {"pong": value, "pid": os.getpid()}
