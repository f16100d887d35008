# Recall usage per bank and per memory (bank health, lifecycle), and webhook sources' delivery state (/health/ingest).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('banks', '0011_shared_cache_table'),
    ]

    operations = [
        migrations.CreateModel(
            name='BankUsage',
            fields=[
                ('bank', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='usage', serialize=False, to='banks.bank')),
                ('recall_count', models.BigIntegerField(default=0)),
                ('recall_hit_count', models.BigIntegerField(default=0)),
                ('recall_score_sum', models.FloatField(default=0.0)),
                ('reflect_count', models.BigIntegerField(default=0)),
                ('reflect_success_count', models.BigIntegerField(default=0)),
                ('error_count', models.BigIntegerField(default=0)),
                ('retain_call_count', models.BigIntegerField(default=0)),
                ('retain_dedup_count', models.BigIntegerField(default=0)),
                ('last_recalled_at', models.DateTimeField(blank=True, null=True)),
                ('last_error_at', models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.AddField(
            model_name='memory',
            name='last_recalled_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='webhooksource',
            name='delivery_count',
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='webhooksource',
            name='error_count',
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='webhooksource',
            name='last_delivery_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='webhooksource',
            name='last_error',
            field=models.CharField(blank=True, default='', max_length=500),
        ),
        migrations.AddField(
            model_name='webhooksource',
            name='last_error_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
