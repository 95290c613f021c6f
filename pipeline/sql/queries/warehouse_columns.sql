-- Every column of every table of the warehouse file (not views), in table and column
-- order: check reads each one back whole.
select table_name, column_name
from duckdb_columns()
where database_name = current_database()
    and table_name in (
        select table_name
        from duckdb_tables()
        where not internal and database_name = current_database()
    )
order by table_name, column_index
