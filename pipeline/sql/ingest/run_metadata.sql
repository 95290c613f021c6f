-- grade.metadata flattened: one row per leaf, list and empty object, keyed by
-- its dotted path below grade.metadata (list items as [i]). Reads the fragment
-- task_fields.sql extracted.
-- Input: view `fields` (row_nr, metadata_json). Output: row_nr, key, value (JSON text), value_num.
select
    f.row_nr,
    substr(t.fullkey, length('$.') + 1) as key,
    t.value::varchar as value,
    case when t.type in ('UBIGINT', 'BIGINT', 'DOUBLE') then try_cast(t.value as double) end
        as value_num
from fields as f, json_tree(f.metadata_json) as t
where f.metadata_json is not null
    and t.fullkey <> '$'
    and (t.type <> 'OBJECT' or t.value::varchar = '{}')
