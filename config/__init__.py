# Load the Celery app with Django so @shared_task binds to it (a no-op cost when no broker is configured).
from config.celery import app as celery_app

__all__ = ("celery_app",)
