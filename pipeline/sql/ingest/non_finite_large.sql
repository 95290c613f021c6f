-- non_finite.sql for large records, with the same output and the same rule
-- (number_problem, queries/session.sql), found by json_nodes (queries/session.sql), which
-- walks the tree one level at a time, as run_metadata.sql does. json_tree carries
-- the whole document on every node, so a report of 30k findings would cost 30k copies of
-- itself; here each level holds the document's text at most once. Paths are written as
-- json_tree writes them; `place` (child indexes from the root) orders nodes as the document
-- does. Input: view `suspects` (row_nr, raw).
-- Output: row_nr, path, literal, number_problem ('non_finite' or 'integer_range').
with roots as (
    select row_nr, json_type(raw) as node_type, raw::json as node
    from suspects
),

judged as (
    select
        row_nr,
        place,
        fullkey as path,
        node::varchar as literal,
        number_problem(node_type, node::varchar) as problem
    from json_nodes(roots)
)

select * from first_number_problems(judged)
