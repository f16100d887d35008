from django.db import migrations, models


class Migration(migrations.Migration):
    """Two columns on the jobs table: a constant default and a nullable column, no rewrite, no index."""

    dependencies = [("banks", "0026_bank_scoped_full_text_index")]

    operations = [
        migrations.AddField(model_name="job", name="phase",
                            field=models.CharField(blank=True, default="", db_default="", max_length=64)),
        migrations.AddField(model_name="job", name="resumed_by",
                            field=models.BigIntegerField(blank=True, null=True)),
    ]
