"""Forms of the evaluation page: they parse input; console.evaluation checks ownership and writes."""

import re

from django import forms
from django.utils.datastructures import MultiValueDict
from django.utils.translation import gettext_lazy

from console.evaluation import MAX_TEXT
from console.models import RunScope, Target

_SEPARATORS = re.compile(r"[\s,;]+")


def split_values(text: str) -> list[str]:
    """Ids or namespaces pasted one per line, or separated by commas, semicolons or spaces."""
    return [value for value in _SEPARATORS.split(text or "") if value]


class QuestionForm(forms.Form):
    text = forms.CharField(
        label=gettext_lazy("Question"),
        max_length=MAX_TEXT,
        widget=forms.TextInput(attrs={"placeholder": gettext_lazy("What is…?")}),
    )
    target = forms.ChoiceField(
        label=gettext_lazy("Searches"), choices=Target.choices, initial=Target.MEMORIES
    )
    picked = forms.MultipleChoiceField(
        label=gettext_lazy("Picked answers"), required=False
    )  # checkboxes from the picker
    pasted = forms.CharField(
        label=gettext_lazy("Expected ids"),
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 2, "placeholder": gettext_lazy("memory or chunk ids, one per line")}
        ),
        help_text=gettext_lazy("Memory ids for a memories question, chunk ids for a knowledge one."),
    )
    namespaces = forms.CharField(
        label=gettext_lazy("Namespaces"),
        required=False,
        max_length=1000,
        help_text=gettext_lazy("Knowledge only; empty: the expected chunks' namespaces."),
    )
    no_answer = forms.BooleanField(
        label=gettext_lazy("No answer expected (the right result is nothing)"), required=False
    )
    note = forms.CharField(
        label=gettext_lazy("Note"), required=False, max_length=5000, widget=forms.TextInput()
    )

    def __init__(self, *args, prefix_id: str = "question", **kwargs):
        kwargs.setdefault("auto_id", f"{prefix_id}-%s")
        super().__init__(*args, **kwargs)
        # Any picked value is accepted here; the service refuses what is not an id of the user's.
        picked = self.fields["picked"]
        assert isinstance(picked, forms.ChoiceField)
        picked.choices = [
            (value, value)
            for value in (self.data.getlist("picked") if isinstance(self.data, MultiValueDict) else [])
        ]

    def service_arguments(self) -> dict:
        """Keyword arguments for question_create/question_update (call after is_valid())."""
        data = self.cleaned_data
        ids = list(dict.fromkeys([*data["picked"], *split_values(data["pasted"])]))
        knowledge = data["target"] == Target.KNOWLEDGE
        return {
            "text": data["text"],
            "target": data["target"],
            "expected_memory_ids": [] if knowledge else ids,
            "expected_chunk_ids": ids if knowledge else [],
            "namespaces": split_values(data["namespaces"]),
            "no_answer": data["no_answer"],
            "note": data["note"],
        }


class RunForm(forms.Form):
    scope = forms.ChoiceField(
        label=gettext_lazy("Run"), choices=RunScope.choices, initial=RunScope.ALL, required=False
    )


class AnswerForm(forms.Form):
    """The "✓ right answer" button on the search results."""

    target = forms.ChoiceField(choices=Target.choices)
    q = forms.CharField(max_length=MAX_TEXT)
    answer = forms.UUIDField()
    namespaces = forms.CharField(required=False, max_length=2000)
