-- stg_task_runs: every landed task run as it arrived (one row per run_id), with
-- provenance (source, line, batch_id, content_hash) and the raw record text.
create or replace view stg_task_runs as
select *
from read_parquet('{{lake}}/task_runs/*.parquet', union_by_name = true)
