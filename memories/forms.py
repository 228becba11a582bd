"""Forms of the memory pages: they only parse and check input; every write goes through memories.services."""

from datetime import date, datetime, time, timedelta

from django import forms
from django.utils import timezone

from memories.models import Memory, MemoryType
from memories.services import FORGET_STRATEGIES


class MemoryFilterForm(forms.Form):
    """The browser's GET filters. Invalid fields are reported and left out; the valid ones still apply."""

    q = forms.CharField(
        label="Search",
        required=False,
        max_length=500,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Search memories…"}),
    )
    type = forms.ChoiceField(label="Type", required=False, choices=[("", "all"), *MemoryType.choices])
    session = forms.CharField(
        label="Session",
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"list": "session-keys", "placeholder": "session key"}),
    )
    min_importance = forms.FloatField(
        label="Importance from",
        required=False,
        min_value=0,
        max_value=1,
        widget=forms.NumberInput(attrs={"step": "0.05", "placeholder": "0"}),
    )
    max_importance = forms.FloatField(
        label="to",
        required=False,
        min_value=0,
        max_value=1,
        widget=forms.NumberInput(attrs={"step": "0.05", "placeholder": "1"}),
    )
    date_from = forms.DateField(
        label="Created from", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    date_to = forms.DateField(label="to", required=False, widget=forms.DateInput(attrs={"type": "date"}))
    archived = forms.BooleanField(label="Archived only", required=False)

    def clean(self):
        cleaned = super().clean()
        low, high = cleaned.get("min_importance"), cleaned.get("max_importance")
        if low is not None and high is not None and low > high:
            self.add_error("max_importance", "The upper importance bound is below the lower one.")
        start, end = cleaned.get("date_from"), cleaned.get("date_to")
        if start and end and start > end:
            self.add_error("date_to", "The end date is before the start date.")
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
    memory_type = forms.ChoiceField(label="Type", choices=MemoryType.choices)

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
        label="Importance below",
        min_value=0,
        max_value=1,
        initial=0.1,
        widget=forms.NumberInput(attrs={"step": "0.05"}),
    )
    max_age_days = forms.FloatField(label="Older than (days)", min_value=0, initial=30)
    max_capacity = forms.IntegerField(label="Keep per type", min_value=0, initial=100)
