-- grade.subscores, grade.weights and grade.penalties in long form, one row per
-- (record, part, name), with each value's JSON type. Reads the fragments
-- task_fields.sql extracted, so the record itself is not parsed again.
-- Input: view `fields` (row_nr, subscores_json, weights_json, penalties_json).
-- Output: row_nr, part, name, value_type, value.
select f.row_nr, 'subscores' as part, e.key as name, e.type as value_type,
       try_cast(e.value as double) as value
from fields as f, json_each(f.subscores_json) as e
where f.subscores_json is not null
union all
select f.row_nr, 'weights' as part, e.key as name, e.type as value_type,
       try_cast(e.value as double) as value
from fields as f, json_each(f.weights_json) as e
where f.weights_json is not null
union all
select f.row_nr, 'penalties' as part, e.key as name, e.type as value_type,
       try_cast(e.value as double) as value
from fields as f, json_each(f.penalties_json) as e
where f.penalties_json is not null
