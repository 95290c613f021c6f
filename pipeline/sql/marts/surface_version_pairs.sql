-- surface_version_pairs: every ordered pair of two versions of a server (from, to), by the
-- reports that stand for them (surface_versions); steps = how many versions apart, negative
-- when from is the later one (1: consecutive).
create or replace view surface_version_pairs as
select
    a.server,
    a.server_version as from_version,
    b.server_version as to_version,
    a.version_label as from_label,
    b.version_label as to_label,
    a.run_id as from_run_id,
    b.run_id as to_run_id,
    b.version_order - a.version_order as steps
from surface_versions as a
join surface_versions as b on a.server = b.server and a.run_id <> b.run_id
