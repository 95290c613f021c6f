-- stg_task_scores: run scores under the warehouse's current rubric only; scores
-- under earlier rubrics stay in the lake for lineage (see scores/ in the lake).
create or replace view stg_task_scores as
select *
from read_parquet('{{lake}}/scores/*/task_scores/*.parquet', union_by_name = true)
where rubric_id = (select value from _meta where key = 'rubric_id')
