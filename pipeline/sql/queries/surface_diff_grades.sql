-- surface-diff: how the grade moved between two versions of a server ($1 server, $2 from
-- and $3 to, as the run_ids standing for them).
select *
from surface_version_changes
where server = $1 and from_run_id = $2 and to_run_id = $3
