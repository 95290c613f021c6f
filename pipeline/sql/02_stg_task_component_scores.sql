-- stg_task_component_scores: component scores under the current rubric.
create or replace view stg_task_component_scores as
select *
from read_parquet('{{lake}}/scores/*/task_component_scores/*.parquet', union_by_name = true)
where rubric_id = (select value from _meta where key = 'rubric_id')
