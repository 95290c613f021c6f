-- Every column of every table of the warehouse file (not views), with the table's schema, in
-- table and column order: check reads each one back whole.
select schema_name, table_name, column_name
from duckdb_columns()
where database_name = current_database()
    and (schema_name, table_name) in (
        select (schema_name, table_name)
        from duckdb_tables()
        where not internal and database_name = current_database()
    )
order by table_name, schema_name, column_index
