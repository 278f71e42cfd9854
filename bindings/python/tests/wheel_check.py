"""Run by test_wheel_install.py with the interpreter of an install of the wheel, from a scratch
directory and with no SPARSECOLL_* or checkout on the path: the package and its library must come
from the install, numpy must not be imported, and two ranks (threads over the in-process
transport) must form a communicator. Prints the package file and the library path."""

import sys
import threading

import sparsecoll

if "numpy" in sys.modules:
    sys.exit("import sparsecoll imported numpy, which is only an optional dependency")
uid = sparsecoll.get_unique_id()
seen, errors = [], []


def rank_main(rank):
    try:
        with sparsecoll.Communicator.from_unique_id(uid, rank, 2, transport="local",
                                                    timeout_ms=20000) as comm:
            comm.barrier()
            seen.append((comm.rank, comm.size, comm.transport))
    except BaseException as error:  # reported below, on the main thread
        errors.append(error)


threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors or sorted(seen) != [(0, 2, "local"), (1, 2, "local")]:
    sys.exit("two local ranks: %r %r" % (seen, errors))
print(sparsecoll.__file__)
print(sparsecoll._library.path)
print("%d.%d.%d" % sparsecoll.library_version())
