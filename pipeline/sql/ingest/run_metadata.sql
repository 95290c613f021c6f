-- grade.metadata flattened: one row per leaf, list and empty object, keyed by
-- its dotted path below grade.metadata (list items as [i]; a key that is not a plain
-- identifier quoted, as json_tree writes it: a."b.c"). Run on each level of the walk of
-- the fragment task_fields.sql extracted (pipeline/core/jsonwalk.py: one level at a time,
-- so a list nested n deep is not held n times, nor a list of 100k items 100k times).
-- A list's text over $1 bytes is not kept (null): its items have rows of their own.
-- Input: table walk_level. Output: row_nr, key, value (JSON text), value_num.
select
    row_nr,
    substr(fullkey, length('$.') + 1) as key,
    case
        when node_type <> 'ARRAY' or strlen(node::varchar) <= $1 then node::varchar
    end as value,
    case when node_type in ('UBIGINT', 'BIGINT', 'DOUBLE') then try_cast(node as double) end
        as value_num
from walk_level
where fullkey <> '$'
    and (node_type <> 'OBJECT' or node::varchar = '{}')
