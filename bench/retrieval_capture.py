"""Ingest an evaluation unit through the product and capture, per question, everything its ranking reads.

A capture holds the signals of every embedding space (not only those the query's language calls on), the graph's
scores, the candidates' ranking columns and the plain-sum baseline's order, so bench/ranking_choice.py can replay
the product's own fusion and shaping (core.hybrid.fuse, memories.scoring.rank) under any RankingConfig without
searching again. Captures are pickled per unit in the data dir and reused while the unit, the indexing code and
CAPTURE_VERSION are unchanged.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import pickle
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np
from evalsets import EvalSet, Question, Unit

LIMIT = 10
# Part of every capture's key: raise it when what a capture holds changes (the index code is in the key already).
CAPTURE_VERSION = 4


@dataclass
class Captured:
    question: Question
    signals: object  # core.hybrid.Signals of every space
    graph: dict[str, float] = field(default_factory=dict)  # memories only
    candidates: dict = field(default_factory=dict)  # memories only: id -> memories.scoring.Candidate
    now: datetime | None = None
    # Per dense model, its cosine with every text of the unit (in CapturedUnit.ids order): the plain sum of any
    # set of models comes from these.
    cosines: dict = field(default_factory=dict)
    # The unit's texts the search may return for this question (memories: current and not expired, as the
    # product's own filter has it); None: all of them (knowledge). The plain sum ranks these only, as each signal
    # alone does: a working memory past its TTL is gone for every system, not an answer only the baseline finds.
    visible: frozenset | None = None


@dataclass
class CapturedUnit:
    key: str
    kind: str  # memory | knowledge | locomo
    labels: dict  # point id -> memory label, or (document label, chunk text) for knowledge
    questions: list[Captured]
    ingest_s: float = 0.0
    username: str = ""  # the unit's user (its store: open_store_of)
    ids: list[str] = field(default_factory=list)  # every point of the unit, in the order of Captured.cosines
    reads: dict = field(default_factory=dict)  # per dense model, the scripts it reads

    def plain(self, item: Captured, models) -> list[str]:
        """The unit's point ids by the plain sum of `models` for this question (core.hybrid.plain_sum) over the
        texts the search may return (Captured.visible), top 10."""
        from core import hybrid
        from core.text import script_of

        rows = [i for i, point_id in enumerate(self.ids) if item.visible is None or point_id in item.visible]
        cosines = {name: values[rows] for name, values in item.cosines.items() if name in models}
        total = hybrid.plain_sum(cosines, script_of(item.signals.query), self.reads)
        return [self.ids[rows[i]] for i in np.argsort(-total, kind="stable")[:LIMIT]]


def index_code(kind: str = "memory") -> str:
    """What a stored point of a set of this kind holds, probed: the points core.hybrid.points makes of two texts
    (dense vectors rounded, sparse terms, payload), the rows' payloads, the chunker and, for knowledge, the text
    a chunk is indexed by. An index made otherwise is redone; query-time code (fusion, weights, floors) may change
    without that."""
    from core import hybrid, stores
    from knowledge import mirror as chunk_mirror
    from memories import mirror

    probe = ["Ana's manager is Kofi Mensah; she flew to Lisbon in May.", "王芳对海鲜过敏，周末喜欢去爬山。"]
    items = [(f"00000000-0000-0000-0000-00000000000{i}", text, {}) for i, text in enumerate(probe)]
    parts = [
        repr((p.sparse, p.payload, {k: np.round(v, 3).tolist() for k, v in sorted(p.dense.items())}))
        for p in hybrid.points(items, stores.embedding_set().embed_documents(probe))
    ]
    parts += [inspect.getsource(f) for f in (mirror.payload, chunk_mirror.chunk_payload)]
    parts += [
        p.read_text() for p in sorted((Path(__file__).parent.parent / "knowledge" / "pipeline").glob("*.py"))
    ]
    if kind == "knowledge":  # what a chunk is indexed by: the memory sets' captures need not be redone for it
        parts.append(inspect.getsource(chunk_mirror.indexed_text))
    return "\n".join(parts)


def open_store_of(data_dir: Path, username: str) -> None:
    """Point the vector store at the Edge store of the unit whose user is `username` (one store per unit)."""
    from django.conf import settings

    from core import stores

    stores.reset(embeddings=False)
    settings.QDRANT_EDGE_PATH = data_dir / "edge" / username


def _user_for(data_dir: Path, unit: Unit, code: str, complete) -> tuple[object, bool]:
    """(user, reused): the unit's user on its own Edge store; the stored one if `complete(user)`, else new."""
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from core import stores

    digest = hashlib.sha1((json.dumps(unit.payload, sort_keys=True, default=str) + code).encode())
    name = f"{unit.key}-{digest.hexdigest()[:10]}"
    open_store_of(data_dir, name)
    user = get_user_model().objects.filter(username=name).first()
    if user is not None and complete(user):
        return user, True
    if user is not None:  # an interrupted load: start again on an empty store
        user.delete()
        stores.reset(embeddings=False)
        shutil.rmtree(settings.QDRANT_EDGE_PATH, ignore_errors=True)
    return get_user_model().objects.create_user(name, password=None), False


