-- non_finite.sql for large records: the first path holding a non-finite number (NaN,
-- Infinity, or a literal that overflows a double), found by json_nodes
-- (queries/session.sql), which walks the tree one level at a time, as run_metadata.sql
-- does: json_tree carries the whole document on every node, so a report of 30k findings
-- would cost 30k copies of itself; here each level holds the document's text at most once.
-- Paths are written as json_tree writes them. Input: view `suspects` (row_nr, raw).
with roots as (
    select row_nr, json_type(raw) as node_type, raw::json as node
    from suspects
)

select row_nr, min(fullkey) as path, min(node) as literal
from json_nodes(roots)
where node_type = 'DOUBLE' and not isfinite(node::double)
group by row_nr
