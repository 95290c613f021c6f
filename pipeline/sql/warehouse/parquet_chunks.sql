-- Every column chunk of some Parquet files, from their footers: its file, row group (and the
-- group's rows), column, and where its bytes lie (from its dictionary page when it has one;
-- an offset of 0 is none, the file's first bytes being its magic). Bound: the files.
select
    file_name,
    row_group_id,
    row_group_num_rows,
    path_in_schema,
    case
        when dictionary_page_offset > 0 then dictionary_page_offset else data_page_offset
    end as first_byte,
    total_compressed_size
from parquet_metadata($1)
