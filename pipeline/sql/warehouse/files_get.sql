select tbl, path, part, size, mtime_ns, sha256 from _lake_files
