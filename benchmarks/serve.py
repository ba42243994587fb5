"""Premise search service under load: throughput and latency with 1, 8 and 64 concurrent clients.

    python benchmarks/serve.py --config configs/serve/benchmark_tiny.yaml [key=value ...] [--allow-dirty]

Starts `prover serve` in its own process on a free loopback port (the `serve:` section of the
config), waits for /health, then, for each mode and each concurrency, runs that many clients
from this process, each sending its next request as soon as the last one is answered, for
`duration_s` after `warmup_s` not counted. A mode is a retriever (`cfr`; `cfr+car` is the same
first stage with rerank), sent as POST /search, or `generate:<name>`, sent as POST /generate to
that generator in LeanCopilot's JSON. Query states are the first states of `states_split` of
the served corpus, in turn.

A 503 is the service shedding load (its queue for that model is full): it is counted apart,
and that client waits the Retry-After it was given before its next request, as a polite client
does. Reports requests/s, p50/p95/p99 latency of answered requests, 503s, errors (any other
non-200 or failed request; there must be none) and the server's mean batch size. Writes
benchmarks/results/serve-<tag>.{json,md}; exits 1 if any request failed. A tree with
uncommitted code or configs is refused unless --allow-dirty (the results name the commit).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx
import numpy as np
from omegaconf import OmegaConf

from prover.benchmarking.harness import (add_allow_dirty, load_config, machine, parser, require_clean_tree,
                                         to_plain, write_and_print)
from prover.data.dataset import Dataset
from prover.serve.loading import RERANK_SUFFIX
from prover.serve.settings import ServeBenchmarkConfig
from prover.utils.logs import setup_logging

REPO = Path(__file__).resolve().parents[1]

log = logging.getLogger("benchmark.serve")

GENERATE = "generate:"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query_states(cfg) -> list[str]:
    """First states of the split's theorems that fit the service's state limit."""
    limit = cfg.serve.limits.max_state_chars
    states = []
    for t in Dataset(cfg.serve.retriever.corpus).theorems(cfg.states_split):
        if t.traced_tactics and 0 < len(t.traced_tactics[0].state_before) <= limit:
            states.append(t.traced_tactics[0].state_before)
        if len(states) == cfg.n_states:
            break
    if not states:
        raise ValueError(f"no query states in {cfg.serve.retriever.corpus} {cfg.states_split}")
    return states


class Server:
    """`prover serve` in a child process, with its log in a file."""

    def __init__(self, cfg, log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        serve_cfg = OmegaConf.merge(cfg.serve, {"port": self.port, "host": "127.0.0.1"})
        self.cfg_file = Path(tempfile.mkstemp(suffix=".yaml", prefix="serve-bench-")[1])
        OmegaConf.save(serve_cfg, self.cfg_file, resolve=True)
        self.log_path = log_path
        self.log = open(log_path, "w")
        env = {**os.environ, "PROVER_SERVE_TOKEN": ""}  # no admin endpoint for a benchmark
        self.proc = subprocess.Popen([sys.executable, "-m", "prover.cli", "serve", "--config", str(self.cfg_file)],
                                     cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            try:
                return httpx.get(self.url + "/health", timeout=5).json()
            except httpx.HTTPError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start; its log:\n{self.log_path.read_text()[-3000:]}")
                time.sleep(0.5)

    def peak_rss_mib(self) -> float | None:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
        except OSError:
            pass
        return None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        self.cfg_file.unlink(missing_ok=True)


def server_ms(r: aiohttp.ClientResponse, body: dict) -> float:
    """The service's own time for a request (queue + model): /search says it in the body,
    /generate (LeanCopilot's shape has no room for it) in a Server-Timing header."""
    if "took_ms" in body:
        return body["took_ms"]
    return float(r.headers["Server-Timing"].split("dur=", 1)[1])


async def drive(url: str, request_of, clients: int, seconds: float, timeout: float) -> dict:
    """`clients` closed-loop clients for `seconds`: latencies of answered requests (as the client
    saw them, and the server's own queue + model time), of 503s, and errors. A client told 503
    waits its Retry-After first. aiohttp, not httpx: httpx's connection pool made 64 clients
    slower than 8 (a client-side limit, measured)."""
    latencies: list[float] = []
    server: list[float] = []
    shed: list[float] = []
    errors: list[str] = []
    stop_at = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(url, connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        async def one_client() -> None:
            while time.perf_counter() < stop_at:
                path, body = request_of()
                t0 = time.perf_counter()
                try:
                    async with session.post(path, json=body) as r:
                        if r.status == 200:
                            answer = await r.json()
                            latencies.append(time.perf_counter() - t0)
                            server.append(server_ms(r, answer))
                        elif r.status == 503 and "Retry-After" in r.headers:
                            await r.read()
                            shed.append(time.perf_counter() - t0)
                            wait = float(r.headers["Retry-After"])
                            await asyncio.sleep(max(0.0, min(wait, stop_at - time.perf_counter())))
                        else:
                            errors.append(f"{r.status}: {(await r.text())[:200]}")
                except (aiohttp.ClientError, asyncio.TimeoutError) as e:
                    errors.append(f"{type(e).__name__}: {e}")

        t0 = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        elapsed = time.perf_counter() - t0
    return {"latencies": latencies, "server_ms": server, "shed": shed, "errors": errors, "elapsed": elapsed}


def requests_of(mode: str, cfg, states: list[str]):
    """What a mode sends: (path, JSON body) for the next request, states in turn."""
    turn = itertools.count()
    if mode.startswith(GENERATE):
        name = mode[len(GENERATE):]
        # Exactly LeanCopilot's ExternalGenerator request (with no prefix).
        return lambda: ("/generate", {"name": name, "input": states[next(turn) % len(states)], "prefix": ""})
    retriever = mode[: -len(RERANK_SUFFIX)] if mode.endswith(RERANK_SUFFIX) else mode
    rerank = mode.endswith(RERANK_SUFFIX)
    k = cfg.serve.retriever.k
    return lambda: ("/search", {"state": states[next(turn) % len(states)], "k": k, "retriever": retriever,
                                "rerank": rerank})


def pct(values, q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if len(values) else None


def measure(server: Server, cfg, mode: str, clients: int, states: list[str]) -> dict:
    request_of = requests_of(mode, cfg, states)
    if cfg.warmup_s > 0:
        asyncio.run(drive(server.url, request_of, clients, cfg.warmup_s, cfg.request_timeout_s))
    before = httpx.get(server.url + "/health", timeout=30).json()["batching"]
    run = asyncio.run(drive(server.url, request_of, clients, cfg.duration_s, cfg.request_timeout_s))
    after = httpx.get(server.url + "/health", timeout=30).json()["batching"]
    lat = np.array(run["latencies"]) * 1000
    shed = np.array(run["shed"]) * 1000
    batches = after["batches"] - before["batches"]
    row = {"mode": mode, "clients": clients, "requests": len(lat), "shed": len(shed), "errors": len(run["errors"]),
           "seconds": round(run["elapsed"], 2), "throughput_rps": round(len(lat) / run["elapsed"], 2),
           "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "p99_ms": pct(lat, 99),
           "mean_ms": round(float(lat.mean()), 1) if len(lat) else None,
           "max_ms": round(float(lat.max()), 1) if len(lat) else None,
           "server_p50_ms": pct(run["server_ms"], 50),
           "shed_p50_ms": pct(shed, 50),
           "mean_batch": round((after["items"] - before["items"]) / batches, 2) if batches else None,
           "error_samples": run["errors"][:5]}
    log.info("%s x%d: %d answered, %d shed (503), %.1f req/s, p50 %s ms, p95 %s ms, %d errors", mode, clients,
             row["requests"], row["shed"], row["throughput_rps"], row["p50_ms"], row["p95_ms"], row["errors"])
    return row


def generator_premises(g: dict) -> str:
    """A generator's premises in words. Since issue 40 `premises` is a retriever choice
    ({name, k, ...}); files written before have a retriever name and `premises_k` beside it."""
    p = g.get("premises")
    if not p:
        return "none"
    name, k = (p["name"], p["k"]) if isinstance(p, dict) else (p, g["premises_k"])
    return f"{name}'s top {k}"


def markdown(result: dict) -> str:
    h = result["server"]
    c = result["config"]
    k = c["serve"]["retriever"]["k"] if "retriever" in c["serve"] else c["k"]  # before issue 40: its own k
    lines = [f"# Premise search service under load: {result['name']}", "",
             f"`prover serve` in its own process on 127.0.0.1, clients in a second process (closed loop: each "
             f"sends its next request when the last is answered; after a 503 it first waits the Retry-After "
             f"it was given), {c['duration_s']:g} s per row after {c['warmup_s']:g} s of warm-up, "
             f"{result['n_states']} query states ({c['states_split']}) in turn. Search rows: POST /search, "
             f"k={k}. Generate rows: POST /generate in LeanCopilot's JSON. Corpus: {h['n_premises']:,} "
             f"premises. Command: `{result['command']}`", "",
             "| mode | clients | answered | 503 | errors | req/s | p50 ms | p95 ms | p99 ms | server p50 ms "
             "| 503 p50 ms | mean batch |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    def cell(value) -> str:
        return "-" if value is None else str(value)

    for r in result["rows"]:
        lines.append(f"| {r['mode']} | {r['clients']} | {r['requests']} | {r.get('shed', 0)} | {r['errors']} | "
                     f"{r['throughput_rps']:.1f} | {cell(r['p50_ms'])} | {cell(r.get('p95_ms'))} | "
                     f"{cell(r['p99_ms'])} | {cell(r['server_p50_ms'])} | {cell(r.get('shed_p50_ms'))} | "
                     f"{cell(r['mean_batch'])} |")
    m = result["machine"]
    lines += ["", "Latencies are of answered requests, as the clients saw them; server p50 is the service's own "
                  "time from taking the request to answering it (queue + model), so the rest is HTTP and client "
                  "overhead. 503: requests refused at once because that model's queue was full (the bound is "
                  "`batching.max_queued` for searches, `generators[].max_queued` for a generator); 503 p50 is how "
                  "fast the refusal came. Mean batch: requests per model call on the server."]
    gens = {g["name"]: g for g in c["serve"].get("generators", [])}
    for name, g in gens.items():
        b = g.get("batching", g)  # nested since issue 40; files written before have the keys flat
        bound = f"at most {b['max_queued']} requests waiting" if b["max_queued"] else "no bound on waiting requests"
        lines += ["", f"Generator `{name}`: {g['model']}, {g['method']} {g.get('num_tactics', g.get('num_samples'))}, "
                      f"premises {generator_premises(g)}, "
                      f"batches of up to {b['max_batch_size']} states, {bound}."]
    lines += ["", f"Server startup {result['startup_s']} s (load {h['load_seconds']} s), peak server RSS "
                  f"{result['server_peak_rss_mib']} MiB; total wall time {result['wall_s']} s. Machine: "
                  f"{m.get('cpu', '')}, {m.get('cpu_count')} cores (shared with other jobs while measured). Git "
                  f"commit {result['git_commit']}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default=None)
    p.add_argument("overrides", nargs="*", help="key=value config overrides")
    add_allow_dirty(p)
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)  # before any work: a refused run costs nothing
    setup_logging()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would cost the clients' CPU
    cfg = load_config(ServeBenchmarkConfig, args.config, args.overrides)
    command = " ".join(["python benchmarks/serve.py", *(["--config", args.config] if args.config else []),
                        *args.overrides, *(["--allow-dirty"] if args.allow_dirty else [])])
    t_start = time.perf_counter()
    states = query_states(cfg)
    out = Path(cfg.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    server = Server(cfg, Path(tempfile.gettempdir()) / f"serve-bench-{cfg.tag}.log")
    try:
        t0 = time.perf_counter()
        health = server.wait_ready(cfg.startup_timeout_s)
        startup = round(time.perf_counter() - t0, 1)
        log.info("server up in %.1f s: %s over %d premises", startup, health["retrievers"], health["n_premises"])
        rows = [measure(server, cfg, mode, c, states) for mode in cfg.modes for c in cfg.concurrency]
        rss = server.peak_rss_mib()
    finally:
        server.stop()
    # "name": the results' tag, under the key the committed files have.
    result = {"benchmark": "serve", "name": cfg.tag, "command": command, "config": to_plain(cfg),
              "git_commit": commit, "machine": machine(), "n_states": len(states),
              "server": {k: health.get(k) for k in ("n_premises", "n_files", "retrievers", "rerank", "generators",
                                                    "load_seconds", "corpus", "index", "limits")},
              "startup_s": startup, "server_peak_rss_mib": rss,
              "wall_s": round(time.perf_counter() - t_start, 1), "rows": rows,
              "total_errors": sum(r["errors"] for r in rows), "total_shed": sum(r["shed"] for r in rows)}
    stem = out / f"serve-{cfg.tag}"
    write_and_print(stem, result, markdown)
    if result["total_errors"]:
        print(f"{result['total_errors']} requests failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
