"""Under torchrun: keys of their own in the agent's store for each start of the workers (restarts included).

torch 2.13's elastic agent keeps one TCPStore for the whole run (``TORCHELASTIC_USE_AGENT_STORE``) and the
workers of every attempt use it without a prefix, so after a restart a rank can read the address a rank of
the failed attempt published and wait for a dead peer (gloo: "Connection refused", or the timeout). The
attempt's number cannot name the keys: ``TORCHELASTIC_RESTART_COUNT`` is each node's own count (a node whose
workers did not fail restarts them for the new rendezvous round without counting), and workers are not told
the round. So the ranks agree on a number through the store, in a handshake stale keys cannot fool:

- rank 0 takes a fresh number, ``generation = store.add(GENERATION, 1)``;
- every other rank appends a random nonce to ``HELLOS`` and waits for the key ``ANSWER/<nonce>``;
- rank 0 answers every nonce in ``HELLOS`` it has not answered (those of dead ranks of failed attempts too:
  nobody reads those answers) until ``world - 1`` ranks have acknowledged *its* number
  (``ACKS/<generation>``, a counter no earlier attempt can have touched).
"""

from __future__ import annotations

import datetime
import os
import time
import uuid
from typing import Any

from ._interop import DistBackendError

GENERATION, HELLOS, ANSWER, ACKS = "/ember/generation", "/ember/hellos", "/ember/answer/", "/ember/acks/"
_POLL_S = 0.005


def elastic_attempt_store(tdist: Any, timeout: datetime.timedelta | None) -> dict[str, Any]:
    """Under torchrun, ``init_process_group`` arguments with this attempt's own keys (``{}`` elsewhere)."""
    env = os.environ
    if env.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return {}
    try:
        addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    except (KeyError, ValueError):
        return {}
    limit = timeout if timeout is not None else datetime.timedelta(minutes=30)
    tcp = tdist.TCPStore(addr, port, world_size=world, is_master=False, timeout=limit)
    try:
        generation = _agree(tcp, rank, world, limit.total_seconds())
    except RuntimeError as e:  # the store's own timeout or a lost connection
        raise DistBackendError(f"init_process_group (rank {rank} of {world}, torchrun): {e}") from e
    return {"store": tdist.PrefixStore(f"/ember/attempt_{generation}", tcp), "rank": rank, "world_size": world}


def _agree(tcp: Any, rank: int, world: int, seconds: float) -> int:
    """The number every rank of this start of the workers uses (the handshake in the module's docstring)."""
    if rank != 0:
        nonce = uuid.uuid4().hex
        tcp.append(HELLOS, nonce + ",")
        tcp.wait([ANSWER + nonce])  # within the store's timeout
        generation = int(tcp.get(ANSWER + nonce))
        tcp.add(f"{ACKS}{generation}", 1)
        return generation
    generation = int(tcp.add(GENERATION, 1))
    answered: set[str] = set()
    deadline = time.monotonic() + seconds
    while int(tcp.add(f"{ACKS}{generation}", 0)) < world - 1:
        if time.monotonic() > deadline:
            acked = int(tcp.add(f"{ACKS}{generation}", 0))
            raise DistBackendError(
                f"init_process_group (rank 0 of {world}, torchrun): only {acked} of the other {world - 1} ranks "
                f"joined within {seconds:g} s"
            )
        hellos = tcp.get(HELLOS).decode().split(",") if tcp.check([HELLOS]) else []
        for nonce in hellos:
            if nonce and nonce not in answered:
                tcp.set(ANSWER + nonce, str(generation))
                answered.add(nonce)
        time.sleep(_POLL_S)
    return generation
