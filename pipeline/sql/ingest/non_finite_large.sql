-- non_finite.sql for large records, with the same rule (number_problem,
-- queries/session.sql), run on each level of the record's walk (pipeline/core/jsonwalk.py:
-- one level at a time). json_tree carries the whole document on every node, so a report of
-- 30k findings would cost 30k copies of itself; here a level holds the document's text at
-- most once. non_finite_large_first.sql then picks each record's first.
-- Input: table walk_level. Output: row_nr, place, path, literal, problem.
select
    row_nr,
    place,
    fullkey as path,
    node::varchar as literal,
    number_problem(node_type, node::varchar) as problem
from walk_level
where node_type in ('UBIGINT', 'BIGINT', 'DOUBLE')
    and number_problem(node_type, node::varchar) is not null
