from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0005_graph_edit"),
    ]

    operations = [
        migrations.AddField(
            model_name="memoryaccess",
            name="rank",
            field=models.PositiveSmallIntegerField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["user", "access_count"], name="memory_user_access_count"),
        ),
    ]
