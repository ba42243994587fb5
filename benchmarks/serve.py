"""Premise search service under load: throughput and latency with 1, 8 and 64 concurrent clients.

    python benchmarks/serve.py --config configs/serve/benchmark_tiny.yaml [key=value ...]

Starts `prover serve` in its own process on a free loopback port (the `serve:` section of the
config), waits for /health, then, for each mode (`cfr`, `cfr+car`: the same first stage with
rerank) and each concurrency, runs that many clients from this process, each sending its next
POST /search as soon as the last one is answered, for `duration_s` after `warmup_s` not
counted. Query states are the first states of `states_split` of the served corpus, in turn.
Reports requests/s, p50/p99 latency, errors (any non-200 or failed request; there must be
none) and the server's mean batch size. Writes benchmarks/results/serve-<name>.{json,md};
exits 1 if any request failed.
"""
from __future__ import annotations

import argparse
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from prover.config import load_config, to_plain  # noqa: E402
from prover.data.dataset import Dataset  # noqa: E402
from prover.data.jsonio import write_json  # noqa: E402
from prover.serve.loading import RERANK_SUFFIX  # noqa: E402
from prover.serve.settings import ServeBenchmarkConfig  # noqa: E402
from prover.utils.logs import setup_logging  # noqa: E402
from prover.utils.runinfo import git_commit, machine  # noqa: E402

log = logging.getLogger("benchmark.serve")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query_states(cfg) -> list[str]:
    """First states of the split's theorems that fit the service's state limit."""
    limit = cfg.serve.limits.max_state_chars
    states = []
    for t in Dataset(cfg.serve.corpus).theorems(cfg.states_split):
        if t.traced_tactics and 0 < len(t.traced_tactics[0].state_before) <= limit:
            states.append(t.traced_tactics[0].state_before)
        if len(states) == cfg.n_states:
            break
    if not states:
        raise ValueError(f"no query states in {cfg.serve.corpus} {cfg.states_split}")
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


