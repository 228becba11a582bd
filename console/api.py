"""Golden questions and evaluation runs over the JSON API. Every query starts from the key's owner."""

from typing import cast

from django.conf import settings
from django.http import FileResponse, HttpRequest
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext
from ninja import Body, File, Query, Router, Status, UploadedFile
from ninja.errors import HttpError
from ninja.pagination import paginate

from console import evaluation, portability
from console.models import EvaluationRun, GoldenQuestion
from console.schemas import ImportOut, QuestionIn, QuestionOut, QuestionPatch, RunDetailOut, RunIn, RunOut
from console.users_api import router as users_router
from core.auth import WRITE_AUTH, ApiRequest
from core.pagination import BoundedLimitOffset

# The app's one router, mounted at the API's root: golden questions and runs, and the data archive.
router = Router(tags=["evaluation"])


def _owner(request: HttpRequest):
    return cast(ApiRequest, request).auth.user


def _questions(request: HttpRequest):
    return GoldenQuestion.objects.for_user(_owner(request)).prefetch_related(
        "expected_memories", "expected_chunks"
    )


def _question(request: HttpRequest, question_id: int) -> GoldenQuestion:
    return get_object_or_404(_questions(request), pk=question_id)


def _run_out(view: evaluation.RunView) -> dict:
    run = view.run
    return {
        "id": run.pk,
        "scope": run.scope,
        "created_at": run.created_at,
        "duration_ms": run.duration_ms,
        "question_count": run.question_count,
        "skipped_count": run.skipped_count,
        "summary": run.summary,
        "settings": run.settings,
        "results": run.results,
        "previous_id": view.previous.pk if view.previous else None,
        "deltas": view.deltas,
        "settings_changed": view.settings_changed,
    }


@router.get("/evaluation/questions", response=list[QuestionOut], summary="List golden questions")
@paginate(BoundedLimitOffset)
def list_questions(request: HttpRequest):
    return _questions(request)


@router.post(
    "/evaluation/questions", response={201: QuestionOut}, summary="Add a golden question", auth=WRITE_AUTH
)
def create_question(request: HttpRequest, payload: QuestionIn):
    """Expected ids must be your own memories (target memories) or chunks (target knowledge); 422 otherwise."""
    question = evaluation.question_create(user=_owner(request), **payload.dict())
    return Status(201, _question(request, question.pk))


@router.get("/evaluation/questions/{int:question_id}", response=QuestionOut, summary="A golden question")
def get_question(request: HttpRequest, question_id: int):
    return _question(request, question_id)


@router.patch(
    "/evaluation/questions/{int:question_id}",
    response=QuestionOut,
    summary="Change a golden question",
    auth=WRITE_AUTH,
)
def update_question(request: HttpRequest, question_id: int, payload: QuestionPatch):
    """Only the fields sent change; an invalid change changes nothing."""
    question = _question(request, question_id)
    evaluation.question_update(question=question, **payload.dict(exclude_unset=True))
    return _question(request, question_id)


@router.delete(
    "/evaluation/questions/{int:question_id}",
    response={204: None},
    summary="Delete a golden question",
    auth=WRITE_AUTH,
)
def delete_question(request: HttpRequest, question_id: int):
    evaluation.question_delete(question=_question(request, question_id))
    return Status(204, None)


@router.post(
    "/evaluation/runs", response={201: RunDetailOut}, summary="Run the evaluation now", auth=WRITE_AUTH
)
def create_run(request: HttpRequest, payload: Body[RunIn | None] = None):
    """Runs every golden question in `scope` against the current search and stores the run (it takes as long
    as that many searches). 422 when there is nothing to run, 503 when search is degraded (nothing stored)."""
    run = evaluation.evaluation_run(user=_owner(request), scope=payload.scope if payload else "all")
    return Status(201, _run_out(evaluation.run_view(run, run.previous())))


@router.get("/evaluation/runs", response=list[RunOut], summary="Evaluation runs, newest first")
def list_runs(request: HttpRequest, limit: int = Query(20, ge=1, le=100)):
    return [_run_out(view) for view in evaluation.run_history(user=_owner(request), limit=limit)]


@router.get(
    "/evaluation/runs/{int:run_id}", response=RunDetailOut, summary="A run with its per-question results"
)
def get_run(request: HttpRequest, run_id: int):
    run = get_object_or_404(EvaluationRun.objects.for_user(_owner(request)), pk=run_id)
    return _run_out(evaluation.run_view(run, run.previous()))


@router.get(
    "/data/export",
    tags=["export"],
    summary="Download all of this key's owner's data as one archive",
    openapi_extra={
        "responses": {
            200: {
                "description": "The archive",
                "content": {"application/zip": {"schema": {"type": "string"}}},
            }
        }
    },
)
def export_data(request: HttpRequest):
    """The archive `manage.py export_user` writes (a ZIP of manifest.json, data.jsonl and files/)."""
    user = _owner(request)
    return FileResponse(
        portability.export_file(user),
        as_attachment=True,
        filename=portability.archive_name(user),
        content_type="application/zip",
    )


@router.post(
    "/data/import",
    tags=["export"],
    response={201: ImportOut},
    summary="Load an archive as this key's owner",
    auth=WRITE_AUTH,
)
def import_data(request: HttpRequest, file: File[UploadedFile]):
    """An archive from export (this or another instance); its rows become this key's owner's, merged into what the
    owner already has by stable keys. Refused as a whole (422, naming the row) when it is not an archive, a row
    breaks a rule of the API, holds rows of other users or links outside itself, or is already loaded here."""
    assert file.size is not None  # Django's upload handlers always count it
    if file.size > settings.MNEMO_MAX_UPLOAD_MB * 1024 * 1024:
        raise HttpError(
            413,
            gettext("the archive is larger than MNEMO_MAX_UPLOAD_MB=%(limit)s MB")
            % {"limit": settings.MNEMO_MAX_UPLOAD_MB},
        )
    imported = portability.import_upload(file, as_username=_owner(request).get_username())
    return Status(201, {"username": imported.username, "counts": imported.counts, "merged": imported.merged})


# The staff-only user administration (/admin/users), its own tag in the docs: one router per app all the same.
router.add_router("/", users_router)
