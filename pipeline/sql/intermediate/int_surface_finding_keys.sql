-- int_surface_finding_keys: each finding's match key across versions (README, "surface-diff"):
-- kind, its target tools (match_tools, sorted), and the measurement keys that identify it
-- (identity: token_cost: scope and phase; schema_smell: smell; selection_error: mode;
-- hidden_injector: measurement.kind; other kinds: none). A finding about a whole surface (a
-- token_cost of scope surface or phase, a jit_candidate) targets every tool, so its tools are
-- left out of the key: adding a tool changes it, it does not replace it. occurrence numbers
-- the findings with the same key in one report, in report order, so that the n-th of one
-- version matches the n-th of another. tools: the target, sorted, for display.
create or replace view int_surface_finding_keys as
select
    f.run_id,
    f.finding_index,
    f.kind,
    list_sort(f.target) as tools,
    case
        when f.kind = 'jit_candidate' then []::varchar[]
        when f.kind = 'token_cost' and f.scope in ('surface', 'phase') then []::varchar[]
        else list_sort(f.target)
    end as match_tools,
    case f.kind
        when 'token_cost' then
            'scope=' || coalesce(f.scope, '') || ';phase=' || coalesce(f.phase, '')
        when 'schema_smell' then 'smell=' || coalesce(f.smell, '')
        when 'selection_error' then 'mode=' || coalesce(f.mode, '')
        when 'hidden_injector' then 'kind=' || coalesce(f.injector_kind, '')
        else ''
    end as identity,
    f.severity,
    f.severity_display,
    row_number() over (
        partition by f.run_id, f.kind, match_tools, identity order by f.finding_index
    ) as occurrence
from surface_findings as f
