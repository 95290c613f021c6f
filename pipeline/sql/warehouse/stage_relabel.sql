-- Every row of one staging table relabelled with the rubric its new files name (relabel.py:
-- the rest of each row is what those files hold), from the session variable relabel_label
-- sets. A column rewritten by ALTER is written once, at the checkpoint; an UPDATE of every
-- row also logged each value (at 975k rows: 0.25 s of CPU against 0.1 s). {table} is a
-- registry name.
alter table {table} alter rubric_id set data type varchar using getvariable('relabel_rubric_id')
