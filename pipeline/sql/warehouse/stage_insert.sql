-- Rows of some Parquet files of one lake table into its staging table, each tagged with
-- its file's name (the part). Bound: the table's columns (a file may lack one a later
-- schema added, or hold one it dropped), then the files. {table} is a registry name.
insert into {table} by name
select
    columns(lambda c: list_contains($1, c)),
    parse_filename(filename, true) as _part
from read_parquet($2, union_by_name = true, filename = true)
