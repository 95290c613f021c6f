-- Each large suspect's first number with a problem, in document order, from what
-- non_finite_large.sql found on every level: the output of non_finite.sql.
-- Input: view walk_found. Output: row_nr, path, literal, number_problem.
select * from first_number_problems(walk_found)
