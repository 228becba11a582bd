import os
from datetime import timedelta

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# The rest needs the apps loaded.
from django.conf import settings  # noqa: E402

from config.warmup import warm_up  # noqa: E402
from core.dispatch import dispatch, start_background_work  # noqa: E402
from core.tasks import (  # noqa: E402
    check_mirrors,
    optimize_vectors_when_quiet,
    refresh_planner_statistics,
    sweep_mirror_outbox,
)
from knowledge.services import documents_resume_stalled  # noqa: E402
from knowledge.tasks import resume_stalled_documents  # noqa: E402
from memories.tasks import prune_access_log  # noqa: E402

# Before gunicorn's worker accepts its first connection: the first requests take what later ones do.
warm_up()

start_background_work(
    periodic=[
        (sweep_mirror_outbox, settings.MNEMO_MIRROR_SWEEP_SECONDS),
        (check_mirrors, settings.MNEMO_MIRROR_CHECK_SECONDS),
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
        # A store deleted or damaged while the server was down shows at once, not at the first period.
        lambda: dispatch(check_mirrors),
    ],
)
