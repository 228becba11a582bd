"""The retrieval evaluation sets: the team's hand-written sets, public sets written by others, and LoCoMo.

- The team's sets: every JSON file of `bench/data/retrieval/` (format in its FORMAT.md). Their split says whether a
  set may choose parameters ("dev") or only reports, once, at the end ("test": written afresh by someone who had
  not seen the code or the earlier sets; the earlier test sets became the `*_dev2` development sets). The
  development files of one kind form one set (paraphrase_en = paraphrase_en_dev + paraphrase_en_dev2).
- External sets (`../shared/bench/external/`, its README gives each source, commit and licence): MADial-Bench
  (en, zh, zh questions over en memories), PrefEval, CMRC 2018, DRCD and XQuAD (en and zh questions), converted to
  the same format; never copied into this repository. Knowledge sets are subsampled (seeded) so a run stays within
  minutes: at most EXTERNAL_DOCUMENTS documents, then at most EXTERNAL_QUESTIONS of their questions.
- LoCoMo (`../shared/bench/locomo10.json`, CC BY-NC 4.0, never copied here): every turn an episodic memory of one
  user per conversation, categories 1-4; one set of ten users.
Every set is development data for the leave-one-set-out choice of the ranking's numbers except the team's test
sets. A memory set's answers are memory ids (any one counts); MADial lists every relevant memory, the first being
the one the dialogue recalls: any-of is the lenient reading, used for every set alike.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from memory_bench import CATEGORIES, load_locomo

ROOT = Path(__file__).resolve().parent.parent
TEAM_DIR = ROOT / "bench" / "data" / "retrieval"
EXTERNAL_DIR = ROOT.parent / "shared" / "bench" / "external"
EXTERNAL_MEMORY = ("madial_en", "madial_zh", "madial_xling", "prefeval_explicit")
EXTERNAL_KNOWLEDGE = ("knowledge_cmrc2018", "knowledge_drcd", "knowledge_xquad")
EXTERNAL_DOCUMENTS = 300
EXTERNAL_QUESTIONS = 400
SEED = 7
# No external set has questions without an answer. Each borrows some from a set on another subject in the
# language its questions are asked in (children's dialogues, preference requests, encyclopedia questions): a
# question the store cannot answer. Its figures say how often such a question returns nothing.
NO_ANSWER_DONORS = {
    "madial_en": "prefeval_explicit",
    "madial_zh": "knowledge_cmrc2018",
    "madial_xling": "knowledge_cmrc2018",
    "prefeval_explicit": "knowledge_xquad",
    "knowledge_cmrc2018": "madial_zh",
    "knowledge_drcd": "madial_zh",
    "knowledge_xquad": "prefeval_explicit",
    "locomo": "knowledge_xquad",  # every LoCoMo set (by kind)
}
BORROWED = 30


@dataclass(eq=False)  # hashed by identity: a question is a key of its set's outcomes
class Question:
    id: str
    text: str
    kind: str
    answers: list  # memory ids, LoCoMo dia_ids, or {"document", "contains"} on knowledge sets

    @property
    def answerable(self) -> bool:
        return bool(self.answers)


@dataclass
class Unit:
    """One user's data and questions: a whole set, or one LoCoMo conversation."""

    key: str
    payload: list  # (label, memory fields) pairs, or knowledge documents
    questions: list[Question]


@dataclass
class EvalSet:
    name: str
    split: str  # dev: may choose parameters; test: reported once, at the end
    language: str
    kind: str  # memory | knowledge | locomo
    units: list[Unit]
    source: str = "team"  # team | external
    warnings: list[str] = field(default_factory=list)

    @property
    def questions(self) -> list[Question]:
        return [q for unit in self.units for q in unit.questions]


def load_set(path: Path, source: str = "team") -> EvalSet:
    data = json.loads(path.read_text())
    questions = [
        Question(q["id"], q["question"], q.get("kind", "?"), q["answers"]) for q in data["questions"]
    ]
    name = data.get("name", path.stem)
    if "documents" in data:
        documents = data["documents"]
        for q in questions:  # external sets call the answer's phrase "phrase"
            q.answers = [
                {"document": a["document"], "contains": a.get("contains", a.get("phrase"))} for a in q.answers
            ]
        if source == "external":
            documents, questions = _subsample(documents, questions)
        known = {d["id"] for d in documents}
        if any(a["document"] not in known for q in questions for a in q.answers):
            raise ValueError("answers naming no document")
        payload, kind = documents, "knowledge"
    else:
        known = {m["id"] for m in data["memories"]}
        if len(known) != len(data["memories"]) or any(a not in known for q in questions for a in q.answers):
            raise ValueError("duplicate memory ids, or answers naming no memory")
        payload, kind = [(m["id"], m) for m in data["memories"]], "memory"
    split = data["split"] if source == "team" else "dev"
    return EvalSet(name, split, data.get("language", "?"), kind, [Unit(name, payload, questions)], source)


