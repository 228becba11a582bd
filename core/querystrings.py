"""Query strings the pages carry along (filters kept across htmx swaps, pagination and redirects)."""

from django.http import QueryDict


def clean_query(query: QueryDict, *drop: str) -> QueryDict:
    """The query without empty values (a submitted form sends every field) and without `drop`."""
    clean = QueryDict(mutable=True)
    for key, values in query.lists():
        kept = [value for value in values if value.strip()]
        if key not in drop and kept:
            clean.setlist(key, kept)
    return clean
