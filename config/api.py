"""The JSON API under /api/v1/: one NinjaAPI, a router per app, API-key auth on everything but health."""

from typing import cast

from django.conf import settings
from django.http import HttpRequest
from ninja import Field, NinjaAPI, Schema, Status
from ninja.errors import AuthenticationError, ValidationError
from ninja.renderers import JSONRenderer

from core.auth import API_AUTH, ApiRequest
from core.disconnect import ClientGone
from core.errors import RequestRefused
from core.health import run_checks


class UnicodeJSONRenderer(JSONRenderer):
    # Chinese memories stay readable in curl output and logs instead of \uXXXX escapes.
    json_dumps_params = {"ensure_ascii": False}


ERROR_SCHEMA = {
    "title": "Error",
    "type": "object",
    "properties": {
        "detail": {
            "description": "What went wrong: a sentence, or for 422 the list of invalid fields.",
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}],
        }
    },
    "required": ["detail"],
}


def _takes(operation: dict, name: str) -> bool:
    return any(parameter.get("name") == name for parameter in operation.get("parameters", []))


def error_statuses(path: str, method: str, operation: dict) -> dict[str, str]:
    """The error statuses an operation can answer, from what it takes; the handlers below produce them."""
    statuses: dict[str, str] = {}
    if operation.get("security"):
        statuses |= {"401": "Missing or invalid API key", "429": "Too many wrong API keys from this address"}
    if operation.get("parameters") or operation.get("requestBody"):
        statuses |= {
            "400": "The body could not be parsed",
            "422": "A field is missing, malformed or over its limit",
        }
    if operation.get("requestBody"):
        statuses["413"] = (
            f"The body is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024**2} MiB, or a file over "
            "MNEMO_MAX_UPLOAD_MB"
        )
    if "{" in path or operation.get("requestBody") or _takes(operation, "user"):
        statuses["404"] = "Not found among this key's owner's data (or, with `user`, that user's)"
    if "/admin/" in path:
        statuses["403"] = "The key's owner is not staff"
    if method != "get":
        statuses["403"] = "This API key is read-only"
    body = operation.get("requestBody", {}).get("content", {})
    if "multipart/form-data" in body:
        statuses["415"] = "The file type is not supported"
    if path.endswith(("/retry", "/cancel", "/rechunk")):
        statuses["409"] = "The document is not in a state that allows this"
    if path.endswith("/chunks/{chunk_id}") and method == "patch":
        statuses["409"] = "The chunk's document is being ingested again"
    if path.endswith("/{decision}"):
        statuses["409"] = "The proposal is not in a state that allows this"
    if path.endswith("/reinstate"):
        statuses["409"] = "The memory is current: nothing replaced it"
    if path.endswith(("/knowledge/ask", "/knowledge/search", "/tools/rag", "/tools/{name}")):
        statuses["499"] = (
            "The client disconnected before the LLM's answer was ready or while the request waited for a CPU "
            "slot (for the access log)"
        )
    elif method == "post" and path.endswith(
        ("/memories/", "/memories/perceptual", "/memories/search", "/tools/memory")
    ):
        statuses["499"] = (
            "The client disconnected while the request waited for a CPU slot (for the access log)"
        )
    return statuses


class MnemoAPI(NinjaAPI):
    def get_openapi_schema(self, *args, **kwargs):
        """Ninja documents each operation's success; this adds the errors every client must handle."""
        schema = super().get_openapi_schema(*args, **kwargs)
        schema.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
        error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
        for path, operations in schema["paths"].items():
            for method, operation in operations.items():
                # Ninja keys a status from a route's `response={404: ...}` as an int: JSON would then hold "404"
                # twice, which Swagger UI's YAML parser refuses ("duplicated mapping key": no API docs at all).
                operation["responses"] = {
                    str(status): value for status, value in operation["responses"].items()
                }
                for status, description in error_statuses(path, method, operation).items():
                    operation["responses"].setdefault(status, {"description": description, "content": error})
                if operation.get("parameters"):
                    # gunicorn answers this itself, as plain HTML, before the request reaches Mnemo.
                    operation["responses"].setdefault(
                        "414", {"description": "The request line is over the server's 4,094 bytes"}
                    )
        return schema