async def drive(url: str, body_of, clients: int, seconds: float, timeout: float) -> dict:
    """`clients` closed-loop clients for `seconds`: latencies of answered requests (as the client
    saw them, and the server's own queue + model time), errors. aiohttp, not httpx: httpx's
    connection pool made 64 clients slower than 8 (a client-side limit, measured)."""
    latencies: list[float] = []
    server_ms: list[float] = []
    errors: list[str] = []
    stop_at = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(url, connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        async def one_client() -> None:
            while time.perf_counter() < stop_at:
                t0 = time.perf_counter()
                try:
                    async with session.post("/search", json=body_of()) as r:
                        if r.status == 200:
                            took = (await r.json())["took_ms"]
                            latencies.append(time.perf_counter() - t0)
                            server_ms.append(took)
                        else:
                            errors.append(f"{r.status}: {(await r.text())[:200]}")
                except (aiohttp.ClientError, asyncio.TimeoutError) as e:
                    errors.append(f"{type(e).__name__}: {e}")

        t0 = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        elapsed = time.perf_counter() - t0
    return {"latencies": latencies, "server_ms": server_ms, "errors": errors, "elapsed": elapsed}


def measure(server: Server, cfg, mode: str, clients: int, states: list[str]) -> dict:
    retriever = mode[: -len(RERANK_SUFFIX)] if mode.endswith(RERANK_SUFFIX) else mode
    rerank = mode.endswith(RERANK_SUFFIX)
    turn = itertools.count()

    def body() -> dict:
        return {"state": states[next(turn) % len(states)], "k": cfg.k, "retriever": retriever, "rerank": rerank}

    if cfg.warmup_s > 0:
        asyncio.run(drive(server.url, body, clients, cfg.warmup_s, cfg.request_timeout_s))
    before = httpx.get(server.url + "/health", timeout=30).json()["batching"]
    run = asyncio.run(drive(server.url, body, clients, cfg.duration_s, cfg.request_timeout_s))
    after = httpx.get(server.url + "/health", timeout=30).json()["batching"]
    lat = np.array(run["latencies"]) * 1000
    batches = after["batches"] - before["batches"]
    row = {"mode": mode, "clients": clients, "requests": len(lat), "errors": len(run["errors"]),
           "seconds": round(run["elapsed"], 2), "throughput_rps": round(len(lat) / run["elapsed"], 2),
           "p50_ms": round(float(np.percentile(lat, 50)), 1) if len(lat) else None,
           "p99_ms": round(float(np.percentile(lat, 99)), 1) if len(lat) else None,
           "mean_ms": round(float(lat.mean()), 1) if len(lat) else None,
           "max_ms": round(float(lat.max()), 1) if len(lat) else None,
           "server_p50_ms": round(float(np.percentile(run["server_ms"], 50)), 1) if len(lat) else None,
           "mean_batch": round((after["items"] - before["items"]) / batches, 2) if batches else None,
           "error_samples": run["errors"][:5]}
    log.info("%s x%d: %d requests, %.1f req/s, p50 %s ms, p99 %s ms, %d errors", mode, clients, row["requests"],
             row["throughput_rps"], row["p50_ms"], row["p99_ms"], row["errors"])
    return row


def markdown(result: dict) -> str:
    h = result["server"]
    lines = [f"# Premise search service under load: {result['name']}", "",
             f"`prover serve` in its own process on 127.0.0.1, clients in a second process (closed loop: each "
             f"sends its next request when the last is answered), {result['config']['duration_s']:g} s per row "
             f"after {result['config']['warmup_s']:g} s of warm-up, k={result['config']['k']}, "
             f"{result['n_states']} query states ({result['config']['states_split']}) in turn. Corpus: "
             f"{h['n_premises']:,} premises. Command: `{result['command']}`", "",
             "| mode | clients | requests | errors | req/s | p50 ms | p99 ms | server p50 ms | mean batch |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['mode']} | {r['clients']} | {r['requests']} | {r['errors']} | {r['throughput_rps']:.1f} | "
                     f"{r['p50_ms']} | {r['p99_ms']} | {r['server_p50_ms']} | {r['mean_batch']} |")
    m = result["machine"]
    lines += ["", "Latencies are as the clients saw them; server p50 is the service's own time from taking "
                  "the request to answering it (queue + model), so the rest is HTTP and client overhead. "
                  "Mean batch: states per model call on the server.",
              "", f"Server startup {result['startup_s']} s (load {h['load_seconds']} s), peak server RSS "
                  f"{result['server_peak_rss_mib']} MiB; total wall time {result['wall_s']} s. Machine: {m.get('cpu', '')}, "
                  f"{m.get('cpu_count')} cores (shared with other jobs while measured). Git commit "
                  f"{result['git_commit']}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=None)
    p.add_argument("overrides", nargs="*", help="key=value config overrides")
    args = p.parse_args(argv)
    setup_logging()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would cost the clients' CPU
    cfg = load_config(ServeBenchmarkConfig, args.config, args.overrides)
    command = " ".join(["python benchmarks/serve.py", *(["--config", args.config] if args.config else []),
                        *args.overrides])
    t_start = time.perf_counter()
    states = query_states(cfg)
    out = Path(cfg.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    server = Server(cfg, Path(tempfile.gettempdir()) / f"serve-bench-{cfg.name}.log")
    try:
        t0 = time.perf_counter()
        health = server.wait_ready(cfg.startup_timeout_s)
        startup = round(time.perf_counter() - t0, 1)
        log.info("server up in %.1f s: %s over %d premises", startup, health["retrievers"], health["n_premises"])
        rows = [measure(server, cfg, mode, c, states) for mode in cfg.modes for c in cfg.concurrency]
        rss = server.peak_rss_mib()
    finally:
        server.stop()
    result = {"benchmark": "serve", "name": cfg.name, "command": command, "config": to_plain(cfg),
              "git_commit": git_commit(), "machine": machine(), "n_states": len(states),
              "server": {k: health[k] for k in ("n_premises", "n_files", "retrievers", "rerank", "load_seconds",
                                                "corpus", "index", "limits")},
              "startup_s": startup, "server_peak_rss_mib": rss,
              "wall_s": round(time.perf_counter() - t_start, 1), "rows": rows,
              "total_errors": sum(r["errors"] for r in rows)}
    stem = out / f"serve-{cfg.name}"
    write_json(stem.with_suffix(".json"), result)
    stem.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    if result["total_errors"]:
        print(f"{result['total_errors']} requests failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
