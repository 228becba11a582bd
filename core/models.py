import hashlib
import secrets
import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core.stored_text import Text, key_of


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class MirrorState(models.TextChoices):
    PENDING = "pending", _("pending")
    SYNCED = "synced", _("synced")
    FAILED = "failed", _("failed")


class MirroredModel(TimeStampedModel):
    """A row mirrored to the vector store and/or Neo4j: its UUID is the point id and the node id."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    mirror_state = models.CharField(max_length=8, choices=MirrorState, default=MirrorState.PENDING)
    mirror_error = models.TextField(blank=True)
    mirrored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class ApiKeyScope(models.TextChoices):
    READ = "read", _("read")
    WRITE = "write", _("read and write")


class ApiKeyQuerySet(models.QuerySet):
    def active(self):
        return self.filter(revoked_at=None)

    def for_user(self, user):
        return self.filter(user=user)


class ApiKey(models.Model):
    """An API key. Only a SHA-256 of the secret is stored: keys are random and long, so a slow hash adds nothing."""

    PREFIX_LENGTH = 10

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=PREFIX_LENGTH, unique=True)
    hashed_secret = models.CharField(max_length=64)
    scope = models.CharField(max_length=5, choices=ApiKeyScope, default=ApiKeyScope.WRITE)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def hash_secret(secret: str) -> str:
        return hashlib.sha256(secret.encode()).hexdigest()

    @classmethod
    def generate(cls) -> tuple[str, str, str]:
        """A new (full key, prefix, hashed secret). The full key is shown once and never stored."""
        prefix = secrets.token_hex(cls.PREFIX_LENGTH // 2)
        secret = secrets.token_urlsafe(32)
        return f"mnemo_{prefix}_{secret}", prefix, cls.hash_secret(secret)

    @staticmethod
    def split(key: str) -> tuple[str, str] | None:
        parts = key.strip().split("_", 2)
        if len(parts) != 3 or parts[0] != "mnemo" or not parts[1] or not parts[2]:
            return None
        return parts[1], parts[2]

    def matches(self, secret: str) -> bool:
        return secrets.compare_digest(self.hashed_secret, self.hash_secret(secret))

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def can_write(self) -> bool:
        return self.scope == ApiKeyScope.WRITE


class PrivacyAction(models.TextChoices):
    MASK = "mask", _("mask it")
    KEEP = "keep", _("keep it")
    REFUSE = "refuse", _("refuse to store it")


class PrivacySettings(models.Model):
    """What happens to secrets and personal data found in a new memory, document or chat message (core.privacy).
    A user without a row gets the defaults."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="privacy")
    secrets = models.CharField(
        max_length=6,
        choices=PrivacyAction,
        default=PrivacyAction.MASK,
        help_text=_("API keys, tokens, passwords, private keys."),
    )
    personal = models.CharField(
        max_length=6,
        choices=PrivacyAction,
        default=PrivacyAction.KEEP,
        help_text=_("Phone numbers, payment card numbers, ID numbers (身份证号, SSN)."),
    )

    class Meta:
        verbose_name_plural = "privacy settings"

    def __str__(self) -> str:
        return f"{self.user}: secrets {self.secrets}, personal data {self.personal}"

    @classmethod
    def policies_for(cls, user) -> dict[str, str]:
        """{"secret": action, "personal": action} for core.privacy.screen."""
        row = cls.objects.filter(user=user).first() or cls()
        return {"secret": row.secrets, "personal": row.personal}


class SubjectChange(models.Model):
    """A change a staff member made to another user's data on the console's pages (core.acting records every
    request under /users/<id>/ that is not a read). The pages' own histories (a memory's edits, the graph's
    curation log) name the staff member as the editor as well; this one also covers what they do not keep, such as
    a deleted memory or document."""

    id = models.BigAutoField(primary_key=True)
    staff = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    subject = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    method = models.CharField(max_length=7)
    path = models.CharField(max_length=500)  # the page's own address, without the /users/<id> prefix
    view = models.CharField(max_length=100, blank=True)  # the URL name, e.g. memory_delete
    status = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["subject", "-created_at"], name="subjectchange_subject_created")]

    def __str__(self) -> str:
        return f"{self.staff} {self.method} {self.path} on {self.subject}'s data ({self.status})"


class MirrorOutbox(models.Model):
    """One mirrored row to write to its store again (core.mirror_outbox): added in the transaction that changes the
    row, deleted by the drain once the store matches the row. The entry says which row, not what to do: the drain
    re-reads the row, so an entry for a row deleted since becomes a delete, and several entries for one row are one
    write."""

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(
        max_length=16
    )  # the mirror that writes it: "memory", "chunk", "entity", "relation"
    object_id = models.CharField(max_length=36)  # the row's UUID: its point id or node id
    created_at = models.DateTimeField(default=timezone.now)
    # A drain working on the entry: other drains leave every entry of the same row alone until the lease ends (a
    # drain that died mid-way gives its entries back then).
    claim = models.CharField(max_length=32, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["kind", "object_id"], name="mirroroutbox_kind_object")]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id}"


class MessageKeyField(models.JSONField):
    """The key of the text in `text_field` (a sibling column; core.stored_text), filled in from a Text whenever the
    row is saved or bulk-created, or updated through a StoredTextQuerySet, so no service has to remember it; {} for
    plain text."""

    def __init__(self, *args: Any, text_field: str = "", **kwargs: Any) -> None:
        self.text_field = text_field
        kwargs.setdefault("default", dict)
        kwargs.setdefault("blank", True)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        kwargs["text_field"] = self.text_field
        return name, path, args, kwargs

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        text = getattr(model_instance, self.text_field)
        if isinstance(text, Text):
            setattr(model_instance, self.attname, key_of(text))
        return super().pre_save(model_instance, add)


class StoredTextQuerySet(models.QuerySet):
    """The manager of a model with a MessageKeyField: update() writes each stored text's key beside it, as a save
    does, unless the call gives the key itself (the key of a text before it was cut, say)."""

    def update(self, **kwargs: Any) -> int:
        for field in self.model._meta.concrete_fields:
            if isinstance(field, MessageKeyField) and field.text_field in kwargs:
                kwargs.setdefault(field.attname, key_of(kwargs[field.text_field]))
        return super().update(**kwargs)
