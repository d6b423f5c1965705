"""``arh serve``: a local, read-only dashboard and REST API over a directory of runs
(docs/dashboard.md). ``index`` scans the directory once, ``views`` holds what the pages and the
API share, ``pages`` the HTML, ``api`` the JSON, ``server`` the HTTP server."""
