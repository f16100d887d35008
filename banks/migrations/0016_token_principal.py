# An API token may name the principal that calls with it (Astrocyte's token records do): what it
# retains is stamped with it (metadata "_actor"), so a DSAR for that principal finds it.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('banks', '0015_scale_operations'),
    ]

    operations = [
        migrations.AddField(
            model_name='apitoken',
            name='principal',
            field=models.CharField(blank=True, default='', max_length=200),
        ),
    ]
