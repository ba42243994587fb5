"""Ray, started in one place: proof search, the service and multi-worker training start or join
a cluster here, so what "no address" means and which options a local cluster gets is said once."""
from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

# Ray starts its workers at nice 15, below the driver. In a cluster of ours the workers are the
# job (search actors, training workers): at nice 15 beside other jobs' nice-0 processes each
# actor got about 3% of a core, and one generator call of `prover demo` took 75 s instead of 1
# (issue 41). A local cluster's workers run as the command that started them.
WORKER_NICENESS = 0
LOCAL_START_TRIES = 2


class RayWaitTimeout(RuntimeError):
    """Ray did not start, or a wait on it passed its time limit: one line saying what, how long,
    and the setting that sets the limit (the CLI prints it as `error: ...`)."""


def resolve_address(address: str | None) -> str:
    """null: $RAY_ADDRESS if set, else "local" (a new local cluster: never someone else's)."""
    return address or os.environ.get("RAY_ADDRESS") or "local"


def start_ray(address: str | None = None, num_cpus: int | None = None, object_store_mb: int | None = None,
              temp_dir: str | None = None) -> bool:
    """Join the cluster at `address` (null: $RAY_ADDRESS), else start a local one with these
    options. Returns whether this call initialized Ray (and so its caller should shut it down);
    an already initialized Ray is used as it is."""
    import ray
    if ray.is_initialized():
        return False
    address = resolve_address(address)
    kwargs: dict = {"logging_level": logging.WARNING}
    if address == "local":
        kwargs.update(include_dashboard=False)
        if num_cpus is not None:
            kwargs["num_cpus"] = num_cpus
        if object_store_mb is not None:
            kwargs["object_store_memory"] = int(object_store_mb) * 2**20
        if temp_dir:
            kwargs["_temp_dir"] = temp_dir
        kwargs["_system_config"] = {"worker_niceness": WORKER_NICENESS}
        if not logging.getLogger().isEnabledFor(logging.DEBUG):
            # Ray warns on every start that token auth is on by default; for a cluster we start
            # on this machine and stop at the end of the run, that is noise (-v shows it).
            logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    log.info("ray: %s", "starting a local cluster" if address == "local" else f"joining {address}")
    # Ray gives its raylet a fixed 30 s to register; on an overloaded machine a local start can
    # miss that once and succeed on a second try. A cluster we join is tried once.
    tries = LOCAL_START_TRIES if address == "local" else 1
    for attempt in range(1, tries + 1):
        try:
            ray.init(address=address, **kwargs)
            return True
        except (ValueError, TypeError):  # a bad option: ours, raised as it is
            raise
        except Exception as e:  # Ray's own start-up limits (a node that times out starting): one line
            cause = " ".join(str(e).split()) or type(e).__name__
            if attempt < tries:
                log.warning("ray: the local cluster did not start (%s); trying once more", cause[:200])
                ray.shutdown()
                continue
            where = "the local Ray cluster did not start" if address == "local" else f"could not join Ray at {address}"
            raise RayWaitTimeout(f"ray: {where}: {cause[:300]}") from None
    return True



def wait_ready(refs: list, timeout_s: float, what: str, setting: str, every_s: float = 30.0,
               hint: str = "") -> list:
    """`ray.get(refs)`, with a progress line every `every_s` seconds while some are pending and a
    one-line RayWaitTimeout after `timeout_s` (`setting` names the key that sets the limit):
    an actor Ray cannot place, or a model that never finishes loading, ends here, not in a
    silent wait."""
    import time

    import ray
    t0 = time.monotonic()
    pending = list(refs)
    while pending:
        left = timeout_s - (time.monotonic() - t0)
        if left <= 0:
            free = ray.available_resources()
            raise RayWaitTimeout(
                f"ray: {len(pending)} of {len(refs)} {what} not ready after {timeout_s:g} s "
                f"(Ray has {free.get('CPU', 0):g} CPUs and {free.get('GPU', 0):g} GPUs free){hint}; "
                f"raise {setting} if they are only slow")
        _, pending = ray.wait(pending, num_returns=len(pending), timeout=min(every_s, left))
        if pending:
            log.warning("ray: waiting for %d of %d %s (%.0f s; limit %g s, %s)", len(pending), len(refs),
                        what, time.monotonic() - t0, timeout_s, setting)
    return ray.get(list(refs))  # raises an actor's own error (a model that does not load)
