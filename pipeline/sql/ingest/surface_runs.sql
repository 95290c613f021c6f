-- Surface reports (mcp-xray report.json), one row per record: every report-level field
-- the pipeline uses, as its JSON type (`<f>_t`: json_type, NULL when the key is absent,
-- 'NULL' when it is JSON null) and its text (`<f>_v`: json_extract_string), so that
-- pipeline/surface.py can name the field and the value of each problem, row by row.
-- Input: view `records` (source, line, raw, content_hash, batch_id).
select
    source,
    line,
    raw,
    content_hash,
    batch_id,
    json_type(raw, '$.run_id') as run_id_t,
    json_extract_string(raw, '$.run_id') as run_id_v,
    json_type(raw, '$.generated_at') as generated_at_t,
    json_extract_string(raw, '$.generated_at') as generated_at_v,
    -- CONTRACT 3 lists generated_at beside the server fields: accept it there too.
    json_type(raw, '$.server.generated_at') as server_generated_at_t,
    json_extract_string(raw, '$.server.generated_at') as server_generated_at_v,
    rfc3339_instant(
        coalesce(
            json_extract_string(raw, '$.generated_at'),
            json_extract_string(raw, '$.server.generated_at')
        )
    ) as generated_at_ts,
    json_type(raw, '$.server') as server_t,
    json_extract_string(raw, '$.server') as server_v,
    json_type(raw, '$.server.name') as server_name_t,
    json_extract_string(raw, '$.server.name') as server_name_v,
    json_type(raw, '$.server.version') as server_version_t,
    json_extract_string(raw, '$.server.version') as server_version_v,
    json_type(raw, '$.server.fingerprint') as server_fingerprint_t,
    json_extract_string(raw, '$.server.fingerprint') as server_fingerprint_v,
    json_type(raw, '$.server.tool_count') as server_tool_count_t,
    json_extract_string(raw, '$.server.tool_count') as server_tool_count_v,
    json_type(raw, '$.findings') as findings_t,
    json_extract_string(raw, '$.findings') as findings_v,
    json_array_length(raw, '$.findings') as finding_count,
    json_type(raw, '$.coverage') as coverage_t,
    json_extract_string(raw, '$.coverage') as coverage_v,
    json_type(raw, '$.coverage.ran') as coverage_ran_t,
    json_extract_string(raw, '$.coverage.ran') as coverage_ran_v,
    json_type(raw, '$.coverage.ran[*]') as coverage_ran_item_types,
    json_extract_string(raw, '$.coverage.ran[*]') as coverage_ran_items,
    json_type(raw, '$.grade') as grade_t,
    json_extract_string(raw, '$.grade') as grade_v,
    json_type(raw, '$.grade.overall') as grade_overall_t,
    json_extract_string(raw, '$.grade.overall') as grade_overall_v,
    json_type(raw, '$.grade.letter') as grade_letter_t,
    json_extract_string(raw, '$.grade.letter') as grade_letter_v,
    json_type(raw, '$.grade.subscores') as grade_subscores_t,
    json_extract_string(raw, '$.grade.subscores') as grade_subscores_v,
    json_type(raw, '$.headline') as headline_t,
    json_extract_string(raw, '$.headline') as headline_v,
    json_type(raw, '$.headline.phased') as headline_phased_t,
    json_extract_string(raw, '$.headline.phased') as headline_phased_v,
    json_type(raw, '$.headline.worst_phase') as headline_worst_phase_t,
    json_extract_string(raw, '$.headline.worst_phase') as headline_worst_phase_v,
    json_type(raw, '$.headline.phase_tokens') as headline_phase_tokens_t,
    json_extract_string(raw, '$.headline.phase_tokens') as headline_phase_tokens_v
from records
