-- surface-diff: the versions of one server, oldest first ($1 = server).
select version_label, server_version, run_id, generated_at, version_order
from surface_versions
where server = $1
order by version_order
