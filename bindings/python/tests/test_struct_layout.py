"""The ctypes mirrors must match the C header: compile a program that prints sizeof and offsetof
of every mirrored field, and compare. A field appended to the header but not to the mirror fails
here (the size differs) instead of silently shifting the initializer."""

import ctypes
import os
import shutil
import subprocess

import pytest

from sparsecoll import _ctypes_types as T

HEADER_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "include"))
STRUCTS = {"scclConfig_t": T.Config, "scclSparseConfig_t": T.SparseConfig,
           "scclSparseStats_t": T.SparseStats, "scclUniqueId": T.UniqueId}


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_mirrors_match_the_header(tmp_path):
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include <sparsecoll/sparsecoll.h>',
             'int main(void) {']
    expected = []
    for c_name, mirror in STRUCTS.items():
        lines.append('printf("%%zu\\n", sizeof(%s));' % c_name)
        expected.append(ctypes.sizeof(mirror))
        for field, _ in mirror._fields_:
            lines.append('printf("%%zu\\n", offsetof(%s, %s));' % (c_name, field))
            expected.append(getattr(mirror, field).offset)
    lines += ['printf("%d\\n", SCCL_VERSION_CODE);', 'return 0; }']
    expected.append(T.HEADER_VERSION_CODE)
    source, program = tmp_path / "layout.c", tmp_path / "layout"
    source.write_text("\n".join(lines))
    subprocess.run(["cc", "-std=c99", "-I", HEADER_DIR, str(source), "-o", str(program)],
                   check=True)
    printed = [int(v) for v in subprocess.run([str(program)], check=True, capture_output=True,
                                              text=True).stdout.split()]
    assert printed == expected


def test_initializer_matches_the_header_defaults():
    config = T.sparse_config_initializer()
    assert (config.algorithm, config.density, config.errorFeedback, config.numBlocks,
            config.correctionBinsPerOctave, config.sketchFeedback) == (
                b"exdyna", 0.01, 1, 1024, 256, b"unselected")
    assert (config.densityWarmupStart, config.densityWarmupCalls, config.densityWarmupForm) == (
        0.0, 0, b"exponential")
