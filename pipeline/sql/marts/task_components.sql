-- task_components: one row per (run, component): the subscore used (minimization
-- rescored from raw sizes), the stored one, the rubric's and the record's weight,
-- whether the gate zeroed it, and what it contributed to the weighted sum.
create or replace view task_components as
select
    run_id,
    component,
    subscore,
    stored_subscore,
    weight,
    weight_as_graded,
    is_gate,
    in_record,
    in_rubric,
    gated_out,
    contribution,
    contribution_as_graded,
    rubric_id
from stg_task_component_scores