def ingest_memories(data_dir: Path, unit: Unit, code: str) -> tuple[object, dict[str, str], bool]:
    """(user, memory pk → label, reused), every memory mirrored into the vector store."""
    from django.utils import timezone
    from django.utils.dateparse import parse_datetime

    from core.models import MirrorState
    from memories.actions.write import NewMemory, memory_bulk_create
    from memories.mirror import sync_memories
    from memories.models import Memory

    # An undated memory is dated at its first load: once such a working memory has expired, load it again.
    undated = {
        k for k, m in unit.payload if m.get("memory_type", "working") == "working" and not m.get("created_at")
    }

    def complete(user) -> bool:
        rows = Memory.objects.filter(user=user, mirror_state=MirrorState.SYNCED)
        expired = rows.filter(expires_at__lte=timezone.now()).values_list("metadata", flat=True)
        return rows.count() == len(unit.payload) and not any(m["eval_id"] in undated for m in expired)

    user, reused = _user_for(data_dir, unit, code, complete)
    if not reused:
        items = []
        for label, m in unit.payload:
            when = m.get("created_at")
            when = parse_datetime(when) if isinstance(when, str) else when
            if when is not None and timezone.is_naive(when):
                when = timezone.make_aware(when, timezone.UTC)
            fields = {k: m[k] for k in ("content", "memory_type", "importance") if k in m}
            items.append(NewMemory(**fields, metadata={"eval_id": label}, created_at=when))
        for start in range(0, len(items), 1000):
            memory_bulk_create(user=user, items=items[start : start + 1000])  # mirrors on commit
        pending = Memory.objects.filter(user=user).exclude(mirror_state=MirrorState.SYNCED)
        sync_memories([str(pk) for pk in pending.values_list("pk", flat=True)])  # raises if the store fails
        if pending.exists():
            raise RuntimeError(f"{unit.key}: {pending.count()} memories not mirrored")
    rows = Memory.objects.filter(user=user).values_list("pk", "metadata")
    return user, {str(pk): meta["eval_id"] for pk, meta in rows}, reused


