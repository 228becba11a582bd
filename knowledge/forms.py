"""Forms of the knowledge pages: they parse and check input; every write goes through knowledge.services."""

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.limits import MAX_QUERY_CHARS
from knowledge.curation import MAX_CHUNK_CHARS
from knowledge.models import DocumentStatus
from knowledge.pipeline import formats
from knowledge.services import KnowledgeError, check_chunking, check_namespace

ACTIVE = "active"  # the status filter's "in progress": queued, converting, chunking or embedding


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files from one <input type=file multiple>.

    Each file is checked by the service, not here: an empty, oversized or unsupported file is refused on its own
    with the service's reason, and the other files of the same upload still go in.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        files = [file for file in (data if isinstance(data, list | tuple) else [data]) if file]
        if not files and self.required:
            raise ValidationError(_("Choose at least one file."), code="required")
        return files


class UploadForm(forms.Form):
    # The form metaclass moves a declared field out of the class, so `self.files` stays the uploads.
    files = MultipleFileField(  # type: ignore[assignment]
        label=gettext_lazy("Files"),
    )
    namespace = forms.CharField(
        label=gettext_lazy("Namespace"),
        max_length=100,
        initial="default",
        widget=forms.TextInput(attrs={"list": "namespace-list", "autocomplete": "off"}),
    )
    chunk_size = forms.IntegerField(
        label=gettext_lazy("Chunk size (tokens)"), min_value=50, max_value=8000, initial=800
    )
    chunk_overlap = forms.IntegerField(label=gettext_lazy("Overlap (tokens)"), min_value=0, initial=100)

    def __init__(self, *args, **kwargs):
        # The library page holds this form and the filter form, both with a namespace: keep the ids apart.
        kwargs.setdefault("auto_id", "upload-%s")
        super().__init__(*args, **kwargs)
        # Only a hint for the file picker, read from the registry when the form is made (a format registered later
        # counts): the service checks every file's name and bytes itself.
        self.fields["files"].widget.attrs["accept"] = formats.accept()

    def clean_namespace(self) -> str:
        try:
            return check_namespace(self.cleaned_data["namespace"])
        except KnowledgeError as exc:
            raise ValidationError(str(exc)) from None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data
        size, overlap = cleaned.get("chunk_size"), cleaned.get("chunk_overlap")
        if size is not None and overlap is not None:
            try:
                check_chunking(size, overlap)
            except KnowledgeError as exc:
                self.add_error("chunk_overlap", str(exc))
        return cleaned


class LibraryFilterForm(forms.Form):
    """The library's GET filters. An invalid field is reported and left out; the valid ones still apply."""

    q = forms.CharField(
        label=gettext_lazy("Title"),
        required=False,
        max_length=255,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": gettext_lazy("Search titles…")}),
    )
    namespace = forms.ChoiceField(label=gettext_lazy("Namespace"), required=False)
    status = forms.ChoiceField(
        label=gettext_lazy("Status"),
        required=False,
        choices=[("", gettext_lazy("all")), (ACTIVE, gettext_lazy("in progress")), *DocumentStatus.choices],
    )

    def __init__(self, *args, namespaces: list[str], **kwargs):
        kwargs.setdefault("auto_id", "filter-%s")
        super().__init__(*args, **kwargs)
        namespace = self.fields["namespace"]
        assert isinstance(namespace, forms.ChoiceField)
        namespace.choices = [("", gettext_lazy("all")), *((name, name) for name in namespaces)]

    @property
    def filters(self) -> dict:
        """The valid filters only (call after is_valid())."""
        return {name: value for name, value in self.cleaned_data.items() if value not in (None, "")}


class SearchForm(forms.Form):
    """The retrieval test: the same knobs as knowledge.search.search_chunks and ask."""

    q = forms.CharField(
        label=gettext_lazy("Query"),
        max_length=MAX_QUERY_CHARS,
        widget=forms.TextInput(
            attrs={"type": "search", "placeholder": gettext_lazy("Ask or search your documents…")}
        ),
    )
    namespaces = forms.MultipleChoiceField(
        label=gettext_lazy("Namespaces"),
        required=False,
        help_text=gettext_lazy("None selected searches all of them."),
        widget=forms.SelectMultiple(attrs={"size": 4}),
    )
    limit = forms.IntegerField(
        label=gettext_lazy("Results"), required=False, min_value=1, max_value=50, initial=5
    )
    min_score = forms.FloatField(
        label=gettext_lazy("Minimum fused score (σ)"),
        required=False,
        min_value=0,
        max_value=100,
        initial=0.0,
        help_text=gettext_lazy(
            "Standard deviations above the query's candidates; the relevance floor always applies."
        ),
        widget=forms.NumberInput(attrs={"step": "0.5"}),
    )
    mqe = forms.BooleanField(label=gettext_lazy("MQE (multi-query expansion)"), required=False)
    hyde = forms.BooleanField(label=gettext_lazy("HyDE (hypothetical answer)"), required=False)

    def __init__(self, *args, namespaces: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.all_namespaces = namespaces
        namespaces_field = self.fields["namespaces"]
        assert isinstance(namespaces_field, forms.ChoiceField)
        namespaces_field.choices = [(name, name) for name in namespaces]

    def search_arguments(self) -> dict:
        """Keyword arguments for search_chunks/ask, defaults filled in (call after is_valid())."""
        data = self.cleaned_data
        return {
            "namespaces": self.chosen_namespaces(),
            "limit": data.get("limit") or 5,
            "min_score": data.get("min_score") or 0.0,
            "mqe": data.get("mqe", False),
            "hyde": data.get("hyde", False),
        }

    def chosen_namespaces(self) -> list[str]:
        """The selected namespaces, or all of the user's when none is selected (call after is_valid())."""
        return self.cleaned_data.get("namespaces") or self.all_namespaces or ["default"]


class ChunkEditForm(forms.Form):
    text = forms.CharField(
        label=gettext_lazy("Text"),
        strip=False,  # the service strips; a textarea's own line breaks stay as typed
        max_length=MAX_CHUNK_CHARS,
        widget=forms.Textarea(attrs={"rows": 10}),
    )


class RechunkForm(forms.Form):
    """Chunk a document again: the upload form's two settings, checked by the same rule."""

    chunk_size = forms.IntegerField(label=gettext_lazy("Chunk size (tokens)"), min_value=50, max_value=8000)
    chunk_overlap = forms.IntegerField(label=gettext_lazy("Overlap (tokens)"), min_value=0)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "rechunk-%s")
        super().__init__(*args, **kwargs)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data
        size, overlap = cleaned.get("chunk_size"), cleaned.get("chunk_overlap")
        if size is not None and overlap is not None:
            try:
                check_chunking(size, overlap)
            except KnowledgeError as exc:
                self.add_error("chunk_overlap", str(exc))
        return cleaned
