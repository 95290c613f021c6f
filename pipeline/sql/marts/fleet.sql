-- fleet: per dimension (and overall), the distribution across servers' latest versions
-- (the by_server rows), so one grade can be read against its peers. servers counts every
-- server, measured those where the dimension was measured; mean, min, max and the
-- percentiles p10, p25, p50, p75, p90 (continuous: linear interpolation, quantile_cont) are
-- over the measured ones only, null when none is.
create or replace view fleet as
with scores as (
    -- Parallel unnests zip: one row per (server, dimension).
    select
        server,
        unnest([
            'overall',
            'context_efficiency',
            'selection_robustness',
            'surface_redundancy',
            'schema_hygiene',
            'description_quality'
        ]) as dimension,
        unnest([
            overall,
            context_efficiency,
            selection_robustness,
            surface_redundancy,
            schema_hygiene,
            description_quality
        ]) as score
    from by_server
)
select
    dimension,
    count(*) as servers,
    count(score) as measured,
    -- Ordered: a float sum in another order differs in the last bit from run to run.
    avg(score order by server) as mean,
    min(score) as min,
    quantile_cont(score, 0.10) as p10,
    quantile_cont(score, 0.25) as p25,
    quantile_cont(score, 0.50) as p50,
    quantile_cont(score, 0.75) as p75,
    quantile_cont(score, 0.90) as p90,
    max(score) as max
from scores
group by dimension
order by
    case dimension
        when 'overall' then 0
        when 'context_efficiency' then 1
        when 'selection_robustness' then 2
        when 'surface_redundancy' then 3
        when 'schema_hygiene' then 4
        when 'description_quality' then 5
    end
