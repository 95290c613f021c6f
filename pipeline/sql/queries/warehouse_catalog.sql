-- Every table, view and macro of the warehouse file, with the definition of each view and
-- macro: what check compares with what the pipeline's own build creates (the file opens in
-- any DuckDB, which runs its views' SQL: one planted or changed by hand would go unseen).
select 'table' as kind, table_name as name, '' as definition
from duckdb_tables()
where not internal and database_name = current_database()
union all
select 'view', view_name, sql
from duckdb_views()
where not internal and database_name = current_database()
union all
select
    function_type,
    function_name || '(' || array_to_string(parameters, ', ') || ')',
    coalesce(macro_definition, '')
from duckdb_functions()
where function_type in ('macro', 'table_macro')
    and not internal
    and database_name = current_database()
order by kind, name
