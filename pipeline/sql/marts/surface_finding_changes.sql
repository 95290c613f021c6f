-- surface_finding_changes (CONTRACT 7): what changed between consecutive versions of each
-- server (steps = 1), one row per finding that is new, resolved, worse or better; columns as
-- in surface_finding_changes_all. Any other pair: surface_finding_changes_all or surface-diff.
create or replace view surface_finding_changes as
select *
from surface_finding_changes_all
where steps = 1 and change <> 'same'
