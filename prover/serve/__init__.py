"""The premise search engine: a proof state in, ranked premises out, over HTTP; and LeanCopilot's
external-model endpoints (tactic generation, state encoding) over the same models.

- `settings.py`: the config schema (`configs/serve/*.yaml`).
- `loading.py`: reads a corpus and a retriever run folder into named retrievers.
- `batching.py`: one model thread; concurrent requests run as one batch; bounded queues.
- `context.py`: a request's file, position or imports, as the premises accessible there.
- `generation.py`: the generators behind /generate, and which retrievers /encode encodes with.
- `service.py`: `SearchService`, thread-safe search, generation, encoding, lookup and reload.
- `schemas.py`: the JSON shapes of requests and answers (they make the OpenAPI schema).
- `app.py`: the FastAPI app over a service, with the web page `page.html`.
- `server.py`: uvicorn, in the foreground (`prover serve`) or on a background thread.
- `ray_serve.py`: the same app as a Ray Serve deployment, for scale-out.
"""
