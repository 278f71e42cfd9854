"""Ranks as threads of this process over the in-process transport, for the single-process tests
(ctypes releases the GIL during each C call, so the ranks run concurrently)."""

import threading

import sparsecoll
from sparsecoll import Communicator


def run_ranks(size, body, transport="local"):
    """body(comm) on `size` ranks (threads); returns their results in rank order."""
    uid = sparsecoll.get_unique_id()
    results, errors = [None] * size, []

    def rank_main(rank):
        try:
            with Communicator.from_unique_id(uid, rank, size, transport=transport,
                                             timeout_ms=20000) as comm:
                results[rank] = body(comm)
        except BaseException as error:  # reported on the main thread
            errors.append(error)

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
