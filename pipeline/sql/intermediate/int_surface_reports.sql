-- int_surface_reports: every surface_runs row with version_rank, its place among the reports
-- of its version (server, server_version; a null server_version is one version): 1 is the
-- report that stands for the version, its latest (generated_at, then batch_id, then run_id);
-- first_generated_at, that of its version's first report, which places the version in its
-- server's history, and first_batch_id, the least batch_id of the version's reports, which
-- orders versions first reported at the same time; and reports, how many reports its server has.
-- surface_versions reads the versions from here (by_server reads them from surface_versions).
create or replace view int_surface_reports as
select
    *,
    row_number() over (
        partition by server, server_version
        order by generated_at desc nulls last, batch_id desc, run_id desc
    ) as version_rank,
    min(generated_at) over (partition by server, server_version) as first_generated_at,
    min(batch_id) over (partition by server, server_version) as first_batch_id,
    count(*) over (partition by server) as reports
from surface_runs
