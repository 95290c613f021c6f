-- Every table, view and macro of the warehouse file with its schema and definition (a
-- table's: its columns and their types): what check compares with what the pipeline's own
-- build creates (the file opens in any DuckDB, which runs its views' SQL: one changed by hand
-- would go unseen). An analyst's schema may hold names the pipeline's objects have in main.
select 'table' as kind, t.schema_name as schema, t.table_name as name,
    string_agg(c.column_name || ' ' || c.data_type, ', ' order by c.column_index) as definition
from duckdb_tables() as t
join duckdb_columns() as c
    on c.database_name = t.database_name
    and c.schema_name = t.schema_name
    and c.table_name = t.table_name
where not t.internal and t.database_name = current_database()
group by t.schema_name, t.table_name
union all
select 'view', schema_name, view_name, sql
from duckdb_views()
where not internal and database_name = current_database()
union all
select
    function_type,
    schema_name,
    function_name || '(' || array_to_string(parameters, ', ') || ')',
    coalesce(macro_definition, '')
from duckdb_functions()
where function_type in ('macro', 'table_macro')
    and not internal
    and database_name = current_database()
order by kind, schema, name
