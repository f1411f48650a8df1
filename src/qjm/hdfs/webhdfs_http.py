"""What the NameNode's and the DataNode's WebHDFS handlers share at the HTTP edge (design
§W): the JSON content type, and a request's parameters parsed once."""

from __future__ import annotations

from aiohttp import web

from qjm.hdfs import webhdfs_json as wj

JSON_TYPE = "application/json"
_QUERY: web.RequestKey[dict[str, str]] = web.RequestKey("webhdfs_query", dict)


def query_of(request: web.Request) -> dict[str, str]:
    """The request's parameters, strictly UTF-8 (parsed once, kept on the request)."""
    query = request.get(_QUERY)
    if query is None:
        query = request[_QUERY] = wj.query_of(request.raw_path)
    return query
