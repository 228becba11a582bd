"""core.queries: the query shapes the search path shares."""

import pytest

from core.queries import owned_by_pk, owned_rows, raw_rows, uuid_text
from memories.models import Entity

pytestmark = pytest.mark.django_db


def test_owned_rows_reads_the_users_rows_among_the_ids_raw_as_owned_by_pk_does(user, other_user):
    kestrel = Entity.objects.create(user=user, name="Kestrel", key="kestrel", frequency=3)
    heron = Entity.objects.create(user=other_user, name="Heron", key="heron", frequency=5)
    Entity.objects.create(user=user, name="Wren", key="wren", frequency=7)  # not asked for
    ids = [str(kestrel.pk), str(heron.pk)]

    rows = owned_rows(Entity, user, ids, ("id", "frequency"))

    assert [(uuid_text(pk), frequency) for pk, frequency in rows] == [(str(kestrel.pk), 3)]
    assert rows == raw_rows(owned_by_pk(Entity.objects.all(), user, ids).values_list("pk", "frequency"))
    assert owned_rows(Entity, other_user, ids, ("frequency",)) == [(5,)]
    assert owned_rows(Entity, user, [], ("id",)) == []
    # Ids in another spelling of the same UUID are parsed, not taken as stored.
    assert owned_rows(Entity, user, [kestrel.pk.hex, str(kestrel.pk).upper()], ("frequency",)) == [(3,)]


def test_with_ids_filters_a_uuid_column_by_ids_in_any_form_and_ignores_what_is_no_uuid(user):
    from core.queries import with_ids

    kestrel, heron, wren = (
        Entity.objects.create(user=user, name=name, key=name.lower()) for name in ("Kestrel", "Heron", "Wren")
    )
    asked = [kestrel.pk, str(heron.pk).upper(), "not-a-uuid", None, str(heron.pk)]

    found = with_ids(Entity.objects.all(), "id", asked)

    assert set(found) == {kestrel, heron}
    assert list(with_ids(Entity.objects.all(), "id", [])) == []
    assert list(with_ids(Entity.objects.all(), "id", ["not-a-uuid"])) == []
    assert list(owned_by_pk(Entity.objects.all(), user, [wren.pk.hex])) == [wren]
