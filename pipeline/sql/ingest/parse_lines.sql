-- Every candidate line parsed in one pass: whether it is JSON, which kind of record it is,
-- its content hash, and (for objects) the contract's task-grade fields (CONTRACT section 2),
-- each with its JSON type so validation can say "trial must be an integer, got VARCHAR"
-- instead of guessing.
--
-- DuckDB parses the text again for every JSON function it is given, so each function here
-- takes a list of paths and reads them all from one parse: json_type (every type at once),
-- json_extract (every fragment at once; '$' is the record minified, which the content hash
-- is taken over: whitespace does not make a new record) and json_keys (key lists keep
-- duplicates, so a record that names a field twice is caught). What follows reads the small
-- fragments. subscores, weights, penalties and metadata are kept as JSON fragments for
-- task_parts.sql and run_metadata.sql. Lines that are not JSON get is_json = false and
-- nulls elsewhere (the JSON functions would fail on them).
-- Input: view `lines` (row_nr, raw). Output: one row per line.

-- The paths read from every record, in the order t and v below index them (t[i] is the
-- type of v[i]); a macro, because DuckDB wants each function's path list as a constant.
create or replace temp macro task_paths() as [
    '$',
    '$.run_id',
    '$.agent',
    '$.agent_version',
    '$.problem_id',
    '$.env_type',
    '$.graded_at',
    '$.defect_id',
    '$.cwe',
    '$.project',
    '$.trial',
    '$.cost_usd',
    '$.tokens',
    '$.wall_seconds',
    '$.grade.subscores',
    '$.grade.weights',
    '$.grade.metadata',
    '$.grade.penalties',
    '$.grade.env_internal_failure',
    '$.grade.env_internal_failure_logs',
    '$.grade.allow_unbounded',
    '$.grade.metadata.minimization.final_size',
    '$.grade.metadata.minimization.minimal_size',
    '$.grade.metadata.recall',
    '$.grade.metadata.precision'
];

with checked as (
    select row_nr, raw, json_valid(raw) as is_json
    from lines
),

extracted as (
    select
        row_nr,
        is_json,
        -- Every path's type,         -- then the types alone of '$.grade' (serializing its fragment would cost as much as
        -- the record's) and of the audit lists.
        case when is_json then json_type(raw, list_concat(task_paths(), [
            '$.grade', '$.grade.metadata.found', '$.grade.metadata.missed'
        ])) end as t,
        case when is_json then json_extract(raw, task_paths()) end as v,
        case when is_json then json_keys(raw, [
            '$', '$.grade', '$.grade.subscores', '$.grade.weights', '$.grade.penalties',
            '$.grade.metadata', '$.grade.metadata.minimization',
            '$.server', '$.coverage', '$.headline'
        ]) end as k
    from checked
)

select
    row_nr,
    is_json,
    t[1] as json_kind,
    case
        when t[1] = 'OBJECT'
            and list_contains(k[1], 'server')
            and list_contains(k[1], 'findings') then 'surface'
        -- Half a report (server or findings, and neither of a task grade's agent and
        -- env_type) is judged as a report, so its reasons are about the report.
        when t[1] = 'OBJECT'
            and (list_contains(k[1], 'server') or list_contains(k[1], 'findings'))
            and not list_contains(k[1], 'agent')
            and not list_contains(k[1], 'env_type') then 'surface'
        when t[1] = 'OBJECT' then 'task'
    end as record_kind,
    sha256(v[1]::varchar) as content_hash,
    k[1] as top_keys,
    -- True when subscores, weights and penalties name each key once and subscores and
    -- weights name the same keys: validation looks closer at the parts of the others only.
    len(coalesce(k[3], []::varchar[])) = len(list_distinct(coalesce(k[3], []::varchar[])))
        and len(coalesce(k[4], []::varchar[])) = len(list_distinct(coalesce(k[4], []::varchar[])))
        and len(coalesce(k[5], []::varchar[])) = len(list_distinct(coalesce(k[5], []::varchar[])))
        and list_sort(coalesce(k[3], []::varchar[])) = list_sort(coalesce(k[4], []::varchar[]))
        as part_keys_plain,
    t[2] as run_id__type,
    v[2] ->> '$' as run_id,
    t[3] as agent__type,
    v[3] ->> '$' as agent,
    t[4] as agent_version__type,
    v[4] ->> '$' as agent_version,
    t[5] as problem_id__type,
    v[5] ->> '$' as problem_id,
    t[6] as env_type__type,
    v[6] ->> '$' as env_type,
    t[7] as graded_at__type,
    v[7] ->> '$' as graded_at_text,
    rfc3339_instant(v[7] ->> '$') as graded_at,
    t[8] as defect_id__type,
    v[8] ->> '$' as defect_id,
    t[9] as cwe__type,
    v[9] ->> '$' as cwe,
    t[10] as project__type,
    v[10] ->> '$' as project,
    t[11] as trial__type,
    -- Read as an integer, exactly: a double would round past 2^53.
    try_cast(v[11] as bigint) as trial,
    t[12] as cost_usd__type,
    try_cast(v[12] as double) as cost_usd,
    t[13] as tokens__type,
    try_cast(v[13] as double) as tokens,
    t[14] as wall_seconds__type,
    try_cast(v[14] as double) as wall_seconds,
    t[26] as grade__type,
    case when t[26] = 'OBJECT' then k[2] end as grade_keys,
    t[15] as subscores__type,
    case when t[15] = 'OBJECT' then v[15] end as subscores_json,
    t[16] as weights__type,
    case when t[16] = 'OBJECT' then v[16] end as weights_json,
    t[17] as metadata__type,
    case when t[17] = 'OBJECT' then v[17] end as metadata_json,
    t[18] as penalties__type,
    case when t[18] = 'OBJECT' then v[18] end as penalties_json,
    t[19] as env_internal_failure__type,
    try_cast(v[19] as boolean) as env_internal_failure,
    t[20] as failure_logs__type,
    case when t[20] = 'ARRAY' then try_cast(v[20] as varchar[]) end as failure_logs,
    t[21] as allow_unbounded__type,
    try_cast(v[21] as boolean) as allow_unbounded,
    t[22] as minimization_final_size__type,
    try_cast(v[22] as double) as minimization_final_size,
    t[23] as minimization_minimal_size__type,
    try_cast(v[23] as double) as minimization_minimal_size,
    t[24] as audit_recall__type,
    try_cast(v[24] as double) as audit_recall,
    t[25] as audit_precision__type,
    try_cast(v[25] as double) as audit_precision,
    t[27] as audit_found__type,
    t[28] as audit_missed__type,
    -- The keys named below grade.metadata that scoring reads, as often as they are named
    -- (metadata keys scoring never reads may be named twice: both values are kept).
    list_filter(coalesce(k[6], []), lambda x: x in ('recall', 'precision', 'minimization'))
        as metadata_scored_keys,
    list_filter(coalesce(k[7], []), lambda x: x in ('final_size', 'minimal_size'))
        as minimization_scored_keys,
    k[8] as server_keys,
    k[9] as coverage_keys,
    k[10] as headline_keys
from extracted
