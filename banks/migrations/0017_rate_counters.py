# The rate-limit counter table (banks.services.rate_limits): one row per token, written by one upsert.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('banks', '0016_token_principal'),
    ]

    operations = [
        migrations.CreateModel(
            name='RateCounter',
            fields=[
                ('key', models.CharField(max_length=200, primary_key=True, serialize=False)),
                ('started', models.DateTimeField()),
                ('count', models.IntegerField()),
            ],
            options={
                'db_table': 'memoryhub_rate_counter',
            },
        ),
    ]
