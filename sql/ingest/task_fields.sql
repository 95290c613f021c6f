-- The contract's task-grade fields (CONTRACT section 2), each with its JSON type
-- so validation can say "trial must be an integer, got VARCHAR" instead of guessing.
-- Input: view `records` (row_nr, raw). Output: one row per record.
select
    row_nr,
    -- Key lists keep duplicates, so a record that names a field twice is caught.
    json_keys(raw) as top_keys,
    case when json_type(raw, '$.grade') = 'OBJECT' then json_keys(raw, '$.grade') end
        as grade_keys,
    json_type(raw, '$.run_id') as run_id__type,
    raw ->> '$.run_id' as run_id,
    json_type(raw, '$.agent') as agent__type,
    raw ->> '$.agent' as agent,
    json_type(raw, '$.agent_version') as agent_version__type,
    raw ->> '$.agent_version' as agent_version,
    json_type(raw, '$.problem_id') as problem_id__type,
    raw ->> '$.problem_id' as problem_id,
    json_type(raw, '$.env_type') as env_type__type,
    raw ->> '$.env_type' as env_type,
    json_type(raw, '$.graded_at') as graded_at__type,
    raw ->> '$.graded_at' as graded_at_text,
    try_cast(raw ->> '$.graded_at' as timestamptz) as graded_at,
    json_type(raw, '$.defect_id') as defect_id__type,
    raw ->> '$.defect_id' as defect_id,
    json_type(raw, '$.cwe') as cwe__type,
    raw ->> '$.cwe' as cwe,
    json_type(raw, '$.project') as project__type,
    raw ->> '$.project' as project,
    json_type(raw, '$.trial') as trial__type,
    try_cast(raw ->> '$.trial' as double) as trial,
    json_type(raw, '$.cost_usd') as cost_usd__type,
    try_cast(raw ->> '$.cost_usd' as double) as cost_usd,
    json_type(raw, '$.tokens') as tokens__type,
    try_cast(raw ->> '$.tokens' as double) as tokens,
    json_type(raw, '$.wall_seconds') as wall_seconds__type,
    try_cast(raw ->> '$.wall_seconds' as double) as wall_seconds,
    json_type(raw, '$.grade') as grade__type,
    json_type(raw, '$.grade.subscores') as subscores__type,
    json_type(raw, '$.grade.weights') as weights__type,
    json_type(raw, '$.grade.metadata') as metadata__type,
    json_type(raw, '$.grade.penalties') as penalties__type,
    json_type(raw, '$.grade.env_internal_failure') as env_internal_failure__type,
    try_cast(raw ->> '$.grade.env_internal_failure' as boolean) as env_internal_failure,
    json_type(raw, '$.grade.env_internal_failure_logs') as failure_logs__type,
    case
        when json_type(raw, '$.grade.env_internal_failure_logs') = 'ARRAY'
            then try_cast(raw -> '$.grade.env_internal_failure_logs' as varchar[])
    end as failure_logs,
    case
        when json_type(raw, '$.grade.env_internal_failure_logs') = 'ARRAY'
            then json_array_length(raw, '$.grade.env_internal_failure_logs')
    end as failure_logs__len,
    json_type(raw, '$.grade.allow_unbounded') as allow_unbounded__type,
    try_cast(raw ->> '$.grade.allow_unbounded' as boolean) as allow_unbounded,
    json_type(raw, '$.grade.metadata.minimization.final_size') as minimization_final_size__type,
    try_cast(raw ->> '$.grade.metadata.minimization.final_size' as double)
        as minimization_final_size,
    json_type(raw, '$.grade.metadata.minimization.minimal_size') as minimization_minimal_size__type,
    try_cast(raw ->> '$.grade.metadata.minimization.minimal_size' as double)
        as minimization_minimal_size,
    json_type(raw, '$.grade.metadata.recall') as audit_recall__type,
    try_cast(raw ->> '$.grade.metadata.recall' as double) as audit_recall,
    json_type(raw, '$.grade.metadata.precision') as audit_precision__type,
    try_cast(raw ->> '$.grade.metadata.precision' as double) as audit_precision
from records
