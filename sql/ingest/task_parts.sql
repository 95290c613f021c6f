-- grade.subscores, grade.weights and grade.penalties in long form, one row per
-- (record, part, name), with each value's JSON type.
-- Input: view `records` (row_nr, raw). Output: row_nr, part, name, value_type, value.
with objects as (
    select
        row_nr,
        raw,
        json_type(raw, '$.grade.subscores') = 'OBJECT' as has_subscores,
        json_type(raw, '$.grade.weights') = 'OBJECT' as has_weights,
        json_type(raw, '$.grade.penalties') = 'OBJECT' as has_penalties
    from records
)
select o.row_nr, 'subscores' as part, e.key as name, e.type as value_type,
       try_cast(e.value as double) as value
from objects as o, json_each(o.raw, '$.grade.subscores') as e
where o.has_subscores
union all
select o.row_nr, 'weights' as part, e.key as name, e.type as value_type,
       try_cast(e.value as double) as value
from objects as o, json_each(o.raw, '$.grade.weights') as e
where o.has_weights
union all
select o.row_nr, 'penalties' as part, e.key as name, e.type as value_type,
       try_cast(e.value as double) as value
from objects as o, json_each(o.raw, '$.grade.penalties') as e
where o.has_penalties
