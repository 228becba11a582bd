"""Fingerprints and fact slots read the text normalised (core.text.normalise: NFKC plus one form for each quote,
apostrophe and dash), so "Lena’s …" and "Lena's …" are one text. Stored memories get the new fingerprint, and
the facts of those whose text the normalisation changes are indexed again."""

from django.db import migrations


def refingerprint(apps, schema_editor):
    from core.text import fingerprint, normalise
    from memories.facts import slots

    Memory = apps.get_model("memories", "Memory")
    Fact = apps.get_model("memories", "Fact")
    batch, reindexed = [], []
    for memory in Memory.objects.only("pk", "user_id", "content", "memory_type").iterator(chunk_size=2000):
        memory.content_hash = fingerprint(memory.content)
        batch.append(memory)
        if memory.memory_type == "semantic" and normalise(memory.content) != memory.content:
            reindexed.append(memory)
        if len(batch) == 2000:
            Memory.objects.bulk_update(batch, ["content_hash"])
            batch = []
    Memory.objects.bulk_update(batch, ["content_hash"])
    Fact.objects.filter(memory_id__in=[m.pk for m in reindexed]).delete()
    Fact.objects.bulk_create(
        Fact(user_id=m.user_id, memory_id=m.pk, key=slot.key[:200], value=slot.value[:200])
        for m in reindexed
        for slot in slots(m.content)
    )


class Migration(migrations.Migration):
    dependencies = [("memories", "0009_sessions_from_agents")]

    operations = [migrations.RunPython(refingerprint, migrations.RunPython.noop)]
