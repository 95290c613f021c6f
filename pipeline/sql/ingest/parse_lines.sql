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

-- The paths read from every record, generated from pipeline/tasks/fields.py: t[i] is the
-- type of v[i] ('$', then each field read for its value), and the types of the fields read
-- for their type alone follow. Macros, because DuckDB wants each function's path list as
-- a constant.
create or replace temp macro task_paths() as /* value paths */;
create or replace temp macro task_type_paths() as /* type paths */;
-- True when a key list (json_keys: a key named twice is listed twice) names each key once;
-- a missing object names none.
create or replace temp macro keys_once(keys) as
    len(coalesce(keys, []::varchar[])) = len(list_distinct(coalesce(keys, []::varchar[])));

with checked as (
    select row_nr, raw, json_valid(raw) as is_json
    from lines
),

extracted as (
    select
        row_nr,
        is_json,
        case when is_json then json_type(raw, task_type_paths()) end as t,
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
    -- Most records name the weights in the order of the subscores: then the weights need
    -- no check of their own and no list is sorted (~15% of this query's time).
    case
        when coalesce(k[3], []::varchar[]) = coalesce(k[4], []::varchar[])
            then keys_once(k[3]) and keys_once(k[5])
        else keys_once(k[3]) and keys_once(k[4]) and keys_once(k[5])
            and list_sort(coalesce(k[3], []::varchar[])) = list_sort(coalesce(k[4], []::varchar[]))
    end as part_keys_plain,
    -- Each field's JSON type (<name>__type) and its typed value (pipeline/tasks/fields.py).
    /* fields */,
    case when grade__type = 'OBJECT' then k[2] end as grade_keys,
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
