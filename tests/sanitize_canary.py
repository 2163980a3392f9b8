"""Canaries for tests/sanitize.sh, run by it (not part of the test suite): each test
makes a sanitizer runtime report an error from inside a pytest worker, under the
script's own settings, so that the script can check that reports reach its log and
fail the run before it trusts a clean log. Each test ends its process."""

import ctypes

import tilelang  # noqa: F401  (loads the instrumented extension and the UBSan runtime)


def test_asan_report_reaches_the_log():
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    block = libc.malloc(8)
    dst = ctypes.create_string_buffer(16)
    # memmove is intercepted by the preloaded ASan runtime: 8 bytes read past the block.
    ctypes.memmove(dst, block, 16)
    raise AssertionError("ASan let a heap-buffer-overflow through")


class _SourceLocation(ctypes.Structure):
    _fields_ = [("file", ctypes.c_char_p), ("line", ctypes.c_uint32), ("column", ctypes.c_uint32)]


def test_ubsan_report_reaches_the_log():
    # What instrumented code calls when it reaches __builtin_unreachable(); always fatal.
    ubsan = ctypes.CDLL("libubsan.so.1")
    where = _SourceLocation(b"tests/sanitize_canary.py", 1, 1)
    ubsan.__ubsan_handle_builtin_unreachable(ctypes.byref(where))
    raise AssertionError("UBSan returned from an unreachable program point")
