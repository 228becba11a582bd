"""Forms of the memory pages: they only parse and check input; every write goes through memories.actions."""

import json
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from memories.actions.forgetting import FORGET_STRATEGIES
from memories.actions.rules import PERCEPTUAL_MODALITIES
from memories.models import EditVia, Memory, MemoryType
from memories.types import POLICIES, form_payload


class MemoryFilterForm(forms.Form):
    """The browser's GET filters. Invalid fields are reported and left out; the valid ones still apply."""

    q = forms.CharField(
        label=gettext_lazy("Search"),
        required=False,
        max_length=500,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": gettext_lazy("Search memories…")}),
    )
    type = forms.ChoiceField(
        label=gettext_lazy("Type"), required=False, choices=[("", gettext_lazy("all")), *MemoryType.choices]
    )
    session = forms.CharField(
        label=gettext_lazy("Session"),
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"list": "session-keys", "placeholder": gettext_lazy("session key")}),
    )
    min_importance = forms.FloatField(
        label=gettext_lazy("Importance from"),
        required=False,
        min_value=0,
        max_value=1,
        widget=forms.NumberInput(attrs={"step": "0.05", "placeholder": "0"}),
    )
    max_importance = forms.FloatField(
        label=gettext_lazy("to"),
        required=False,
        min_value=0,
        max_value=1,
        widget=forms.NumberInput(attrs={"step": "0.05", "placeholder": "1"}),
    )
    date_from = forms.DateField(
        label=gettext_lazy("Created from"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    date_to = forms.DateField(
        label=gettext_lazy("to"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    archived = forms.BooleanField(label=gettext_lazy("Archived only"), required=False)
    tag = forms.CharField(
        label=gettext_lazy("Tag"),
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"list": "tag-names", "placeholder": gettext_lazy("tag")}),
    )
    origin = forms.ChoiceField(
        label=gettext_lazy("Source"), required=False, choices=[("", gettext_lazy("any")), *EditVia.choices]
    )
    origin_key = forms.TypedChoiceField(
        label=gettext_lazy("API key"),
        required=False,
        coerce=int,
        empty_value=None,
        choices=[("", gettext_lazy("any"))],
    )

    def __init__(self, *args, keys: Sequence[tuple[int, str]] = (), **kwargs):
        """`keys`: the API keys of the memories' owner, (id, name), for the key filter."""
        super().__init__(*args, **kwargs)
        self.fields["origin_key"].choices = [("", gettext_lazy("any")), *keys]  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data
        low, high = cleaned.get("min_importance"), cleaned.get("max_importance")
        if low is not None and high is not None and low > high:
            self.add_error("max_importance", _("The upper importance bound is below the lower one."))
        start, end = cleaned.get("date_from"), cleaned.get("date_to")
        if start and end and start > end:
            self.add_error("date_to", _("The end date is before the start date."))
        return cleaned

    @property
    def filters(self) -> dict:
        """The valid filters only (call after is_valid())."""
        return {name: value for name, value in self.cleaned_data.items() if value not in (None, "", False)}


def day_bounds(start: date | None, end: date | None) -> tuple[datetime | None, datetime | None]:
    """Whole days in the current time zone: from the start of `start` to the last microsecond of `end`."""
    first = timezone.make_aware(datetime.combine(start, time.min)) if start else None
    last = (
        timezone.make_aware(datetime.combine(end + timedelta(days=1), time.min)) - timedelta(microseconds=1)
        if end
        else None
    )
    return first, last


class MemoryEditForm(forms.Form):
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}))
    importance = forms.FloatField(min_value=0, max_value=1, widget=forms.NumberInput(attrs={"step": "0.05"}))
    memory_type = forms.ChoiceField(label=gettext_lazy("Type"), choices=MemoryType.choices)

    def __init__(self, *args, memory: Memory, **kwargs):
        # Each row carries its own form, so ids must be unique on the page for the labels to work.
        kwargs.setdefault("auto_id", f"edit-{memory.pk}-%s")
        kwargs.setdefault(
            "initial",
            {"content": memory.content, "importance": memory.importance, "memory_type": memory.memory_type},
        )
        super().__init__(*args, **kwargs)
        self.memory = memory


