"""ctypes mirrors of the structs of include/sparsecoll/ (sparsecoll.h, event.h), field for field.

The config structs are append-only and carry their own size and header version, so a package
that mirrors an older header keeps working with a newer library (the library reads only the
fields the caller knows). tests/test_struct_layout.py compiles the header and compares sizes
and offsets with these mirrors, so a field added to the header without being added here fails.
"""

import ctypes

# The header version these mirrors were written from (SCCL_VERSION_CODE).
HEADER_VERSION_CODE = 100
UNIQUE_ID_BYTES = 128
CONFIG_MAGIC = 0x5CC1C0F9
SPARSE_CONFIG_MAGIC = 0x5CC15A45
CONFIG_UNDEF_INT = -(2**31)

_u32 = ctypes.c_uint
_u64 = ctypes.c_uint64
_int = ctypes.c_int
_dbl = ctypes.c_double
_str = ctypes.c_char_p


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_ubyte * UNIQUE_ID_BYTES)]  # bytes, may hold NULs


class Config(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("magic", _u32),
        ("version", _u32),
        ("transport", _str),
        ("timeoutMs", _int),
        ("commName", _str),
    ]


def config_initializer():
    """SCCL_CONFIG_INITIALIZER."""
    return Config(ctypes.sizeof(Config), CONFIG_MAGIC, HEADER_VERSION_CODE, None,
                  CONFIG_UNDEF_INT, None)


class SparseConfig(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("magic", _u32),
        ("version", _u32),
        ("algorithm", _str),
        ("estimator", _str),
        ("searchSpace", _str),
        ("reduction", _str),
        ("density", _dbl),
        ("errorFeedback", _int),
        ("nonFinite", _int),
        ("maxDensitySlack", _dbl),
        ("threshold", _dbl),
        ("scalingBand", _dbl),
        ("scalingStep", _dbl),
        ("numBlocks", _int),
        ("blockAlign", _int),
        ("rebalanceAlpha", _dbl),
        ("rebalanceMoveBlocks", _int),
        ("minBlocksFactor", _dbl),
        ("scalingRule", _str),
        ("densityCorrection", _str),
        ("correctionBinsPerOctave", _int),
        ("correctionOctaves", _int),
        ("sidcoFirstRatio", _dbl),
        ("sidcoStages", _int),
        ("sidcoMaxStages", _int),
        ("sidcoAdaptInterval", _int),
        ("sidcoAdaptTolerance", _dbl),
        ("sidcoFeedback", _dbl),
        ("dgcSampleRatio", _dbl),
        ("dgcSeed", _int),
        ("sketchBlockSize", _int),
        ("sketchBlockSelection", _str),
        ("sketchRows", _int),
        ("sketchLambda", _dbl),
        ("sketchSeed", _int),
        ("sketchFeedback", _str),
        ("streamOrdered", _int),
        ("densityWarmupStart", _dbl),
        ("densityWarmupCalls", _int),
        ("densityWarmupForm", _str),
        ("hierarchy", _str),
    ]


def sparse_config_initializer():
    """SCCL_SPARSE_CONFIG_INITIALIZER (the reference defaults)."""
    return SparseConfig(
        ctypes.sizeof(SparseConfig), SPARSE_CONFIG_MAGIC, HEADER_VERSION_CODE, b"exdyna", None,
        None, None, 0.01, 1, 0, -1.0, -1.0, 1.1, 0.005, 1024, 32, 1.05, 1, 0.25, b"proportional",
        None, 256, 1, 0.25, 0, 0, 5, 0.2, 0.25, 0.01, 0, 32, b"topk", 3, 0.5, 0, b"unselected",
        0, 0.0, 0, b"exponential", None)


class SparseStats(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("iteration", _u64),
        ("kTarget", _u64),
        ("kLocal", _u64),
        ("kGlobal", _u64),
        ("kMax", _u64),
        ("density", _dbl),
        ("densityError", _dbl),
        ("gatherInflation", _dbl),
        ("bytesSent", _u64),
        ("bytesReceived", _u64),
        ("threshold", _dbl),
        ("residualNorm", _dbl),
        ("nonFinite", _u64),
        ("timeSelectUs", _dbl),
        ("timeCommUs", _dbl),
        ("timeOtherUs", _dbl),
        ("totalBytesSent", _u64),
        ("totalBytesReceived", _u64),
        ("totalTimeSelectUs", _dbl),
        ("totalTimeCommUs", _dbl),
        ("totalTimeOtherUs", _dbl),
        ("meanAbsDensityError", _dbl),
        ("predictedTimeUs", _dbl),
        ("autoSwitches", _u64),
        ("autoSettled", _u64),
        ("bytesSentInsideNode", _u64),
        ("bytesReceivedInsideNode", _u64),
        ("totalBytesSentInsideNode", _u64),
        ("totalBytesReceivedInsideNode", _u64),
    ]
