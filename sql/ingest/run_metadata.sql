-- grade.metadata flattened: one row per leaf, list and empty object, keyed by
-- its dotted path below grade.metadata (list items as [i]).
-- Input: view `records` (row_nr, raw). Output: row_nr, key, value (JSON text), value_num.
with objects as (
    select row_nr, raw
    from records
    where json_type(raw, '$.grade.metadata') = 'OBJECT'
)
select
    o.row_nr,
    substr(t.fullkey, length('$.grade.metadata.') + 1) as key,
    t.value::varchar as value,
    case when t.type in ('UBIGINT', 'BIGINT', 'DOUBLE') then try_cast(t.value as double) end
        as value_num
from objects as o, json_tree(o.raw, '$.grade.metadata') as t
where t.fullkey <> '$.grade.metadata'
    and (t.type <> 'OBJECT' or t.value::varchar = '{}')
