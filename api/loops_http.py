"""`GET /api/loops`: the loop registry (tier 1), generated from the served workspace's loop
recipes, with whether this install has what each loop needs and the registry's size
against every loop's full definition: what `controlroom loops --json` prints."""

from __future__ import annotations

import os

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from controlroom.api.server import Server
from controlroom.domain.loop_listing import listing


async def list_loops(request: Request) -> JSONResponse:
    server: Server = request.app.state.server
    found = listing(server.ctx.catalog.recipes(), os.environ)
    return JSONResponse(found.model_dump(mode="json"))


ROUTES = [Route("/api/loops", list_loops, methods=["GET"])]
