"""The one owner of a bank's memory rows: every write to ``banks_memory`` goes through here.

Retain, imports (new rows and overwrites), bulk actions, merges, webhooks, forget, the curation pages
and the admin all call these functions; written-out SQL for memory rows lives in this package and
nowhere else. What it keeps, whoever writes:

* bank-scoped columns are derived from the bank the row is in: its vector-index tier
  (``own_vector_index``), its embedding model and size, its text search configuration (a trigger);
* entity mentions and their counters move together (``Entity.mention_count`` always equals the
  number of the entity's mention rows), set-based, entity rows locked in id order;
* links, duplicate pairs and mentions follow a row into another bank or go with its text;
* a tombstone (a forgotten memory) is never edited again: ``409`` naming the memory;
* a conversation turn's context (the turns before it, banks.turn_context) follows every write to its
  session: inserted late, edited, moved, archived, forgotten or erased, its neighbours' contexts and
  vectors are refreshed (``contexts``: bounded, vectors after the commit); a whole bank's are rebuilt
  in batches (``context_rebuild``: rows stored before sessions existed, a new context window);
* a hook (``on_rows_changed``) sees every insert, overwrite, move and erase, in the writer's transaction;
* tagging, archiving, merging, restoring, forgetting, erasing and moving rows write their own audit
  event (one per call, naming the rows changed), so every surface records them alike.
"""

from banks.services.memory_rows.context_rebuild import rows_contexts_rebuild
from banks.services.memory_rows.contexts import (
    TurnContextsAhead,
    turn_context_ahead,
    turn_context_followers,
    turn_context_refresh,
    turn_vectors_refresh,
)
from banks.services.memory_rows.core import (
    RowsChanged,
    ensure_editable,
    on_rows_changed,
    row_insert,
    row_overwrite,
    row_update,
    rows_archive,
    rows_delete,
    rows_erase,
    rows_forget,
    rows_insert,
    rows_merge_into,
    rows_restore,
    rows_tag,
    rows_untag,
)
from banks.services.memory_rows.mentions import (
    mentions_count,
    mentions_drop,
    mentions_link_memory,
    mentions_link_named,
    mentions_link_pairs,
    mentions_recount,
    mentions_take,
    mentions_unlink_pairs,
)
from banks.services.memory_rows.move import rows_move
from banks.services.memory_rows.upkeep import (
    rows_mark_recalled,
    rows_merged_into_set,
    rows_not_duplicates_note,
    rows_reembed,
    rows_search_config_apply,
    rows_times_repair,
    rows_vector_tier_adopt,
    rows_vectors_fill,
)

__all__ = [
    "TurnContextsAhead", "turn_context_ahead", "turn_context_followers", "turn_context_refresh", "turn_vectors_refresh",
    "RowsChanged", "ensure_editable", "mentions_count", "mentions_drop", "mentions_link_memory", "mentions_link_named",
    "mentions_link_pairs", "mentions_recount", "mentions_take", "mentions_unlink_pairs", "on_rows_changed", "row_insert",
    "row_overwrite", "row_update", "rows_archive", "rows_delete", "rows_erase", "rows_forget", "rows_insert",
    "rows_contexts_rebuild", "rows_mark_recalled", "rows_merge_into", "rows_merged_into_set", "rows_move", "rows_not_duplicates_note",
    "rows_reembed", "rows_restore", "rows_search_config_apply", "rows_tag", "rows_times_repair", "rows_untag",
    "rows_vector_tier_adopt",
    "rows_vectors_fill",
]
