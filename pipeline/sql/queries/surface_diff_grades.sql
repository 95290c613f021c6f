-- surface-diff: how the grade moved between two versions of a server ($1 server, $2 from
-- and $3 to, as version labels).
select *
from surface_version_changes
where server = $1 and from_label = $2 and to_label = $3
