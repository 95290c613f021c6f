-- Surface reports (mcp-xray report.json), one row per record: every report-level field
-- the pipeline uses, as its JSON type (`<f>_t`: json_type, NULL when the key is absent,
-- 'NULL' when it is JSON null) and its text (`<f>_v`: json_extract_string), so that
-- pipeline/surface/validate.py can name the field and the value of each problem, row by row.
-- Those columns are generated from pipeline/surface/fields.py (RUN_FIELDS) at the mark.
-- Input: view `records` (source, line, raw, content_hash, batch_id).
select
    source,
    line,
    raw,
    content_hash,
    batch_id,
    rfc3339_instant(
        coalesce(
            json_extract_string(raw, '$.generated_at'),
            json_extract_string(raw, '$.server.generated_at')
        )
    ) as generated_at_ts,
    json_array_length(raw, '$.findings') as finding_count,
    /* fields */
from records
