-- The rubric id stage_relabel.sql writes, for this cursor's session (an ALTER takes no bound
-- parameter). Bound: the rubric id.
set variable relabel_rubric_id = $1
