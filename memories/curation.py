"""Clean memory in: each new memory is checked against its owner's current memories before it is stored.

In order, for one new memory:
1. An exact duplicate (the same fingerprint, memories.models.Memory.content_hash) of a current memory of the same
   type in the same scope is not stored again: the existing one counts the repeat and its source. Scope, from
   the type's policy (memories.types): a fact or a perceptual note anywhere; working memory within its session;
   an event within its session and its event_window of the earlier one (the same words at another time are
   another event).
   Texts are compared normalised (core.text.normalise: NFKC, one form for each quote, apostrophe and dash), so
   "Lena’s … Rust!!" repeats "Lena's … Rust".
2. A fact (semantic memory) stating a single-valued fact (memories.facts) with another value than a current fact
   about the same subject and attribute supersedes it: the older one is kept with valid_to and superseded_by.
   An attribute named more or less closely is the same ("favourite language", "favourite programming
   language"); a value in the other language is another only when shown to be (memories.anchors.same_value:
   "马德里" is not "Vienna", "维也纳" is, "阿克米" may be "Acme" and replaces nothing). So does a fact that
   restates one of its nearest current facts word for word but for one value and says it changed ("I study
   English now" after "I study Korean"; memories.facts.changed_value) or says it no longer holds ("I no longer
   drive the Honda"; memories.facts.ended_fact), for facts no slot names. An imported fact
   older than the current one is itself stored as superseded.
3. A fact that says no more than a current fact says is merged into it: dense similarity at least the threshold
   for the pair (THRESHOLDS: within a language; across languages, lower when the two share their names and
   numbers and lowest when their single-valued facts agree value for value), its names and numbers all in the
   current one and in the same order (memories.anchors), and in one language no word of meaning the current
   one lacks, in the same order ("I'm a vegetarian." after "The user is a vegetarian"; not "Jonas taught Elif"
   after "Elif taught Jonas").
Everything else is added. The decision and its reason go into the memories' edit history (memories.actions).
An edit runs the same checks (memories.actions.edit.curate_edit).

With an LLM configured, steps 2 and 3 are the model's, as in mem0's update phase: it sees the new fact and the
current facts it might repeat or contradict (the nearest ones and those about the same subject and attribute),
numbered, and answers add / update / supersede / ignore as JSON, validated before anything is trusted. If the call
fails or the reply is not valid, the offline rules above decide and the reason says so. Bulk writes (imports)
always use the offline rules: one model call per item would make an import of thousands take hours.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from django.contrib.auth.models import User
from django.utils.translation import gettext_noop
from pydantic import ValidationError

from core import stores
from core.llm import LLMClient, LLMError
from core.stored_text import Text, joined
from core.text import CJK, CJK_CUTOFF, LATIN, cjk_ratio, content_words, same_word_order, without_accents
from core.vectorstore import VectorStoreError
from memories import anchors, mirror
from memories.curation_model import ask_model
from memories.facts import Slot, changed_value, ended_fact, same_attribute, says_changed, says_ended, slots
from memories.models import Fact, Memory
from memories.types import names_where

ADD, DUPLICATE, MERGE, SUPERSEDE = "add", "duplicate", "merge", "supersede"
# Chosen on the dev pairs (the hand-written bench/data/dedupe/pairs_dev.json and the dev halves of the public
# sets) and reported on the test ones (bench/dedupe_eval.py, bench/results/dedupe.md).
NEAR_DUPLICATE_SIMILARITY = 0.90
# The share of the existing fact's words of meaning a repeat in the same language must say (chosen on dev).
MIN_COVERAGE = 0.6
# Per kind of evidence (Curator.evidence): the same within a language; across languages (dense similarity across
# scripts runs lower) chosen on the dev halves of the external pairs (bench/dedupe_eval.py, results/dedupe.md);
# for a pair whose single-valued facts are the same value for value a floor only: the facts agree, the wording
# may not.
THRESHOLDS = {
    "language": NEAR_DUPLICATE_SIMILARITY,
    "facts": 0.35,  # a floor, not chosen: the facts agree value for value, the wording may not
    "names": 0.65,
    "numbers": 0.60,
    "none": 0.65,
}
# A repeat's similarity weighs the models that read both texts' script (MiniLM, e5) at this share and the
# cross-lingual one (USE, whose cosines run lower) at the rest: the scale the thresholds were chosen on.
SCRIPT_BOUND_SHARE = 0.85
NEAR_CANDIDATES = 5
# A fact's nearest stored facts: (point id → score per space, point id → whether its text is CJK).
_Neighbours = tuple[dict[str, dict[str, float]], dict[str, bool]]


@dataclass(frozen=True)
class Decision:
    action: str  # ADD, DUPLICATE, MERGE or SUPERSEDE
    existing: Memory | None = None  # the memory a duplicate or merge is counted on
    superseded: tuple[Memory, ...] = ()  # current facts the new one replaces
    superseded_by: Memory | None = None  # an imported fact older than the current one
    reason: str = ""
    similarity: float | None = None
    merged_text: str | None = None  # the model's merged wording of the existing memory (update)


@dataclass
class Curator:
    """Decisions for one write call; a bulk call also checks each item against the items before it."""

    user: User
    enabled: bool = True
    llm: LLMClient | None = None  # decides steps 2 and 3 when set
    # False: compare with the batch only, not with the stored memories (cleaning a store: memories.cleaning)
    against_store: bool = True
    _batch: list[Memory] = field(default_factory=list)  # accepted, not yet in the vector store
    # A bulk write's facts embedded at once (rows per space), each new fact compared with all in one product;
    # only the rows of facts accepted so far count.
    _rows: dict[str, np.ndarray] = field(default_factory=dict)
    _row_of: dict[object, int] = field(default_factory=dict)  # memory pk → row
    _row_cjk: list[bool] = field(default_factory=list)
    _accepted_rows: list[tuple[int, Memory]] = field(default_factory=list)
    _slots: dict[object, list[Slot]] = field(default_factory=dict)  # memory pk → its slots
    # The texts (content hashes) among a bulk write's that the user has stored already; None: not looked up
    _stored_hashes: set[str] | None = None
    # memory pk → its nearest stored facts, looked up by prepare()
    _stored_near: dict[object, "_Neighbours"] = field(default_factory=dict)
    # The last _similar() answer and what it was for (pk, text, facts accepted so far): one decision asks for it
    # up to twice (a marked change, then a near-duplicate), and each asking searches the vector store.
    _last_similar: tuple[tuple, list] | None = None

    def prepare(self, memories: Sequence[Memory]) -> None:
        """Embed the facts among `memories` in one call (the embedding set keeps them for the mirror that follows)
        and look up each one's nearest stored facts. Writers call it before their transaction: neither step needs
        the database, and on SQLite the transaction holds the one write lock that every other writer waits for
        (a bulk of 200 once held it for seconds of embedding)."""
        facts = [m for m in memories if m.policy.states_facts]
        if not (self.enabled and facts):
            return
        self._rows = stores.embedding_set().embed_documents([m.content for m in facts])
        self._row_of = {m.pk: row for row, m in enumerate(facts)}
        self._row_cjk = [cjk_ratio(m.content) >= CJK_CUTOFF for m in facts]
        if self.against_store:
            for row, memory in enumerate(facts):
                vectors = {name: matrix[row] for name, matrix in self._rows.items()}
                near = self._stored_neighbours(vectors, self._row_cjk[row])
                if near is not None:
                    self._stored_near[memory.pk] = near

    def load_stored_hashes(self, memories: Sequence[Memory]) -> None:
        """Which of the batch's texts the user has stored already, in one query inside the write transaction:
        an item whose text is not among them needs no duplicate query of its own (200 of them were half of a
        bulk's time holding the write lock)."""
        if self.enabled and self.against_store:
            hashes = {memory.content_hash for memory in memories}
            self._stored_hashes = set(
                Memory.objects.current()
                .filter(user=self.user, content_hash__in=hashes)
                .values_list("content_hash", flat=True)
            )

    def slots_of(self, memory: Memory) -> list[Slot]:
        if not memory.policy.states_facts:
            return []
        # By primary key (a new memory has its UUID already), never id(): rows read and dropped inside one
        # bulk write would reuse ids.
        if memory.pk not in self._slots:
            self._slots[memory.pk] = slots(memory.content)
        return self._slots[memory.pk]

    def decide(self, memory: Memory, edited: bool = False) -> Decision:
        """What to do with `memory`, new or just edited (`edited`: its text is stated now, and it is compared
        with the user's other memories, never with itself)."""
        if not self.enabled:
            return Decision(ADD)
        repeat = self._exact(memory)
        if repeat is not None:
            return Decision(
                DUPLICATE,
                existing=repeat,
                reason=Text(gettext_noop("the same text is already stored")),
                similarity=1.0,
            )
        if not memory.policy.states_facts:
            return Decision(ADD)
        failure = ""
        if self.llm is not None:
            try:
                return self._ask_model(memory)
            except (LLMError, ValueError, ValidationError) as exc:
                failure = str(exc)[:200]
        decision = (
            self._contradictions(memory, edited)
            or self._marked_change(memory, edited)
            or self._near_duplicate(memory)
            or Decision(ADD)
        )
        if failure and decision.action != ADD:
            offline = gettext_noop("offline rules (the model's decision failed: %(error)s): %(reason)s")
            return replace(decision, reason=Text(offline, error=failure, reason=decision.reason))
        return decision

    # --- the model's decision -----------------------------------------------------------------------------

    def _ask_model(self, memory: Memory) -> Decision:
        """mem0's update phase: the model chooses; ids are shown as small numbers so none can be invented."""
        candidates: dict[object, Memory] = {}
        for slot in self.slots_of(memory):
            for fact in Fact.objects.filter(
                user=self.user, key=slot.key[:200], memory__in=Memory.objects.current()
            ).select_related("memory"):
                candidates.setdefault(fact.memory.pk, fact.memory)
        nearest = sorted(self._similar(memory), key=lambda pair: pair[1], reverse=True)
        # As mem0 does, the nearest facts whatever their similarity: a paraphrase in another language or a
        # changed fact worded anew ("Started at Globex" after "I work at Acme") can sit far below any threshold.
        for existing, _ in nearest[:NEAR_CANDIDATES]:
            candidates.setdefault(existing.pk, existing)
        if not candidates:
            return Decision(
                ADD, reason=Text(gettext_noop("the model was not asked: the user has no current fact yet"))
            )
        assert self.llm is not None  # decide() asks the model only when there is one
        choice, targets = ask_model(self.llm, memory.content, list(candidates.values()))
        reason = Text(gettext_noop("the model: %(reason)s"), reason=choice.reason or choice.decision)
        if choice.decision != "add" and not targets:
            raise ValueError(f"the model chose {choice.decision} without a valid target")
        if choice.decision == "ignore":
            return Decision(DUPLICATE, existing=targets[0], reason=reason)
        if choice.decision == "update":
            text = (choice.text or "").strip() or None
            return Decision(MERGE, existing=targets[0], reason=reason, merged_text=text)
        if choice.decision == "supersede":
            return Decision(SUPERSEDE, superseded=tuple(targets), reason=reason)
        return Decision(ADD, reason=reason)

    def accept(self, memory: Memory) -> None:
        self._batch.append(memory)
        if memory.pk in self._row_of:
            self._accepted_rows.append((self._row_of[memory.pk], memory))

    # --- 1. exact duplicates ------------------------------------------------------------------------------

    def _exact(self, memory: Memory) -> Memory | None:
        if memory.file:
            return None
        for earlier in self._batch:
            if earlier.content_hash == memory.content_hash and self._same_scope(earlier, memory):
                return earlier
        if not self.against_store:
            return None
        if self._stored_hashes is not None and memory.content_hash not in self._stored_hashes:
            return None
        found = Memory.objects.current().filter(
            user=self.user, content_hash=memory.content_hash, memory_type=memory.memory_type
        )
        policy = memory.policy
        if policy.repeats_per_session:
            found = found.filter(session=memory.session)
        if policy.event_window is not None:
            found = found.filter(
                created_at__gte=memory.created_at - policy.event_window,
                created_at__lte=memory.created_at + policy.event_window,
            )
        return found.filter(file="").exclude(pk=memory.pk).order_by("created_at").first()

    @staticmethod
    def _same_scope(earlier: Memory, memory: Memory) -> bool:
        if earlier.memory_type != memory.memory_type or earlier.file:
            return False
        policy = memory.policy
        if policy.repeats_per_session and earlier.session != memory.session:
            return False
        if policy.event_window is not None:
            return abs(earlier.created_at - memory.created_at) <= policy.event_window
        return True

    # --- 2. contradictions --------------------------------------------------------------------------------

    def _contradictions(self, memory: Memory, edited: bool = False) -> Decision | None:
        """Current facts stating another value for a subject and attribute the memory states. A value in the
        other language counts as another only when it is shown to be one (anchors.same_value): "我住在里斯本"
        repeats "The user lives in Lisbon", it does not replace it."""
        own = self.slots_of(memory)
        if not own:
            return None
        older: dict[object, Memory] = {}
        reasons = []
        for slot in own:
            rivals = [
                earlier
                for earlier in self._batch
                if earlier.superseded_by is None
                and any(
                    _replaces(slot, s.attribute, s.value)
                    for s in self.slots_of(earlier)
                    if s.subject == slot.subject
                )
            ]
            if self.against_store:
                rivals += [
                    fact.memory
                    for fact in self._stored_facts(slot)
                    if fact.memory_id != memory.pk and _replaces(slot, fact.key.partition("|")[2], fact.value)
                ]
            for rival in rivals:
                older.setdefault(rival.pk, rival)
                reasons.append(_describe(slot, was=_clip(rival.content)))
        return self._superseding(memory, older, reasons, edited)

    def _marked_change(self, memory: Memory, edited: bool = False) -> Decision | None:
        """Current facts that the memory restates with one value replaced and a word saying it changed
        (memories.facts.changed_value: "I study English now" after "I study Korean"), or says no longer hold
        (memories.facts.ended_fact: "I no longer drive the Honda" after "I drive a Honda"), among its nearest
        ones: the facts no single-valued slot names."""
        content = memory.content
        if not memory.policy.states_facts or not (says_changed(content) or says_ended(content)):
            return None
        older: dict[object, Memory] = {}
        reasons = []
        for existing, _ in sorted(self._similar(memory), key=lambda pair: pair[1], reverse=True):
            if existing.pk == memory.pk:
                continue
            if (change := changed_value(existing.content, content)) is not None:
                reason = Text(
                    gettext_noop("%(value)s in place of %(old)s (was: %(fact)s)"),
                    value=change[1],
                    old=change[0],
                    fact=_clip(existing.content),
                )
            elif ended_fact(existing.content, content):
                reason = Text(gettext_noop("no longer holds: %(fact)s"), fact=_clip(existing.content))
            else:
                continue
            older.setdefault(existing.pk, existing)
            reasons.append(reason)
        return self._superseding(memory, older, reasons, edited)

    def _superseding(
        self, memory: Memory, older: dict[object, Memory], reasons: list, edited: bool
    ) -> Decision | None:
        """The decision for a memory that states newer values than the `older` facts (None when there are none)."""
        if not older:
            return None
        reason = Text(
            gettext_noop("newer value: %(values)s"), values=joined("; ", list(dict.fromkeys(reasons)))
        )
        # An edit states its fact now, whenever the memory was first written.
        newer_than_new = [] if edited else [m for m in older.values() if m.created_at > memory.created_at]
        if newer_than_new:
            # An import of an older fact: it goes in already superseded by the current one.
            latest = max(newer_than_new, key=lambda m: m.created_at)
            return Decision(
                SUPERSEDE,
                superseded_by=latest,
                reason=Text(
                    gettext_noop("an older value than the current fact: %(fact)s"), fact=_clip(latest.content)
                ),
            )
        return Decision(SUPERSEDE, superseded=tuple(older.values()), reason=reason)

    def _stored_facts(self, slot: Slot):
        """The user's current facts about the slot's subject and attribute, a kind of favourite or attribute
        named more or less closely included ("favourite:language" for "favourite:programming language")."""
        current = Fact.objects.filter(user=self.user, memory__in=Memory.objects.current()).select_related(
            "memory"
        )
        family, colon, _ = slot.attribute.partition(":")
        if colon and family in ("favourite", "attribute"):
            return [
                fact
                for fact in current.filter(key__startswith=f"{slot.subject}|{family}:"[:200])
                if same_attribute(slot.attribute, fact.key.partition("|")[2])
            ]
        return list(current.filter(key=slot.key[:200]))

    # --- 3. near-duplicates -------------------------------------------------------------------------------

    def _near_duplicate(self, memory: Memory) -> Decision | None:
        lowest = min(THRESHOLDS.values())
        # A bulk write compares with every fact before it: the cheap cut first, the evidence for the few left.
        similar = sorted(
            (pair for pair in self._similar(memory) if pair[1] >= lowest), key=lambda pair: pair[1]
        )
        # The nearest fact above the threshold for its pair of languages that the memory adds nothing to.
        best = next(
            (
                (existing, similarity)
                for existing, similarity in reversed(similar)
                if similarity >= self.threshold(memory, existing) and self._compatible(memory, existing)
            ),
            None,
        )
        if best is None:
            return None
        existing, similarity = best
        return Decision(
            MERGE,
            existing=existing,
            reason=Text(
                gettext_noop("says the same as this memory (similarity %(similarity)s)"),
                similarity=f"{similarity:.2f}",
            ),
            similarity=round(similarity, 4),
        )

    def _similar(self, memory: Memory) -> list[tuple[Memory, float]]:
        """Current facts of this user nearest to `memory`, each with the dense similarity the search fusion
        would weigh for the pair (only the models that read both texts' languages)."""
        key = (memory.pk, memory.content, len(self._accepted_rows))
        if self._last_similar is None or self._last_similar[0] != key:
            self._last_similar = (key, self._nearest_facts(memory))
        return self._last_similar[1]

    def _nearest_facts(self, memory: Memory) -> list[tuple[Memory, float]]:
        embedding_set = stores.embedding_set()
        vectors = {name: rows[0] for name, rows in embedding_set.embed_documents([memory.content]).items()}
        cjk = cjk_ratio(memory.content) >= CJK_CUTOFF
        similar: list[tuple[Memory, float]] = []
        if self._accepted_rows:
            by_script = {
                other: embedding_set.pair_weights(_script(cjk), _script(other), SCRIPT_BOUND_SHARE)
                for other in (False, True)
            }
            total = np.zeros(len(self._row_cjk), dtype=np.float32)
            for name, matrix in self._rows.items():
                row_weights = np.array([by_script[other][name] for other in self._row_cjk], dtype=np.float32)
                total += row_weights * (matrix @ vectors[name])
            similar += [(m, float(total[row])) for row, m in self._accepted_rows if m.superseded_by is None]
        if not self.against_store:
            return similar
        near = self._stored_near.get(memory.pk) or self._stored_neighbours(vectors, cjk)
        if near is None:
            return similar  # exact duplicates and contradictions are still caught from the database
        by_id, cjk_by_id = near
        current = Memory.objects.current().filter(user=self.user, pk__in=list(by_id))
        rows = {str(row.pk): row for row in current}  # keyed as the store's point ids, as retrieval does
        for point_id, scores in by_id.items():
            row = rows.get(point_id)
            if row is None or row.pk == memory.pk:
                continue
            weights = embedding_set.pair_weights(
                _script(cjk), _script(cjk_by_id[point_id]), SCRIPT_BOUND_SHARE
            )
            # A space that did not return the point counts it at 0: never above the threshold by absence.
            similar.append((row, sum(w * scores.get(n, 0.0) for n, w in weights.items())))
        return similar

    def _stored_neighbours(self, vectors: dict[str, np.ndarray], cjk: bool) -> "_Neighbours | None":
        """The user's stored facts nearest to `vectors` in each space: (point id → score per space, point id →
        whether its text is CJK); None while the vector store is unavailable."""
        by_id: dict[str, dict[str, float]] = {}
        cjk_by_id: dict[str, bool] = {}
        try:
            store = mirror.memory_store()
            where = {
                "user_id": str(self.user.pk),
                "memory_type": names_where(lambda policy: policy.states_facts),
            }
            for name, vector in vectors.items():
                for hit in store.search(
                    mirror.COLLECTION,
                    using=name,
                    vector=vector.tolist(),
                    limit=NEAR_CANDIDATES,
                    where=where,
                    payload_keys=("cjk",),
                ):
                    by_id.setdefault(hit.id, {})[name] = hit.score
                    cjk_by_id[hit.id] = bool(hit.payload.get("cjk", cjk))
        except VectorStoreError:
            return None
        return by_id, cjk_by_id

    def evidence(self, memory: Memory, existing: Memory) -> str:
        """What besides dense similarity says a pair is one statement: "facts" when the new memory states only
        single-valued facts the existing one states with the same values ("用户名叫小明" after "我叫小明";
        "我住在里斯本" after "The user lives in Lisbon"); else "language" for a pair in one language; for a pair in
        two languages "names" when they share a name ("我的狗叫Pixel", "a dog called Pixel"), "numbers" when they
        share numbers only, "none" when they share nothing."""
        own, theirs = self.slots_of(memory), self.slots_of(existing)
        if own and all(
            any(
                mine.subject == other.subject
                and same_attribute(mine.attribute, other.attribute)
                and anchors.same_value(mine.value, other.value) is True
                for other in theirs
            )
            for mine in own
        ):
            return "facts"
        if anchors.has_cjk(memory.content) == anchors.has_cjk(existing.content):
            return "language"
        shared = [a for a in anchors.anchors(memory.content) if anchors.covered(a, existing.content)]
        if any(not a.isdigit() for a in shared):
            return "names"
        return "numbers" if shared else "none"

    def threshold(self, memory: Memory, existing: Memory) -> float:
        """The dense similarity a merge of the pair needs (its languages and evidence: Curator.evidence)."""
        return THRESHOLDS[self.evidence(memory, existing)]

    def _compatible(self, memory: Memory, existing: Memory) -> bool:
        """A merge must lose nothing. The new memory's names and numbers are all in the existing one, those of
        one script in the same order (memories.anchors: "Kofi reports to Ana" is not "Ana reports to Kofi").
        In one language: both state the same single-valued facts with the same values ("我叫小明", "用户名叫小明");
        or, stating none, the new memory names no word of meaning (name, number, noun, verb, negation) that the
        existing one lacks. Offline there is no telling a synonym from a substitute ("kid"/"child",
        "brother"/"sister"), so any new word keeps the memory apart; with an LLM the model decides. Across
        languages words cannot be compared: the dense models must agree strongly (CROSS_LANGUAGE_SIMILARITY)
        and every single-valued fact both state must have the same value in both (a value in one language
        matched to one in the other: anchors.same_value)."""
        if not anchors.says_no_more(memory.content, existing.content):
            return False
        own, theirs = self.slots_of(memory), self.slots_of(existing)
        if anchors.has_cjk(memory.content) != anchors.has_cjk(existing.content):
            # Both ways: a name or number one side states and the other lacks may be said there in words no
            # anchor catches ("Sunday", "星期六"), so a restatement across languages names the same ones.
            return anchors.says_no_more(existing.content, memory.content) and all(
                anchors.same_value(mine.value, other.value) is True
                for mine in own
                for other in theirs
                if mine.subject == other.subject and same_attribute(mine.attribute, other.attribute)
            )
        if not same_word_order(memory.content, existing.content):
            return False  # the same words in another order: "Lia lent Tom a pen" is not "Tom lent Lia a pen"
        if own or theirs:
            return {(s.key, without_accents(s.value)) for s in own} == {
                (s.key, without_accents(s.value)) for s in theirs
            }
        mine, their_words = content_words(memory.content), content_words(existing.content)
        # A repeat says what the fact says, not a scrap of it ("朝鲜核试验" after "朝鲜核试验引发担忧"), and a text of
        # stop words alone says nothing to compare.
        return bool(mine) and mine <= their_words and len(mine) >= MIN_COVERAGE * len(their_words)


def _replaces(slot: Slot, attribute: str, value: str) -> bool:
    """Whether a new fact (`slot`) replaces an earlier one of the same subject stating `attribute` = `value`:
    the same attribute and a value shown to be another (one the other language may name is not)."""
    return same_attribute(slot.attribute, attribute) and anchors.same_value(value, slot.value) is False


def _script(cjk: bool) -> str:
    return CJK if cjk else LATIN


def _describe(slot: Slot, *, was: str) -> Text:
    subject = Text(gettext_noop("the user")) if slot.subject == "user" else slot.subject
    return Text(
        gettext_noop("%(subject)s's %(attribute)s is %(value)s (was: %(old)s)"),
        subject=subject,
        attribute=slot.attribute.replace(":", " "),
        value=slot.value,
        old=was,
    )


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
