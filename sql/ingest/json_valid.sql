-- Which input lines parse as JSON. DuckDB's parser judges one line at a time,
-- where Polars' json_decode would fail the whole column on the first bad line.
-- Input: view `lines` (row_nr, raw). Output: row_nr, is_json.
select row_nr, json_valid(raw) as is_json
from lines
