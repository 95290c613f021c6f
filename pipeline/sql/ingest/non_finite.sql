-- Lines holding a non-finite number anywhere (NaN, Infinity, or a literal that
-- overflows a double), with the first such path. Input: view `suspects` (row_nr, raw).
select row_nr, min(t.fullkey) as path, min(t.value) as literal
from suspects, json_tree(suspects.raw) as t
where t.type = 'DOUBLE' and not isfinite(t.value::double)
group by row_nr
