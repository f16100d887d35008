import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """Legal holds are persisted, so a restart never silently lifts one."""

    dependencies = [("banks", "0005_audit_target_ids_gin")]

    operations = [
        migrations.CreateModel(
            name="LegalHold",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("hold_id", models.CharField(max_length=255)),
                ("reason", models.TextField()),
                ("set_by", models.CharField(max_length=255)),
                ("set_at", models.DateTimeField(auto_now_add=True)),
                ("released_at", models.DateTimeField(blank=True, null=True)),
                ("released_by", models.CharField(blank=True, max_length=255)),
                ("bank", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="legal_holds",
                                           to="banks.bank")),
            ],
            options={"ordering": ["-set_at", "-id"]},
        ),
        migrations.AddConstraint(
            model_name="legalhold",
            constraint=models.UniqueConstraint(condition=models.Q(("released_at__isnull", True)),
                                               fields=("bank", "hold_id"), name="legal_hold_active_unique"),
        ),
    ]
