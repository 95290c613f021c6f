-- Lines holding a number no column can hold as written (number_problem, queries/session.sql),
-- with the first such path (in document order) and its literal.
-- Input: view `suspects` (row_nr, raw).
-- Output: row_nr, path, literal, number_problem ('non_finite' or 'integer_range').
with judged as (
    select
        s.row_nr,
        t.id as place,
        t.fullkey as path,
        t.value::varchar as literal,
        number_problem(t.type, t.value::varchar) as problem
    from suspects as s, json_tree(s.raw) as t
)

select * from first_number_problems(judged)
