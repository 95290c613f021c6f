-- The bare scan rescoring is measured against: every column score_tasks reads,
-- every value hashed, so nothing is skipped or answered from file statistics.
-- $1, $2, $3: the task_runs, task_components and task_penalties Parquet files.
select
    (select count(*) + 0 * sum(hash(run_id, env_type, env_internal_failure, allow_unbounded,
                                    minimization_final_size, minimization_minimal_size,
                                    audit_recall, audit_precision))
     from read_parquet($1)) as task_runs,
    (select count(*) + 0 * sum(hash(run_id, component, stored_subscore, record_weight))
     from read_parquet($2)) as task_components,
    (select count(*) + 0 * sum(hash(run_id, penalty, value))
     from read_parquet($3)) as task_penalties;
