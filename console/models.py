"""Retrieval evaluation inside the product: golden questions a user keeps, and the runs scored against them."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from core.models import TimeStampedModel


class Target(models.TextChoices):
    # The context keeps "memories" apart from the dashboard's count word of the same spelling.
    MEMORIES = "memories", pgettext_lazy("evaluation target", "memories")
    KNOWLEDGE = "knowledge", pgettext_lazy("evaluation target", "knowledge")


class RunScope(models.TextChoices):
    ALL = "all", _("all questions")
    MEMORIES = "memories", _("memory questions")
    KNOWLEDGE = "knowledge", _("knowledge questions")


class GoldenQuestionQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(user=user)

    def in_scope(self, scope: str):
        return self if scope == RunScope.ALL else self.filter(target=scope)


class GoldenQuestion(TimeStampedModel):
    """A question and the answers the product's search should return for it.

    The expected answers are many-to-many links, so a memory or chunk deleted later simply drops out of them.
    An empty set means "nothing is the right result" only when `no_answer` says so; otherwise the question
    needs answers and a run skips it.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="golden_questions"
    )
    target = models.CharField(max_length=10, choices=Target, default=Target.MEMORIES)
    text = models.TextField()
    expected_memories = models.ManyToManyField("memories.Memory", blank=True, related_name="golden_questions")
    expected_chunks = models.ManyToManyField("knowledge.Chunk", blank=True, related_name="golden_questions")
    namespaces = models.JSONField(default=list, blank=True)  # knowledge: the namespaces the question searches
    no_answer = models.BooleanField(default=False)
    note = models.TextField(blank=True)

    objects = GoldenQuestionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "target", "text"], name="unique_golden_question_per_user")
        ]

    def __str__(self) -> str:
        return f"[{self.target}] {self.text[:60]}"

    def expected_ids(self) -> set[str]:
        """The ids of the expected answers still stored (uses prefetched rows when there are some)."""
        expected = self.expected_memories if self.target == Target.MEMORIES else self.expected_chunks
        return {str(row.pk) for row in expected.all()}

    @property
    def needs_answers(self) -> bool:
        return not self.no_answer and not self.expected_ids()


class EvaluationRunQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(user=user)


class EvaluationRun(models.Model):
    """One run of a user's golden questions against the search as it was configured then.

    Everything is a snapshot (question texts, returned ids, settings), so later edits and deletions never change
    a past run's numbers: history shows what the product did at the time.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="evaluation_runs"
    )
    scope = models.CharField(max_length=10, choices=RunScope, default=RunScope.ALL)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    duration_ms = models.PositiveIntegerField(default=0)
    question_count = models.PositiveIntegerField(default=0)
    skipped_count = models.PositiveIntegerField(default=0)  # questions that needed answers
    summary = models.JSONField(default=dict)  # console.metrics.summarise per group
    results = models.JSONField(default=list)  # one dict per question
    settings = models.JSONField(default=dict)  # what affected search when this ran

    objects = EvaluationRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "-created_at"], name="evaluation_run_user_created")]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.scope}) at {self.created_at:%Y-%m-%d %H:%M}"

    def previous(self) -> "EvaluationRun | None":
        """The run of the same user and scope just before this one: what its numbers are compared with."""
        older = EvaluationRun.objects.for_user(self.user_id).filter(scope=self.scope)
        older = older.filter(
            models.Q(created_at__lt=self.created_at) | models.Q(created_at=self.created_at, pk__lt=self.pk)
        )
        return older.order_by("-created_at", "-id").first()