api = MnemoAPI(
    renderer=UnicodeJSONRenderer(),
    title="Mnemo API",
    version="1",
    description=(
        "Memory and knowledge for agents. Authenticate with `X-API-Key: <key>` or `Authorization: Bearer <key>`; "
        "create keys on Settings → API keys or with `python manage.py create_api_key <username>`."
    ),
    urls_namespace="api",
    auth=API_AUTH,
    docs_url="/docs",
)


# One router per app, each naming its full paths (/memories/..., /documents/..., /evaluation/...).
api.add_router("/", "memories.api.router")
api.add_router("/", "knowledge.api.router")
api.add_router("/", "console.api.router")
# After the apps' routers: their POST /tools/memory and /tools/rag match before the registry's /tools/{name}.
api.add_router("/", "agents.api.router")


@api.exception_handler(RequestRefused)
def refused(request: HttpRequest, exc: RequestRefused):
    """Every app's refusal (core.errors), with the status its class names."""
    return api.create_response(request, {"detail": str(exc)}, status=exc.status)


# The Hello-Agents tool routes: every answer that is not ok carries the tool's reply fields beside `detail`.
TOOL_PATHS = ("/tools/memory", "/tools/rag")


@api.exception_handler(ValidationError)
def invalid(request: HttpRequest, exc: ValidationError):
    """Ninja's 422 (`detail`: the invalid fields); on the tool routes also as a tool's failed reply."""
    body: dict = {"detail": exc.errors}
    if request.path.rstrip("/").endswith(TOOL_PATHS) and exc.errors:
        first = exc.errors[0]
        where = ".".join(str(part) for part in first.get("loc", ())[2:]) or "the parameters"
        reason = f"{where}: {str(first.get('msg', 'invalid')).removeprefix('Value error, ')}"
        body |= {"ok": False, "text": f"❌ 参数无效 (invalid parameter) {reason}", "data": {"error": reason}}
    return api.create_response(request, body, status=422)


@api.exception_handler(ClientGone)
def client_left(request: HttpRequest, exc: ClientGone):
    # Nobody reads this answer: 499 (nginx's "client closed request") tells the access log why the work stopped.
    return api.create_response(request, {"detail": str(exc)}, status=499)


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
    detail: str | None = Field(None, description="What answered or why not: only for a logged-in staff user.")
    elapsed_ms: int | None = Field(None, description="Only for a logged-in staff user.")


class HealthOut(Schema):
    ok: bool
    checks: list[HealthCheckOut]


@api.get("/health", auth=None, response={200: HealthOut, 503: HealthOut}, exclude_none=True, tags=["health"])
def health(request: HttpRequest):
    """Whether each concern's backend is up: 200 when all are, 503 (the same body) when any is not, so a load
    balancer or a container health check needs no JSON. Needs no key. Anyone sees up or down per backend; a
    logged-in staff user (the browser session) also sees what answered or why not, and how long it took."""
    checks = [check.as_dict() for check in run_checks()]
    if not (request.user.is_authenticated and request.user.is_staff):
        # Error texts name hosts, ports and file paths: an anonymous caller learns only up or down.
        checks = [{key: check[key] for key in ("concern", "backend", "ok")} for check in checks]
    ok = all(check["ok"] for check in checks)
    return Status(200 if ok else 503, {"ok": ok, "checks": checks})


class MeOut(Schema):
    username: str
    key_name: str
    scope: str


@api.get("/me", response=MeOut, tags=["auth"])
def get_me(request: HttpRequest):
    """The user and key behind this request: a cheap way to test a key."""
    key = cast(ApiRequest, request).auth
    return {"username": key.user.get_username(), "key_name": key.name, "scope": key.scope}
