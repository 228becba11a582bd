"""AgentSession and ChatMessage now belong to memories (memories 0009 takes them over with their tables):
agents forgets them in Django's state only, so no table or row is touched."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0001_initial"),
        ("memories", "0009_sessions_from_agents"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ChatMessage"),
                migrations.DeleteModel(name="AgentSession"),
            ],
        ),
    ]
