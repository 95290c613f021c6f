-- Every pipeline connection: DuckDB draws its own progress bar on long queries;
-- the pipeline's (on a terminal only) is the one shown.
set enable_progress_bar = false