def _subsample(documents: list, questions: list[Question]) -> tuple[list, list[Question]]:
    rng = random.Random(SEED)
    if len(documents) > EXTERNAL_DOCUMENTS:
        documents = rng.sample(documents, EXTERNAL_DOCUMENTS)
    kept = {d["id"] for d in documents}
    questions = [q for q in questions if q.answers and all(a["document"] in kept for a in q.answers)]
    if len(questions) > EXTERNAL_QUESTIONS:
        questions = rng.sample(questions, EXTERNAL_QUESTIONS)
    return documents, questions


def locomo_sets(selection: list[int]) -> list[EvalSet]:
    """LoCoMo's conversations as two sets, the first half and the rest ("locomo_1-5", "locomo_6-10"): each is
    left out with the other among the sets that choose its numbers, as MADial's three sets are. One set would be
    chosen for by data with nothing like LoCoMo's long conversations in it."""
    half = (len(selection) + 1) // 2
    parts = [part for part in (selection[:half], selection[half:]) if part]
    return [locomo_set(part) for part in parts]


def locomo_set(selection: list[int]) -> EvalSet:
    name = f"locomo_{selection[0]}" + (f"-{selection[-1]}" if len(selection) > 1 else "")
    es = EvalSet(name, "dev", "en", "locomo", [], "external")
    for conv in load_locomo(selection):
        turn = {"memory_type": "episodic", "importance": 0.5}  # as memory_bench posts them
        payload = [(t.dia_id, turn | {"content": t.content, "created_at": t.created_at}) for t in conv.turns]
        questions = [
            Question(f"{conv.sample_id}-{i}", q.text, CATEGORIES[q.category], q.evidence)
            for i, q in enumerate(conv.questions)
        ]
        es.units.append(Unit(f"locomo-{conv.sample_id}", payload, questions))
        es.warnings += [f"{conv.sample_id}: {note}" for note in conv.evidence_notes]
    return es


def all_sets(
    names: list[str] | None, locomo: list[int], team_dir: Path = TEAM_DIR
) -> tuple[list[EvalSet], list[str]]:
    """The sets asked for (None: every one), and the files skipped as unreadable."""
    paths = [(p, "team") for p in sorted(team_dir.glob("*.json"))]
    paths += [(EXTERNAL_DIR / f"{n}.json", "external") for n in (*EXTERNAL_MEMORY, *EXTERNAL_KNOWLEDGE)]
    sets, skipped = [], []
    for path, source in paths:
        try:
            sets.append(load_set(path, source))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            skipped.append(f"{path.name} ({exc!r})")
    if locomo and (names is None or "locomo" in names):
        sets += locomo_sets(locomo)
    for es in sets:
        donor = NO_ANSWER_DONORS.get(es.name) or NO_ANSWER_DONORS.get(es.kind)
        if donor:
            _borrow_no_answer(es, donor)
    return _grouped(sets), skipped


def _borrow_no_answer(es: EvalSet, donor: str) -> None:
    """BORROWED questions of `donor` (English ones for an English set) as no-answer questions of `es`."""
    data = json.loads((EXTERNAL_DIR / f"{donor}.json").read_text())
    english = es.language == "en" or es.name == "knowledge_xquad"
    pool = [q for q in data["questions"] if (q["id"] <= "q1190" if donor == "knowledge_xquad" else True)]
    pool = [q for q in pool if english or es.language != "en"]
    rng = random.Random(f"{SEED}-{es.name}")
    borrowed = rng.sample(pool, min(BORROWED, len(pool)))
    # LoCoMo's questions are spread over its conversations: a few borrowed ones for each.
    for index, q in enumerate(borrowed):
        unit = es.units[index % len(es.units)]
        unit.questions.append(Question(f"none-{donor}-{q['id']}", q["question"], "no-answer", []))


def _grouped(sets: list[EvalSet]) -> list[EvalSet]:
    """The team's development files of one kind (paraphrase_en_dev, paraphrase_en_dev2) as one set of several
    users: they were written by the same people in the same way, so they are left out together."""
    out: dict[str, EvalSet] = {}
    for es in sets:
        if es.source != "team" or es.split != "dev":
            out[es.name] = es
            continue
        kind = es.name.rsplit("_dev", 1)[0]
        group = out.setdefault(kind, EvalSet(kind, "dev", es.language, es.kind, [], "team"))
        group.units += es.units
        group.warnings += es.warnings
    return list(out.values())
