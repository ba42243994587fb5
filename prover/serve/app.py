"""The HTTP face of a `SearchService`: FastAPI routes, JSON errors, and the web page.

    POST /search               {state, k, rerank, retriever, mode, file_path, position, imports}
                               -> ranked premises (accessible ones only, with a context)
    POST /generate             LeanCopilot: {name, input, prefix} -> {outputs: [{output, score}]}
    POST /encode               LeanCopilot: {name, input} -> {outputs: [float, ...]}
    GET  /premise/{full_name}  the premise(s) of that name
    GET  /health               what is loaded, limits, counters
    POST /admin/reload         rebuild from the index/corpus paths (404 unless a token is set)
    GET  /                     the search page;  GET /openapi.json  the schema

Every refusal is a 4xx with `{"error": "...", "field": "..."}`, or a 503 with `Retry-After`
when too many requests of its kind are waiting. The interactive /docs page is off: it loads its
scripts from a CDN, and this service must work offline.
"""
from __future__ import annotations

import asyncio
import html
import logging
from pathlib import Path

from fastapi import FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from prover.serve.errors import Overloaded, ServiceError
from prover.serve.schemas import (ContextOut, EncodeRequest, EncodeResponse, ErrorResponse, GenerateRequest,
                                  GenerateResponse, Generation, Hit, PremiseOut, PremiseResponse,
                                  ReloadRequest, SearchRequest, SearchResponse)
from prover.serve.service import SearchService

log = logging.getLogger(__name__)

PAGE = Path(__file__).with_name("page.html")
ERRORS = {code: {"model": ErrorResponse} for code in (400, 403, 404, 409, 413, 422)}
QUEUED = {**ERRORS, 503: {"model": ErrorResponse, "description": "Too many requests of this kind are "
                          "waiting; the Retry-After header says in how many seconds to try again"}}


def render_page(cfg) -> str:
    """page.html with the example state and the limits filled in (escaped for HTML)."""
    values = {"__EXAMPLE_STATE__": cfg.example_state, "__MAX_STATE_CHARS__": cfg.limits.max_state_chars,
              "__DEFAULT_K__": cfg.retriever.k, "__MAX_K__": cfg.limits.max_k}
    text = PAGE.read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace(key, html.escape(str(value)))
    return text


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    """One line per problem, naming the field: pydantic's list is hard to read in a page."""
    parts, first = [], None
    for err in exc.errors():
        if err.get("type") == "json_invalid":  # its loc is a character offset, not a field
            at = [x for x in err.get("loc", ()) if isinstance(x, int)]
            reason = (err.get("ctx") or {}).get("error") or err.get("msg", "invalid")
            parts.append(f"body: not valid JSON ({reason}{f' at character {at[0]}' if at else ''})")
            first = first or "body"
            continue
        loc = [str(x) for x in err.get("loc", ()) if x != "body"]
        first = first or (loc[0] if loc else None)
        parts.append(f"{'.'.join(loc) or 'body'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request", first


def _bearer(authorization: str | None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None


def create_app(service: SearchService) -> FastAPI:
    app = FastAPI(title="Premise search", version="1.0",
                  description="Rank the premises of a Lean library for a proof state.",
                  docs_url=None, redoc_url=None)
    page = render_page(service.cfg)
    max_body = service.cfg.limits.max_body_bytes

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > max_body:
            return JSONResponse({"error": f"request body of {int(length):,} bytes is over the "
                                          f"{max_body:,}-byte limit"}, status_code=413)
        return await call_next(request)

    @app.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError) -> JSONResponse:
        # A shed client is told to come back later, so its connection is closed rather than held
        # idle past the server's keep-alive timeout (a client reusing it then would fail).
        headers = ({"Retry-After": str(exc.retry_after_s), "Connection": "close"}
                   if isinstance(exc, Overloaded) else None)
        return JSONResponse(exc.as_json(), status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        message, field = _validation_message(exc)
        return JSONResponse({"error": message, **({"field": field} if field else {})}, status_code=422)

    @app.exception_handler(Exception)
    async def failed(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request failed")
        return JSONResponse({"error": f"internal error: {type(exc).__name__}: {exc}"}, status_code=500)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> HTMLResponse:
        return HTMLResponse(page)

    @app.post("/search", response_model=SearchResponse, responses=QUEUED)
    async def search(req: SearchRequest) -> SearchResponse:
        """The k premises most useful for the state, best first. With `file_path` (and
        `position`) or `imports`, only the premises accessible there."""
        # The model runs on the service's own thread; awaiting keeps this loop serving others.
        name = "informal" if req.mode == "informal" else req.retriever
        result = await asyncio.wrap_future(service.submit(req.state, req.k, req.rerank, name,
                                                          req.file_path, req.position, req.imports))
        c = result.context
        context = None if c is None else ContextOut(
            file_path=c.file_path, position=list(c.position) if c.position else None, imports=c.imports,
            unknown_imports=c.unknown_imports, accessible=c.accessible)
        return SearchResponse(retriever=result.retriever, rerank=result.rerank, k=result.k,
                              took_ms=round(result.seconds * 1000, 2), generation=result.generation,
                              context=context,
                              results=[Hit.ranked(i, h, result.matched[i - 1] if result.matched else None,
                                                  result.docs[i - 1] if result.docs else "")
                                       for i, h in enumerate(result.hits, start=1)])

    @app.post("/generate", response_model=GenerateResponse, responses=QUEUED)
    async def generate(req: GenerateRequest, response: Response) -> GenerateResponse:
        """LeanCopilot's external generator: tactics for the proof state `input`, each starting
        with `prefix`, best first, scored by log-probability. Register this service in Lean as an
        `ExternalGenerator` (see the README)."""
        result = await asyncio.wrap_future(service.submit_generate(req.name, req.input, req.prefix))
        response.headers["Server-Timing"] = f"model;dur={result.seconds * 1000:.1f}"
        return GenerateResponse(outputs=[Generation(output=s.tactic, score=s.logprob)
                                         for s in result.suggestions])

    @app.post("/encode", response_model=EncodeResponse, responses=QUEUED)
    async def encode(req: EncodeRequest, response: Response) -> EncodeResponse:
        """LeanCopilot's external encoder: the embedding of the proof state `input` by the served
        retriever `name` (the vector it ranks premises with)."""
        result = await asyncio.wrap_future(service.submit_encode(req.name, req.input))
        response.headers["Server-Timing"] = f"model;dur={result.seconds * 1000:.1f}"
        return EncodeResponse(outputs=result.vector)

    @app.get("/premise/{full_name:path}", response_model=PremiseResponse, responses=ERRORS)
    async def premise(full_name: str) -> PremiseResponse:
        """A premise by its full name, with its statement and where it is declared."""
        return PremiseResponse(full_name=full_name,
                               premises=[PremiseOut.of(p) for p in service.premises(full_name)])

    @app.get("/health")
    async def health() -> dict:
        """What is loaded (corpus, index, retrievers), the limits, and request counters."""
        return service.health()

    @app.post("/admin/reload", responses=ERRORS)
    async def reload(body: ReloadRequest | None = None, authorization: str | None = Header(None),
                     x_admin_token: str | None = Header(None)) -> dict:
        """Reload the corpus and index (e.g. after `prover retriever index` for a new corpus)
        without restarting. Disabled (404) unless the service has an admin token; send it as
        `Authorization: Bearer <token>`."""
        service.check_token(_bearer(authorization) or x_admin_token)
        body = body or ReloadRequest()
        # Loading takes seconds to minutes: off the event loop, so searches keep being answered.
        return await run_in_threadpool(service.reload, body.index, body.corpus)

    return app
