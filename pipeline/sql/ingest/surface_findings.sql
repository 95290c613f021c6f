-- The findings of surface reports, one row per finding (when `findings` is an array): every
-- finding field and measurement key the pipeline uses, as its JSON type (`<f>_t`, NULL when
-- absent, 'NULL' when JSON null) and text (`<f>_v`), keyed by the record's (source, line)
-- and the finding's 0-based index.
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
    json_type(f.value, '$.probe') as probe_t,
    json_extract_string(f.value, '$.probe') as probe_v,
    json_type(f.value, '$.kind') as kind_t,
    json_extract_string(f.value, '$.kind') as kind_v,
    json_type(f.value, '$.target') as target_t,
    json_extract_string(f.value, '$.target') as target_v,
    json_type(f.value, '$.target[*]') as target_item_types,
    json_extract_string(f.value, '$.target[*]') as target_items,
    json_type(f.value, '$.measurement') as measurement_t,
    json_extract_string(f.value, '$.measurement') as measurement_v,
    json_type(f.value, '$.severity') as severity_t,
    json_extract_string(f.value, '$.severity') as severity_v,
    json_type(f.value, '$.confidence') as confidence_t,
    json_extract_string(f.value, '$.confidence') as confidence_v,
    json_type(f.value, '$.detail') as detail_t,
    json_extract(f.value, '$.detail')::varchar as detail_json,
    json_type(f.value, '$.measurement.scope') as m_scope_t,
    json_extract_string(f.value, '$.measurement.scope') as m_scope_v,
    json_type(f.value, '$.measurement.tokens') as m_tokens_t,
    json_extract_string(f.value, '$.measurement.tokens') as m_tokens_v,
    json_type(f.value, '$.measurement.tool_count') as m_tool_count_t,
    json_extract_string(f.value, '$.measurement.tool_count') as m_tool_count_v,
    json_type(f.value, '$.measurement.tokens_per_tool_avg') as m_tokens_per_tool_avg_t,
    json_extract_string(f.value, '$.measurement.tokens_per_tool_avg') as m_tokens_per_tool_avg_v,
    json_type(f.value, '$.measurement.share') as m_share_t,
    json_extract_string(f.value, '$.measurement.share') as m_share_v,
    json_type(f.value, '$.measurement.phase') as m_phase_t,
    json_extract_string(f.value, '$.measurement.phase') as m_phase_v,
    json_type(f.value, '$.measurement.worst_phase') as m_worst_phase_t,
    json_extract_string(f.value, '$.measurement.worst_phase') as m_worst_phase_v,
    json_type(f.value, '$.measurement.smell') as m_smell_t,
    json_extract_string(f.value, '$.measurement.smell') as m_smell_v,
    json_type(f.value, '$.measurement.tokens_saved_est') as m_tokens_saved_est_t,
    json_extract_string(f.value, '$.measurement.tokens_saved_est') as m_tokens_saved_est_v,
    json_type(f.value, '$.measurement.wide_union') as m_wide_union_t,
    json_extract_string(f.value, '$.measurement.wide_union') as m_wide_union_v,
    json_type(f.value, '$.measurement.mixes_read_write') as m_mixes_read_write_t,
    json_extract_string(f.value, '$.measurement.mixes_read_write') as m_mixes_read_write_v,
    json_type(f.value, '$.measurement.pass_rate') as m_pass_rate_t,
    json_extract_string(f.value, '$.measurement.pass_rate') as m_pass_rate_v,
    json_type(f.value, '$.measurement.mode') as m_mode_t,
    json_extract_string(f.value, '$.measurement.mode') as m_mode_v,
    json_type(f.value, '$.measurement.fire_rate') as m_fire_rate_t,
    json_extract_string(f.value, '$.measurement.fire_rate') as m_fire_rate_v,
    json_type(f.value, '$.measurement.tokens_est') as m_tokens_est_t,
    json_extract_string(f.value, '$.measurement.tokens_est') as m_tokens_est_v,
    json_type(f.value, '$.measurement.kind') as m_injector_kind_t,
    json_extract_string(f.value, '$.measurement.kind') as m_injector_kind_v,
    json_type(f.value, '$.measurement.recommend_jit') as m_recommend_jit_t,
    json_extract_string(f.value, '$.measurement.recommend_jit') as m_recommend_jit_v
from each_finding as f
