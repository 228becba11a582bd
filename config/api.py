"""The JSON API under /api/v1/: one NinjaAPI, a router per app, API-key auth on everything but health."""

from django.http import HttpRequest
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError
from ninja.renderers import JSONRenderer

from console.evaluation import EvaluationError
from core.auth import API_AUTH
from core.health import run_checks
from core.limits import InputRejected
from core.text import without_paths
from knowledge.services import KnowledgeError


class UnicodeJSONRenderer(JSONRenderer):
    # Chinese memories stay readable in curl output and logs instead of \uXXXX escapes.
    json_dumps_params = {"ensure_ascii": False}


api = NinjaAPI(
    renderer=UnicodeJSONRenderer(),
    title="Mnemo API",
    version="1",
    description=(
        "Memory and knowledge for agents. Authenticate with `X-API-Key: <key>` or `Authorization: Bearer <key>`; "
        "create keys on the API keys page or with `python manage.py create_api_key <username>`."
    ),
    urls_namespace="api",
    auth=API_AUTH,
    docs_url="/docs",
)


api.add_router("/memories/", "memories.api.router")
api.add_router("/sessions/", "memories.api.sessions_router")
api.add_router("/tools/", "memories.api.tools_router")
api.add_router("/", "knowledge.api.router")
api.add_router("/", "memories.graph_api.router")
api.add_router("/tools/", "knowledge.api.tools_router")
api.add_router("/evaluation/", "console.api.router")


@api.exception_handler(KnowledgeError)
def knowledge_refused(request: HttpRequest, exc: KnowledgeError):
    return api.create_response(request, {"detail": str(exc)}, status=exc.status)


@api.exception_handler(EvaluationError)
def evaluation_refused(request: HttpRequest, exc: EvaluationError):
    return api.create_response(request, {"detail": str(exc)}, status=exc.status)


@api.exception_handler(InputRejected)
def refused(request: HttpRequest, exc: InputRejected):
    return api.create_response(request, {"detail": str(exc)}, status=422)


@api.exception_handler(AuthenticationError)
def unauthorized(request: HttpRequest, exc: AuthenticationError):
    return api.create_response(
        request,
        {"detail": "Missing or invalid API key. Send `X-API-Key: <key>` or `Authorization: Bearer <key>`."},
        status=401,
    )


class HealthCheckOut(Schema):
    concern: str
    backend: str
    ok: bool
    detail: str
    elapsed_ms: int


class HealthOut(Schema):
    ok: bool
    checks: list[HealthCheckOut]


@api.get("/health", auth=None, response=HealthOut, tags=["health"])
def health(request: HttpRequest):
    """Which backend serves each concern and whether it is reachable. Needs no key."""
    checks = [check.as_dict() for check in run_checks()]
    for check in checks:  # anyone may call this: it says what is up, not where its files are
        check["detail"] = without_paths(check["detail"])
    return {"ok": all(check["ok"] for check in checks), "checks": checks}


class MeOut(Schema):
    username: str
    key_name: str
    scope: str


@api.get("/me", response=MeOut, tags=["auth"])
def get_me(request: HttpRequest):
    """The user and key behind this request: a cheap way to test a key."""
    key = request.auth
    return {"username": key.user.get_username(), "key_name": key.name, "scope": key.scope}
