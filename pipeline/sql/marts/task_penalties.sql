-- task_penalties: one row per (run, penalty) the record names, with the value the grader
-- stored; task_runs.penalty_total is their sum times the rubric's penalty_scale.
create or replace view task_penalties as
select
    run_id,
    penalty,
    value
from stg_task_penalties
