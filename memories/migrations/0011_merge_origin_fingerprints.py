"""Joins two independent lines: memories' origin (h-users) and the normalised fingerprints (h-hygiene)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0010_memory_origin"),
        ("memories", "0010_normalised_fingerprints"),
    ]

    operations: list = []
