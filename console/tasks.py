from celery import shared_task


@shared_task(name="console.resync_user_mirrors", acks_late=True)
def resync_user_mirrors(user_id: int) -> dict:
    """The dashboard's "Resync" button: mirror one user's pending and failed rows again. Idempotent."""
    from console.dashboard import resync_user

    return resync_user(user_id)
