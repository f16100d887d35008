"""Multi-hop recall: one hop from the first arms' best hits, through the entity graph and the session.

A question joining two facts ("what does the owner of the dog Biscuit played with do?") finds the
first by its words; the second shares an entity with it ("Pepper's owner Ana is a dog trainer") or
sits next to it in its conversation ("Took him to the vet today." / "She said he needs two kilos").
From the ``SEEDS`` best fused hits, one statement gathers:

- ``hop``: memories mentioning an entity a seed mentions, ranked by how many such entities they share
  and by the best seed's rank (entities mentioned more than ``HUB_MENTIONS`` times are skipped: a
  name in every memory links nothing);
- ``session``: the turns right before and after each seed in its session.

Both are fused with the first arms (banks.recall_fusion weights ``hop`` and ``session``) and the
trace says which seed each new memory came from. Bounded: at most SEEDS seeds, LIMIT rows per list,
read through the (bank, session) and mention indexes. A bank turns it off with
``config.recall.multi_hop: false``.
"""

from __future__ import annotations

from typing import Any

from memoryhub.postgres.prepared import execute_prepared
from memoryhub.replica import read_connection

SEEDS = 5
HUB_MENTIONS = 200
LIMIT = 20

# Each CTE MATERIALIZED: the walk starts from the seeds' own mentions (by memory), then their entities (by
# key), then the other mentions of those (by entity); left to itself the planner may start from every
# entity of the bank instead.
_HOPS_SQL = """
WITH seed AS MATERIALIZED (SELECT s.id, s.ord FROM unnest(%(seeds)s::bigint[]) WITH ORDINALITY AS s(id, ord)),
named AS MATERIALIZED (
    SELECT me.entity_id, min(seed.ord) AS ord FROM seed JOIN banks_memoryentity me ON me.memory_id = seed.id
    GROUP BY me.entity_id
),
linking AS MATERIALIZED (
    SELECT named.entity_id, named.ord FROM named JOIN banks_entity e ON e.id = named.entity_id
    WHERE e.mention_count <= %(hub)s
),
hop AS (
    SELECT me2.memory_id AS id, count(DISTINCT me2.entity_id) AS shared, min(linking.ord) AS via_ord
    FROM linking JOIN banks_memoryentity me2 ON me2.entity_id = linking.entity_id
    JOIN banks_memory m ON m.id = me2.memory_id
    WHERE m.bank_id = %(bank)s AND m.archived_at IS NULL AND m.forgotten_at IS NULL
      AND NOT me2.memory_id = ANY(%(seeds)s::bigint[])
    GROUP BY me2.memory_id ORDER BY shared DESC, via_ord, me2.memory_id DESC LIMIT %(limit)s
),
near AS (
    SELECT n.id, seed.ord AS via_ord FROM seed JOIN banks_memory c ON c.id = seed.id
    CROSS JOIN LATERAL (
        (SELECT m.id FROM banks_memory m WHERE m.bank_id = c.bank_id AND m.session_key = c.session_key
           AND m.archived_at IS NULL AND m.forgotten_at IS NULL AND (m.created_at, m.id) < (c.created_at, c.id)
         ORDER BY m.created_at DESC, m.id DESC LIMIT 1)
        UNION ALL
        (SELECT m.id FROM banks_memory m WHERE m.bank_id = c.bank_id AND m.session_key = c.session_key
           AND m.archived_at IS NULL AND m.forgotten_at IS NULL AND (m.created_at, m.id) > (c.created_at, c.id)
         ORDER BY m.created_at, m.id LIMIT 1)
    ) n
    WHERE c.bank_id = %(bank)s AND c.session_key IS NOT NULL AND NOT n.id = ANY(%(seeds)s::bigint[])
)
SELECT 'hop', id, via_ord FROM hop
UNION ALL
SELECT 'session', id, min(via_ord) FROM near GROUP BY id
"""


# Planning the statement above cost 0.5-0.8 ms of the database's CPU on every recall, running it less
# than 0.1 ms: each connection prepares it once (memoryhub.postgres.prepared; its plan is the same for any
# seeds and bank: the MATERIALIZED steps fix its order) and executes it by name.


def hop_lists(bank_pk: int, seeds: list[int], *, filters_sql: str = "", filters_params: list[Any] | None = None
              ) -> tuple[dict[str, list[int]], dict[int, int]]:
    """({"hop": pks best first, "session": pks best first}, {pk: the seed it came from}) for ``seeds``
    (fused pks, best first). ``filters_sql`` (on alias ``m``, the recall's filters) keeps what they keep."""
    seeds = seeds[:SEEDS]
    if not seeds:
        return {}, {}
    with read_connection().cursor() as cursor:
        execute_prepared(cursor, _HOPS_SQL, {"seeds": seeds, "hub": HUB_MENTIONS, "bank": bank_pk, "limit": LIMIT})
        rows = cursor.fetchall()
    if filters_sql and rows:
        # The recall's filters (tags, times, layers...) apply to what a hop brings too.
        with read_connection().cursor() as cursor:
            cursor.execute(f"SELECT m.id FROM banks_memory m WHERE m.id = ANY(%s) AND {filters_sql}",  # noqa: S608
                           [[r[1] for r in rows], *(filters_params or [])])
            kept = {r[0] for r in cursor.fetchall()}
        rows = [r for r in rows if r[1] in kept]
    lists: dict[str, list[tuple[int, int]]] = {"hop": [], "session": []}
    via: dict[int, int] = {}
    for kind, pk, ord_ in rows:
        lists[kind].append((int(ord_), pk))
        via.setdefault(pk, seeds[int(ord_) - 1])
    ranked = {"hop": [pk for _, pk in lists["hop"]],  # already by shared entities, then seed
              "session": [pk for _, pk in sorted(lists["session"])[:LIMIT]]}
    return {k: v for k, v in ranked.items() if v}, via
