-- Flattened grader metadata of a few runs (the worst trials of the regressed problems).
-- Parameters: 1 run ids (VARCHAR[]).
select
    run_id,
    key,
    value,
    value_num
from run_metadata
where list_contains(?, run_id)
order by run_id, key
