import os
from datetime import timedelta

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# The rest needs the apps loaded.
from django.conf import settings  # noqa: E402

from config.warmup import warm_up  # noqa: E402
from core.dispatch import start_background_work  # noqa: E402
from core.tasks import optimize_vectors_when_quiet, refresh_planner_statistics  # noqa: E402
from knowledge.services import documents_resume_stalled  # noqa: E402
from knowledge.tasks import resume_stalled_documents, sync_unsynced_chunks  # noqa: E402
from memories.tasks import prune_access_log, sync_unsynced_memories  # noqa: E402

# Before gunicorn's worker accepts its first connection: the first requests take what later ones do.
warm_up()

start_background_work(
    periodic=[
        (sync_unsynced_memories, settings.MNEMO_MIRROR_SWEEP_SECONDS),
        (sync_unsynced_chunks, settings.MNEMO_MIRROR_SWEEP_SECONDS),
        (resume_stalled_documents, settings.MNEMO_RESUME_SWEEP_SECONDS),
        (refresh_planner_statistics, settings.MNEMO_PLANNER_STATS_SECONDS),
        (prune_access_log, settings.MNEMO_ACCESS_LOG_PRUNE_SECONDS),
        *(
            [(optimize_vectors_when_quiet, settings.MNEMO_VECTOR_OPTIMIZE_SECONDS)]
            if settings.MNEMO_VECTOR_OPTIMIZE_SECONDS
            else []
        ),
    ],
    at_start=[
        # This process's pool is new: a document still active was left by the process before it.
        lambda: documents_resume_stalled(stalled_after=timedelta(0)),
        refresh_planner_statistics,
    ],
)
