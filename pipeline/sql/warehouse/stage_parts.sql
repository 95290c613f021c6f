-- The parts one staging table holds rows of, in the order their rows are stored: each
-- part's rows, and its first and last row. {table} is a registry name.
select _part, count(*) as row_count, min(rowid) as first_row, max(rowid) as last_row
from {table}
group by _part
order by first_row
