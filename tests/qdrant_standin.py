"""A stand-in Qdrant server for tests: the REST calls Mnemo's qdrant-client backend makes, on 127.0.0.1, answered
by qdrant-client's own local engine (`QdrantClient(":memory:")`).

No Qdrant server installs on these machines, and qdrant-client's local mode lives inside one process, while the
production stack has two (the web server and a Celery worker) that must see one store. Serving the local engine
over HTTP gives both processes the same store and sends every vector call through qdrant-client's real REST
client, as QDRANT_URL does against a real server. Only the endpoints core/vectorstore/qdrant.py uses are here.
"""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel, TypeAdapter
from qdrant_client import QdrantClient
from qdrant_client.http import models as m

from tests.served import serve_in_background

_ADAPTERS = {
    name: TypeAdapter(getattr(m, name))
    for name in (
        "CreateCollection",
        "CreateFieldIndex",
        "PointInsertOperations",
        "PointsSelector",
        "QueryRequest",
        "PointRequest",
        "ScrollRequest",
        "CountRequest",
    )
}


def _json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _json(item) for key, item in value.items()}
    return value


class QdrantStandIn:
    def __init__(self) -> None:
        self.client = QdrantClient(location=":memory:")
        self.lock = threading.Lock()  # the local engine is not thread-safe
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.routes = [
            ("GET", r"/", self.info),
            ("GET", r"/collections", lambda body: self.client.get_collections()),
            ("GET", r"/collections/(?P<c>[^/]+)/exists", self.exists),
            ("GET", r"/collections/(?P<c>[^/]+)", self.get_collection),
            ("PUT", r"/collections/(?P<c>[^/]+)", self.create_collection),
            ("DELETE", r"/collections/(?P<c>[^/]+)", self.delete_collection),
            ("PUT", r"/collections/(?P<c>[^/]+)/index", self.create_index),
            ("PUT", r"/collections/(?P<c>[^/]+)/points", self.upsert),
            ("POST", r"/collections/(?P<c>[^/]+)/points/delete", self.delete),
            ("POST", r"/collections/(?P<c>[^/]+)/points/query", self.query),
            ("POST", r"/collections/(?P<c>[^/]+)/points/scroll", self.scroll),
            ("POST", r"/collections/(?P<c>[^/]+)/points/count", self.count),
            ("POST", r"/collections/(?P<c>[^/]+)/points", self.retrieve),
        ]

    def __enter__(self) -> "QdrantStandIn":
        serve_in_background(self.server)
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.client.close()

    # --- endpoints: (body, c=collection) -> result -----------------------------------------------------------

    def info(self, body):
        return {"title": "qdrant stand-in (qdrant-client local engine)", "version": "1.15.0", "commit": None}

    def exists(self, body, c):
        return {"exists": self.client.collection_exists(c)}

    def get_collection(self, body, c):
        return self.client.get_collection(c)

    def create_collection(self, body, c):
        spec = _ADAPTERS["CreateCollection"].validate_python(body)
        return self.client.create_collection(
            c, vectors_config=spec.vectors or {}, sparse_vectors_config=spec.sparse_vectors
        )

    def delete_collection(self, body, c):
        return self.client.delete_collection(c)

    def create_index(self, body, c):
        _ADAPTERS["CreateFieldIndex"].validate_python(body)
        # The local engine ignores payload indexes (and warns about each): filters work unindexed.
        return m.UpdateResult(operation_id=0, status=m.UpdateStatus.COMPLETED)

    def upsert(self, body, c):
        operation = _ADAPTERS["PointInsertOperations"].validate_python(body)
        points = operation.points if isinstance(operation, m.PointsList) else operation.batch
        return self.client.upsert(c, points=points)

    def delete(self, body, c):
        return self.client.delete(c, points_selector=_ADAPTERS["PointsSelector"].validate_python(body))

    def query(self, body, c):
        q = _ADAPTERS["QueryRequest"].validate_python(body)
        return self.client.query_points(
            c,
            query=q.query,
            using=q.using,
            prefetch=q.prefetch,
            query_filter=q.filter,
            search_params=q.params,
            limit=q.limit or 10,
            offset=q.offset,
            with_payload=q.with_payload if q.with_payload is not None else True,
            with_vectors=q.with_vector or False,
            score_threshold=q.score_threshold,
        )

    def scroll(self, body, c):
        s = _ADAPTERS["ScrollRequest"].validate_python(body)
        records, next_offset = self.client.scroll(
            c,
            scroll_filter=s.filter,
            limit=s.limit or 10,
            offset=s.offset,
            with_payload=s.with_payload if s.with_payload is not None else True,
            with_vectors=s.with_vector or False,
            order_by=s.order_by,
        )
        return {"points": records, "next_page_offset": next_offset}

    def count(self, body, c):
        request = _ADAPTERS["CountRequest"].validate_python(body)
        return self.client.count(c, count_filter=request.filter, exact=True)

    def retrieve(self, body, c):
        request = _ADAPTERS["PointRequest"].validate_python(body)
        return self.client.retrieve(
            c,
            ids=request.ids,
            with_payload=request.with_payload if request.with_payload is not None else True,
            with_vectors=request.with_vector or False,
        )

    # --- HTTP ----------------------------------------------------------------------------------------------------

    def answer(self, method: str, path: str, body: Any) -> tuple[int, dict]:
        for verb, pattern, endpoint in self.routes:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                try:
                    with self.lock:
                        result = endpoint(body, **match.groupdict())
                    if endpoint == self.info:  # the root answers without the usual envelope
                        return 200, result
                except ValueError as exc:  # the local engine's "Collection x not found" and bad requests
                    status = 404 if "not found" in str(exc).lower() else 400
                    return status, {"status": {"error": str(exc)}, "time": 0.0}
                return 200, {"result": _json(result), "status": "ok", "time": 0.0}
        return 404, {"status": {"error": f"the stand-in does not serve {method} {path}"}, "time": 0.0}

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                status, payload = standin.answer(
                    self.command, self.path.split("?")[0].rstrip("/") or "/", body
                )
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = _serve

            def log_message(self, *args) -> None:
                pass

        return Handler
