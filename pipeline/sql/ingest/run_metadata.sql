-- grade.metadata flattened: one row per leaf, list and empty object, keyed by
-- its dotted path below grade.metadata (list items as [i]; a key that is not a plain
-- identifier quoted, as json_tree writes it: a."b.c"). Reads the fragment
-- task_fields.sql extracted, walked by json_nodes (queries/session.sql: one level at a
-- time, so a list of 100k items does not cost 100k copies of the record).
-- A list's text over $1 bytes is not kept (null): its items have rows of their own.
-- Input: view `fields` (row_nr, metadata_json). Output: row_nr, key, value (JSON text), value_num.
with roots as (
    select row_nr, 'OBJECT' as node_type, metadata_json::json as node
    from fields
    where metadata_json is not null
)

select
    row_nr,
    substr(fullkey, length('$.') + 1) as key,
    case
        when node_type <> 'ARRAY' or strlen(node::varchar) <= $1 then node::varchar
    end as value,
    case when node_type in ('UBIGINT', 'BIGINT', 'DOUBLE') then try_cast(node as double) end
        as value_num
from json_nodes(roots)
where fullkey <> '$'
    and (node_type <> 'OBJECT' or node::varchar = '{}')
