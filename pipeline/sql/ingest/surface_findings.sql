-- The findings of surface reports, one row per finding (when `findings` is an array): every
-- finding field and measurement key the pipeline uses, as its JSON type (`<f>_t`, NULL when
-- absent, 'NULL' when JSON null) and text (`<f>_v`), keyed by the record's (source, line)
-- and the finding's 0-based index. Those columns are generated from pipeline/surface/fields.py
-- (FINDING_FIELDS) at the mark.
-- The findings are unnested from one extraction of the list: json_each would carry the
-- whole report on every finding, so 10k findings would cost 10k copies of the report.
-- Input: view `records` (source, line, raw, content_hash, batch_id).
with listed as (
    select source, line, json_extract(raw, '$.findings[*]') as items
    from records
    where json_type(raw, '$.findings') = 'ARRAY'
),

each_finding as (
    select source, line, unnest(range(len(items))) as key, unnest(items) as value
    from listed
)

select
    f.source,
    f.line,
    cast(f.key as bigint) as finding_index,
    json_type(f.value) as finding_t,
    f.value::varchar as finding_v,
    -- Key lists keep a key named twice, so a finding or measurement that does is caught.
    case when json_type(f.value) = 'OBJECT' then json_keys(f.value) end as finding_keys,
    case when json_type(f.value, '$.measurement') = 'OBJECT'
        then json_keys(f.value, '$.measurement') end as measurement_keys,
    json_type(f.value, '$.detail') as detail_t,
    json_extract(f.value, '$.detail')::varchar as detail_json,
    /* fields */
from each_finding as f
