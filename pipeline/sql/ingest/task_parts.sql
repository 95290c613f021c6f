-- grade.subscores, grade.weights and grade.penalties in long form, one row per
-- (record, part, name), with each value's JSON type. Reads the fragments
-- task_fields.sql extracted, so the record itself is not parsed again.
-- Keys and values are unnested side by side (json_keys keeps a key named twice, and
-- '$.*' every value in the same order): json_each would carry the whole fragment on
-- every row, so a record of 30k components would cost 30k copies of itself.
-- Input: view `fields` (row_nr, subscores_json, weights_json, penalties_json).
-- Output: row_nr, part, name, value_type, value.
with fragments as (
    -- One row per present part (unpivot leaves out null fragments).
    unpivot (
        select
            row_nr,
            subscores_json::varchar as subscores,
            weights_json::varchar as weights,
            penalties_json::varchar as penalties
        from fields
    )
    on subscores, weights, penalties
    into name part value fragment
),

members as (
    select row_nr, part,
        unnest(json_keys(fragment)) as name,
        unnest(json_extract(fragment, '$.*')) as member
    from fragments
)

select row_nr, part, name, json_type(member) as value_type, try_cast(member as double) as value
from members
