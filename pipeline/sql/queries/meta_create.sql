-- Facts about this build of the warehouse (current rubric_id, lake root), bound as parameters.
create table _meta (key varchar primary key, value varchar not null)