def ingest_documents(data_dir: Path, unit: Unit, code: str) -> tuple[object, dict[str, tuple], bool]:
    """(user, chunk pk → (document label, text), reused), every document ingested inline."""
    from knowledge.models import Chunk, Document, DocumentStatus
    from knowledge.services import document_create_from_text

    labels = {hashlib.sha256(d["text"].encode()).hexdigest(): d["id"] for d in unit.payload}
    ready = Document.objects.filter(status=DocumentStatus.READY)
    user, reused = _user_for(data_dir, unit, code, lambda u: ready.filter(user=u).count() == len(labels))
    for d in [] if reused else unit.payload:
        document = document_create_from_text(
            user=user, text=d["text"], title=d["title"], namespace="default", background=False
        ).document
        document.refresh_from_db()
        if document.status != DocumentStatus.READY:
            raise RuntimeError(f"{unit.key} {d['id']}: {document.status} {document.error}")
    chunks = Chunk.objects.filter(user=user).select_related("document").defer("document__markdown")
    return user, {str(c.pk): (labels[c.document.sha256], squash(c.text)) for c in chunks}, reused


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def capture_unit(
    es: EvalSet, data_dir: Path, unit: Unit, code: str, stored_only: Path | None = None
) -> CapturedUnit | None:
    """The unit's captures, from the data dir when this unit, the index code and CAPTURE_VERSION are unchanged.
    `stored_only`: read the captures from this folder's captures/ and capture nothing (None where there is none)."""
    key = hashlib.sha1(
        (
            json.dumps(unit.payload, sort_keys=True, default=str)
            + json.dumps([(q.id, q.text) for q in unit.questions], ensure_ascii=False)
            + code
            + str(CAPTURE_VERSION)
        ).encode()
    ).hexdigest()[:12]
    path = (stored_only or data_dir) / "captures" / f"{unit.key}-{key}.pickle"
    if stored_only is not None and not path.exists():
        return None
    if path.exists():
        captured = pickle.loads(path.read_bytes())
        for stored, question in zip(captured.questions, unit.questions, strict=True):
            stored.question = question  # the set's own objects: outcomes are keyed by them
        return captured
    import time

    began = time.perf_counter()
    if es.kind == "knowledge":
        user, labels, _ = ingest_documents(data_dir, unit, code)
    else:
        user, labels, _ = ingest_memories(data_dir, unit, code)
    ingest_s = time.perf_counter() - began
    from core import stores

    reads = {name: embedder.reads for name, embedder in stores.embedding_set().spaces.items()}
    questions = _capture_questions(es, user, labels, unit)
    captured = CapturedUnit(
        unit.key, es.kind, labels, questions, ingest_s, user.get_username(), list(labels), reads
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(captured))
    return captured


def _capture_questions(es: EvalSet, user, labels: dict, unit: Unit) -> list[Captured]:
    from django.utils import timezone

    from core import hybrid, stores
    from core.ranking import RANKING
    from core.text import script_of
    from knowledge import mirror as chunk_mirror
    from knowledge.pipeline.convert import normalise_text
    from memories import mirror, retrieval

    if es.kind == "knowledge":
        store, collection = chunk_mirror.chunk_store(), chunk_mirror.COLLECTION
        where: dict = {"user_id": str(user.pk), "namespace": ["default"]}
    else:
        store, collection = mirror.memory_store(), mirror.COLLECTION
        where = retrieval.build_where(
            user=user, memory_types=None, min_importance=0, session=None, time_range=None, now=timezone.now()
        )
    embedding_set = stores.embedding_set()
    ids = list(labels)
    vectors = {
        name: np.asarray([found[i] for i in ids], dtype=np.float32)
        for name in embedding_set.spaces
        if (found := _all_vectors(store, collection, ids, name))
    }
    visible = None
    if es.kind != "knowledge":
        scope = retrieval._Scope(None, 0.0, None, None, False)
        shown = retrieval._filtered(user, scope, timezone.now()).values_list("pk", flat=True)
        visible = frozenset(str(pk) for pk in shown)
    out = []
    for q in unit.questions:
        now = timezone.now()
        # As the search reads it: knowledge search normalises a query as it normalised the documents.
        text = normalise_text(q.text.strip()) if es.kind == "knowledge" else q.text.strip()
        signals = hybrid.gather(
            store, collection, query=text, where=where, limit=RANKING.candidates, every_space=True
        )
        cosines = {
            name: matrix @ embedding_set.spaces[name].embed_query(text) for name, matrix in vectors.items()
        }
        item = Captured(
            q,
            signals,
            now=now,
            cosines={name: values.astype(np.float32) for name, values in cosines.items()},
            visible=visible,
        )
        if es.kind != "knowledge":
            # The pool the product's own search sees: the spaces its query's language calls on.
            reading = set(embedding_set.spaces_reading(script_of(text))) | {hybrid.LEXICAL}
            pool = {
                pid for name, ranking in signals.rankings.items() if name in reading for pid, _ in ranking
            }
            reach = retrieval._graph_reach(user, text)
            item.graph = retrieval._graph_scores(reach, pool, RANKING)
            item.candidates = retrieval._candidates(user, set(signals.payloads) | set(item.graph), scope, now)
        out.append(item)
    return out


def _all_vectors(store, collection: str, ids: list[str], space: str) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    for start in range(0, len(ids), 512):
        for hit in store.retrieve(collection, ids[start : start + 512], with_vectors=True):
            found[hit.id] = hit.dense[space]
    return found
