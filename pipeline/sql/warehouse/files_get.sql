select tbl, path, part, size, mtime_ns from _lake_files