class ForgetForm(forms.Form):
    strategy = forms.ChoiceField(
        choices=[(name, name.replace("_", " ")) for name in FORGET_STRATEGIES], initial="importance_based"
    )
    threshold = forms.FloatField(
        label=gettext_lazy("Importance below"),
        min_value=0,
        max_value=1,
        initial=0.1,
        widget=forms.NumberInput(attrs={"step": "0.05"}),
    )
    max_age_days = forms.FloatField(label=gettext_lazy("Older than (days)"), min_value=0, initial=30)
    max_capacity = forms.IntegerField(label=gettext_lazy("Keep per type"), min_value=0, initial=100)


# --- authoring: the "Add memory" page and the full edit page ---------------------------------------------------

DATETIME_LOCAL = "%Y-%m-%dT%H:%M"
# The fields both pages pass to the services as they are cleaned (content, session and expiry take a step more).
PLAIN_FIELDS = ("memory_type", "importance", "metadata", "tags", "context", "outcome", "participants")


def _names(text: str) -> list[str]:
    """Comma-separated names (a Chinese comma too), trimmed, blanks and repeats dropped, order kept."""
    return list(dict.fromkeys(name.strip() for name in text.replace("，", ",").split(",") if name.strip()))


class MemoryFieldsForm(forms.Form):
    """What the add and the edit page share: every field a person may set on a memory."""

    memory_type = forms.ChoiceField(
        label=gettext_lazy("Type"), choices=MemoryType.choices, initial=MemoryType.SEMANTIC
    )
    content = forms.CharField(
        label=gettext_lazy("Content"), required=False, widget=forms.Textarea(attrs={"rows": 4})
    )
    importance = forms.FloatField(
        label=gettext_lazy("Importance"),
        min_value=0,
        max_value=1,
        initial=0.5,
        widget=forms.NumberInput(attrs={"step": "0.05"}),
    )
    session = forms.CharField(
        label=gettext_lazy("Session"),
        required=False,
        max_length=200,
        help_text=gettext_lazy("A session key; a new key starts a session. Empty: none."),
        widget=forms.TextInput(attrs={"list": "session-keys", "placeholder": gettext_lazy("session key")}),
    )
    tags = forms.CharField(
        label=gettext_lazy("Tags"),
        required=False,
        help_text=gettext_lazy("Comma-separated."),
        widget=forms.TextInput(attrs={"placeholder": gettext_lazy("work, travel")}),
    )
    expires_at = forms.DateTimeField(
        label=gettext_lazy("Expires"),
        required=False,
        input_formats=[DATETIME_LOCAL, "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"],
        help_text=gettext_lazy("Empty: never (working memory: two hours after it is written)."),
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format=DATETIME_LOCAL),
    )
    metadata = forms.CharField(
        label=gettext_lazy("Metadata (JSON)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": '{"source": "notes"}', "spellcheck": "false"}),
    )
    context = forms.CharField(
        label=gettext_lazy("Context"), required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    outcome = forms.CharField(
        label=gettext_lazy("Outcome"), required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    participants = forms.CharField(
        label=gettext_lazy("Participants"), required=False, help_text=gettext_lazy("Comma-separated.")
    )

    @property
    def type_fields(self) -> dict[str, list[str]]:
        """Per type, the fields only it shows (memories.types): the page script reads them through json_script."""
        return form_payload()

    @property
    def more_fields(self) -> list:
        """The fields past content, importance and type: the edit page shows them below the inline row's."""
        return [self[name] for name in self.fields if name not in ("content", "importance", "memory_type")]

    def clean_tags(self) -> list[str]:
        return _names(self.cleaned_data["tags"])

    def clean_participants(self) -> list[str]:
        return _names(self.cleaned_data["participants"])

    def clean_metadata(self) -> dict:
        text = self.cleaned_data["metadata"].strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                _("Metadata is not valid JSON (%(error)s at line %(line)d).")
                % {"error": exc.msg, "line": exc.lineno}
            ) from exc
        except ValueError as exc:  # not a syntax error: a number past Python's 4,300-digit limit
            raise forms.ValidationError(
                _("Metadata is not valid JSON (%(error)s).") % {"error": exc}
            ) from exc
        if not isinstance(value, dict):
            raise forms.ValidationError(_('Metadata must be a JSON object, like {"source": "notes"}.'))
        return value

    def clean_expires_at(self) -> datetime | None:
        moment = self.cleaned_data["expires_at"]
        # Only a newly chosen time must lie ahead: an expired memory can still be edited as it is.
        if moment is not None and "expires_at" in self.changed_data and moment <= timezone.now():
            raise forms.ValidationError(
                _("The expiry is in the past: choose a later time, or leave it empty.")
            )
        return moment


class MemoryAddForm(MemoryFieldsForm):
    field_order = ["memory_type", "content", "file"]

    file = forms.FileField(
        label=gettext_lazy("File"),
        required=False,
        help_text=gettext_lazy("Perceptual memories: an image, audio or video file, or any other."),
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data
        memory_type, upload = cleaned.get("memory_type"), cleaned.get("file")
        keeps_file = memory_type in POLICIES and POLICIES[memory_type].keeps_file
        if upload is not None and not keeps_file:
            self.add_error(
                "file", _("Only a perceptual memory keeps a file: choose that type, or remove the file.")
            )
        elif upload is not None:
            limit = settings.MNEMO_MAX_UPLOAD_MB * 1024 * 1024
            if upload.size == 0:
                self.add_error("file", _("The file is empty."))
            elif upload.size > limit:
                self.add_error(
                    "file", _("The file is larger than %(size)s MB.") % {"size": settings.MNEMO_MAX_UPLOAD_MB}
                )
        if not cleaned.get("content", "").strip() and not (keeps_file and upload):
            self.add_error(
                "content", _("Describe it or add a file.") if keeps_file else _("Write what to remember.")
            )
        return cleaned

    def memory_fields(self) -> dict:
        """memory_write's keyword arguments (all but the session, which the view looks up)."""
        data = self.cleaned_data
        fields = {name: data[name] for name in PLAIN_FIELDS}
        fields["content"] = data["content"].strip()
        if data["expires_at"] is not None:
            fields["expires_at"] = data["expires_at"]
        upload = data.get("file")
        if upload is not None:
            content_type = upload.content_type or ""
            modality = next(
                (name for name, prefix in PERCEPTUAL_MODALITIES.items() if content_type.startswith(prefix)),
                "text",
            )
            fields["metadata"] = {
                **fields["metadata"],
                "filename": upload.name,
                "content_type": content_type,
                "size": upload.size,
            }
            fields.update(
                file=upload, modality=modality, content=fields["content"] or f"[{modality}] {upload.name}"
            )
        return fields


class MemoryPageEditForm(MemoryFieldsForm):
    """The edit page: every field, each starting at the memory's value."""

    def __init__(self, *args, memory: Memory, **kwargs):
        expires_at = memory.expires_at
        kwargs.setdefault(
            "initial",
            {
                "memory_type": memory.memory_type,
                "content": memory.content,
                "importance": memory.importance,
                "session": memory.session.key if memory.session else "",
                "tags": ", ".join(memory.tags),
                # Minutes, as the browser's picker sends them back: seconds would count as a change on every save.
                "expires_at": expires_at.replace(second=0, microsecond=0) if expires_at else None,
                "metadata": json.dumps(memory.metadata, indent=2, ensure_ascii=False, sort_keys=True)
                if memory.metadata
                else "",
                "context": memory.context,
                "outcome": memory.outcome,
                "participants": ", ".join(memory.participants),
            },
        )
        super().__init__(*args, **kwargs)
        self.memory = memory

    def clean_content(self) -> str:
        content = self.cleaned_data["content"]
        if not content.strip():
            raise forms.ValidationError(_("Content must not be empty."))
        return content

    def changes(self) -> dict:
        """memory_update's keyword arguments (the session apart); the expiry only when it was changed."""
        data = self.cleaned_data
        fields = {name: data[name] for name in ("content", *PLAIN_FIELDS)}
        if "expires_at" in self.changed_data:
            fields["expires_at"] = data["expires_at"]
        return fields
