-- A column of long text (a record's whole input line) added to a staging table, compressed
-- with zstd: DuckDB's default (dictionary + FSST) costs more to write and three times the
-- bytes on such lines. {table} is a registry name, {column} one of build.py's ZSTD_COLUMNS.
alter table {table} add column {column} varchar using compression zstd
