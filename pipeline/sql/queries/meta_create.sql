-- Facts about this build of the warehouse (current rubric_id, fingerprint, storage version), bound as parameters.
create table _meta (key varchar primary key, value varchar not null)
