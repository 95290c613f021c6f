-- The closing summary of `make run`: each server's latest surface grade and its move.
select server, server_version, versions, overall, letter, overall_delta
from by_server
order by server
