# The planner's statistics for when a memory happened (COALESCE(occurred_at, created_at)), the expression
# every recall time filter compares. Without them PostgreSQL guesses that a range keeps a third of the
# rows, whatever the range: recall's choice between reading the rows a filter keeps and walking the graph
# (banks.selectors.recall_exact) then took a week of a million-memory bank for 333,000 rows.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [("banks", "0021_lexeme_statistics")]

    operations = [
        migrations.RunSQL(
            sql="CREATE STATISTICS IF NOT EXISTS memory_when_stats ON (COALESCE(occurred_at, created_at)) "
                "FROM banks_memory",
            reverse_sql="DROP STATISTICS IF EXISTS memory_when_stats",
        ),
    ]
