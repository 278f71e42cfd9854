"""The worker thread behind sparsecoll.torch.async_hook and GradientSynchronizer(asynchronous=True)."""

import queue
import threading

import torch as _torch


class BucketWorker:
    """One thread that runs a HookState's bucket all-reduces in submission order and completes
    their futures. ctypes releases the GIL during each library call, so the exchange runs while
    the submitting thread computes. CUDA buckets run on the stream that was current when they
    were submitted, and their futures follow torch's CUDA-future semantics (a wait() orders the
    caller's current stream after the work)."""

    def __init__(self):
        self._queue = queue.Queue()
        self._pending = 0
        self._idle = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="sparsecoll-hook", daemon=True)
        self._thread.start()

    def submit(self, work, tensor):
        """work() runs on the worker; returns a Future of its result."""
        stream = None
        if tensor.is_cuda:
            stream = _torch.cuda.current_stream(tensor.device)
            future = _torch.futures.Future(devices=[tensor.device])
        else:
            future = _torch.futures.Future()
        with self._idle:
            self._pending += 1
        self._queue.put((work, future, stream))
        return future

    def _run(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            work, future, stream = item
            try:
                if stream is not None:
                    with _torch.cuda.stream(stream):
                        future.set_result(work())
                else:
                    future.set_result(work())
            except BaseException as error:  # reaches the caller through the future
                future.set_exception(error)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    def drain(self):
        """Waits until every submitted bucket is done (whatever its outcome)."""
        with self._idle:
            self._idle.wait_for(lambda: self._pending == 0)

    def close(self):
        self.drain()
        self._queue.put(None)
        self._thread.join()
