"""The DDP hook's traffic counters (sparsecoll.torch.HookState.traffic), with the per-step
compression statistics at DEBUG on the "sparsecoll.torch" logger (docs/python.md)."""

import logging

_log = logging.getLogger("sparsecoll.torch")


class Traffic:
    """Bytes and selected entries over the buckets of one step, and totals over steps."""

    def __init__(self):
        self.steps = 0
        self.total_bytes_sent = 0
        self.total_elements = 0
        self.total_selected = 0
        self.last_step = {}
        self._step = {"bytes_sent": 0, "elements": 0, "selected": 0}

    def add(self, stats, elements, step_ends):
        self._step["bytes_sent"] += stats.bytes_sent
        self._step["elements"] += elements
        self._step["selected"] += stats.k_global
        if step_ends:
            step = self._step
            step["density"] = step["selected"] / max(1, step["elements"])
            self.last_step = step
            self.steps += 1
            self.total_bytes_sent += step["bytes_sent"]
            self.total_elements += step["elements"]
            self.total_selected += step["selected"]
            self._step = {"bytes_sent": 0, "elements": 0, "selected": 0}
            if _log.isEnabledFor(logging.DEBUG):
                _log.debug("step %d: %d bytes sent, %d of %d entries (density %.4g)",
                           self.steps, step["bytes_sent"], step["selected"], step["elements"],
                           step["density"])

    def state_dict(self):
        return {"steps": self.steps, "total_bytes_sent": self.total_bytes_sent,
                "total_elements": self.total_elements, "total_selected": self.total_selected,
                "last_step": dict(self.last_step), "step": dict(self._step)}

    def load_state_dict(self, state):
        self.steps = int(state["steps"])
        self.total_bytes_sent = int(state["total_bytes_sent"])
        self.total_elements = int(state["total_elements"])
        self.total_selected = int(state["total_selected"])
        self.last_step = dict(state["last_step"])
        self._step = dict(state["step"])

    def summary(self):
        """Per-step means since creation: bytes sent by this rank, elements, actual density."""
        steps = max(1, self.steps)
        return {"steps": self.steps, "bytes_sent_per_step": self.total_bytes_sent / steps,
                "elements_per_step": self.total_elements / steps,
                "density": self.total_selected / max(1, self.total_elements)}
