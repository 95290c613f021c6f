-- run_metadata: grade.metadata flattened. key is the dotted path below
-- grade.metadata (list items as [i]), value its JSON text, value_num the number
-- when it is one, so "why did defect_matching fail" needs no JSON parsing.
create or replace view run_metadata as
select run_id, key, value, value_num
from stg_run_metadata
