-- The file list after a build: the frame `wanted_files` (registered by the caller).
delete from _lake_files;
insert into _lake_files select tbl, path, part, size, mtime_ns, sha256 from wanted_files
