-- A JSON walk's tables (pipeline/core/jsonwalk.py), dropped once it ends: the batch's
-- connection lives on.
drop table if exists walk_level;

drop table if exists walk_next;
