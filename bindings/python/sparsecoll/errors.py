"""Result codes of the C ABI and the exception that carries them.

Every failed call raises SparsecollError with the scclResult_t code, its name
(scclGetErrorString) and the library's message (scclGetLastError) at the moment of the failure,
so the message is the one the C caller would have seen.
"""

import enum

from ._library import lib


class Result(enum.IntEnum):
    """scclResult_t."""
    SUCCESS = 0
    UNHANDLED_CUDA_ERROR = 1
    SYSTEM_ERROR = 2
    INTERNAL_ERROR = 3
    INVALID_ARGUMENT = 4
    INVALID_USAGE = 5
    REMOTE_ERROR = 6
    IN_PROGRESS = 7
    TIMEOUT = 8


class SparsecollError(RuntimeError):
    """A sparsecoll call failed: .code (Result), .name ("invalid argument"), .message."""

    def __init__(self, code, message):
        self.code = Result(code) if code in Result._value2member_map_ else code
        self.name = error_string(code)
        self.message = message
        super().__init__("%s (%d): %s" % (self.name, int(code), message))


def error_string(code):
    """scclGetErrorString: the static name of a result code."""
    return lib.scclGetErrorString(int(code)).decode()


def last_error(comm_handle=None):
    """scclGetLastError: the message of the last failed call on comm (or on this thread)."""
    return lib.scclGetLastError(comm_handle).decode(errors="replace")


def check(result, comm_handle=None):
    """Raises SparsecollError for a result other than scclSuccess."""
    if result != Result.SUCCESS:
        # A live communicator keeps its own message; calls that fail before one exists (or with
        # a handle the library rejected) leave it on the calling thread.
        message = last_error(comm_handle) if comm_handle else ""
        raise SparsecollError(result, message or last_error(None))
