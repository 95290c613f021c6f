-- Every pipeline connection: DuckDB draws its own progress bar on long queries;
-- the pipeline's (on a terminal only) is the one shown.
set enable_progress_bar = false;

-- RFC 3339 (section 5.6) with an offset, as one instant, or null when the text is not one.
-- DuckDB's own cast is laxer: it takes offsets like +99:99 and hour 24 (shifting the
-- instant by days) and refuses what the RFC allows: lowercase t/z and a leap second.
create or replace temp macro rfc3339_shaped(text) as regexp_full_match(
    text,
    '\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt ]([01]\d|2[0-3]):[0-5]\d:'
    || '([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)'
);

-- A leap second (:60) is only real as the last second of a UTC day: it is stored as the
-- last microsecond of that minute, so order is kept and the day does not roll over.
create or replace temp macro rfc3339_second_59(text) as try_cast(
    regexp_replace(upper(text), '^(.{17})60(\.\d+)?', '\159') as timestamptz
);
create or replace temp macro rfc3339_leap(text) as case
    when strftime(timezone('UTC', rfc3339_second_59(text)), '%H:%M') = '23:59'
        then rfc3339_second_59(text) + interval 999999 microseconds
end;

-- The instant must lie in years 0001-9999 in UTC, as the RFC's four-digit year does.
create or replace temp macro rfc3339_in_range(instant) as case
    when instant between timestamptz '0001-01-01 00:00:00+00'
        and timestamptz '9999-12-31 23:59:59.999999+00' then instant
end;

create or replace temp macro rfc3339_instant(text) as case
    when not rfc3339_shaped(text) then null
    when substr(text, 18, 2) = '60' then rfc3339_in_range(rfc3339_leap(text))
    else rfc3339_in_range(try_cast(upper(text) as timestamptz))
end;

-- number_problem(node_type, literal): why a JSON number (its json_type and its literal) is
-- one no column can hold as written, or null when it is not: 'non_finite' for NaN,
-- Infinity, ... in any case DuckDB's reader accepts, or a literal that overflows a double
-- like 1e999; 'integer_range' for an integer outside the 64-bit signed range (DuckDB types
-- 2^63..2^64-1 as UBIGINT and larger integer literals as DOUBLE, rounded). DuckDB types
-- every integer >= 0 as UBIGINT: only those past 2^63-1 are out of range.
create or replace temp macro number_problem(node_type, literal) as case
    when node_type = 'UBIGINT' and try_cast(literal as ubigint) > 9223372036854775807
        then 'integer_range'
    when node_type = 'DOUBLE' and regexp_full_match(literal, '-?[0-9]+') then 'integer_range'
    when node_type = 'DOUBLE' and not isfinite(try_cast(literal as double)) then 'non_finite'
end;

-- first_number_problems(nodes): per row_nr, the first number with a problem, in document
-- order. nodes: a relation (row_nr, place, path, literal, problem), `place` ordering a
-- record's nodes as the document does, `problem` null for a number that has none.
-- Output: row_nr, path, literal, number_problem.
create or replace temp macro first_number_problems(nodes) as table
select
    row_nr,
    arg_min(path, place) as path,
    arg_min(literal, place) as literal,
    arg_min(problem, place) as number_problem
from query_table(nodes)
where problem is not null
group by row_nr;
