-- Every view of the warehouse file, by name (its tables are read back column by column,
-- queries/warehouse_columns.sql): the file is the connection's default database. A view of
-- a schema other than main (an analyst's own) is named with its schema and run there: looked
-- up by its name alone, it would be main's view of that name, or none.
select
    table_schema,
    table_name,
    case
        when table_schema = 'main' then table_name else table_schema || '.' || table_name
    end as shown
from information_schema.tables
where table_catalog = current_database() and table_type = 'VIEW'
order by table_name, table_schema
